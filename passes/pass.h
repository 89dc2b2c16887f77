#ifndef GRAPHOPT_PASSES_PASS_H_
#define GRAPHOPT_PASSES_PASS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "util/stop_token.h"

namespace graphopt {

// Typed analysis keys: what a pass needs valid before it runs and what it makes valid. The
// analyses live on the IR itself (Value::type); the pipeline tracks whether they are current.
enum class Analysis : uint8_t {
  kTypes = 0,   // Value::type.dtype of every value
  kShapes = 1,  // Value::type.shape of every value
};
inline constexpr int kNumAnalyses = 2;
absl::string_view AnalysisName(Analysis analysis);

// A small set of analyses.
class AnalysisSet {
 public:
  constexpr AnalysisSet() = default;
  constexpr AnalysisSet(std::initializer_list<Analysis> list) {
    for (Analysis a : list) bits_ |= Bit(a);
  }
  static constexpr AnalysisSet All() { return AnalysisSet(0xff); }
  constexpr bool contains(Analysis a) const { return (bits_ & Bit(a)) != 0; }
  void insert(Analysis a) { bits_ |= Bit(a); }
  void erase(Analysis a) { bits_ &= ~Bit(a); }
  AnalysisSet Intersect(AnalysisSet o) const { return AnalysisSet(bits_ & o.bits_); }
  void InsertAll(AnalysisSet o) { bits_ |= o.bits_; }
  std::vector<Analysis> ToVector() const;

 private:
  constexpr explicit AnalysisSet(uint8_t bits) : bits_(bits) {}
  static constexpr uint8_t Bit(Analysis a) { return uint8_t{1} << static_cast<int>(a); }
  uint8_t bits_ = 0;
};

// What a running pass sees besides the graph.
struct PassContext {
  const OpRegistry* ops = nullptr;
  // Messages for the pass report ("removed 3 Identity nodes").
  std::vector<std::string>* messages = nullptr;
  // The request's cancellation and deadline (null: never stops). A pass that can run long
  // polls it (CheckStop) every few thousand nodes, and per node where a node's work is large
  // (constant_fold), and returns its status; the pipeline names the pass.
  const StopToken* stop = nullptr;
  // The name of the running pass, for CheckStop's message.
  std::string pass_name;

  void Note(std::string message) const {
    if (messages != nullptr) messages->push_back(std::move(message));
  }
  // OK while the pass may go on; else the token's CANCELLED / DEADLINE_EXCEEDED naming the
  // pass and `where` (a node, or "" for none).
  absl::Status CheckStop(absl::string_view where = "") const;
  // CheckStop every kStopCheckInterval calls with i = 0, 1, 2, ... (a sweep's index): the
  // polling of loops over nodes, one clock read per few thousand nodes.
  absl::Status CheckStopEvery(int64_t i, absl::string_view where = "") const {
    return stop == nullptr || i % kStopCheckInterval != 0 ? absl::OkStatus() : CheckStop(where);
  }
  static constexpr int64_t kStopCheckInterval = 4096;
};

// One graph transformation or analysis. Passes are created per pipeline run, so they may keep
// state across one Run call; Run must be deterministic.
class Pass {
 public:
  virtual ~Pass() = default;
  // Returns whether the graph changed. A pattern that does not match is "unchanged", never an
  // error. Errors are for graphs the pass cannot handle (INVALID_ARGUMENT naming the node).
  virtual absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) = 0;
};

// Pass options as given in a request: key -> value text.
using PassOptions = std::map<std::string, std::string>;

// Registry entry describing a pass.
struct PassInfo {
  std::string name;
  std::string description;
  AnalysisSet requires_analyses;
  AnalysisSet provides;
  // Analyses still valid after the pass changed the graph (those it provides count as valid).
  AnalysisSet preserves;
  // Accepted option keys with their meaning.
  std::map<std::string, std::string> options;
  // Lowest optimization level whose pipeline includes the pass (0: none). This alone decides the
  // levels: -O<n> runs every registered pass with 1 <= min_opt_level <= n, in registration order
  // (PipelineForLevel).
  int min_opt_level = 0;
  // A simplifying pass whose rewrites can enable each other's: from kFixpointMinOptLevel
  // (pipeline.h) up, the levels repeat these passes, with the passes between them in the level,
  // until nothing changes (PassSpec::repeat). Such a pass must stay correct when run again on
  // its own output, and report `changed` only when it changed the graph.
  bool repeat_to_fixpoint = false;
  // Creates a pass configured by `options` (already checked to use only known keys);
  // INVALID_ARGUMENT for a malformed value.
  std::function<absl::StatusOr<std::unique_ptr<Pass>>(const PassOptions& options)> factory;

  // An option that is a budget (a size, count or time the request may raise): the pipeline
  // holds it under the server's ceiling for "<pass>.<option>" (PipelineOptions::option_ceilings).
  struct BudgetOption {
    // What the pass uses when the request does not set the option.
    int64_t default_value = 0;
    // The amount a value asks for (for a list such as dim_bounds, its largest number);
    // INVALID_ARGUMENT when malformed. Null: the value is one integer (absl::SimpleAtoi).
    std::function<absl::StatusOr<int64_t>(absl::string_view value)> amount;
  };
  // Keys of `options` that are budgets. Every option that bounds the work or memory a pass may
  // spend must be listed here, with a default ceiling in DefaultOptionCeilings (pipeline.h).
  std::map<std::string, BudgetOption> budget_options;
};

// A PassInfo::factory for a pass that takes no options.
template <typename P>
std::function<absl::StatusOr<std::unique_ptr<Pass>>(const PassOptions&)> OptionlessFactory() {
  return [](const PassOptions&) -> absl::StatusOr<std::unique_ptr<Pass>> {
    return std::unique_ptr<Pass>(std::make_unique<P>());
  };
}

// name -> PassInfo. Built explicitly by main (RegisterBuiltinPasses); no static registration.
class PassRegistry {
 public:
  // INVALID_ARGUMENT for an entry without name or factory; ALREADY_EXISTS for a duplicate name.
  absl::Status Register(PassInfo info);
  const PassInfo* Find(absl::string_view name) const;
  // Sorted by name.
  std::vector<const PassInfo*> List() const;
  // In registration order, which is the order of every optimization level's pipeline
  // (PipelineForLevel).
  std::vector<const PassInfo*> InRegistrationOrder() const;
  // The pass providing `analysis` (the one registered first), or null.
  const PassInfo* Provider(Analysis analysis) const;

 private:
  std::map<std::string, PassInfo, std::less<>> passes_;
  // Names, not pointers, so that a copied registry stays self-contained.
  std::vector<std::string> order_;
  std::vector<std::string> provider_[kNumAnalyses];
};

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_PASS_H_
