#ifndef GRAPHOPT_PASSES_REWRITE_DRIVER_H_
#define GRAPHOPT_PASSES_REWRITE_DRIVER_H_

// The rewrite-pattern driver, in the spirit of ONNX Runtime's RewriteRule and MLIR's
// canonicalization patterns. A rewriting pass is a list of patterns; each declares the op kinds
// its root may run, an optional cheap match condition and a rewrite. The driver owns what every
// such pass needs:
// - the sweep: only nodes of the patterns' kinds are visited (found through the graph's dense op
//   kinds: a graph without them is not swept at all), in topological or node-id order, with the
//   cache prefetching;
// - the hidden-access check (effects.h): a root reading or producing a value some node writes or
//   a subgraph reads by name is never rewritten;
// - removal of dead definitions: what defined the root's inputs goes when the rewrite left it
//   unread;
// - the fixpoint: a root is retried after its rewrite, and what a rewrite may have enabled
//   (the producers of the root's inputs, nodes it created) is visited again in a further sweep,
//   up to a bound;
// - the per-pattern counts for the pass report.
// Patterns are local: a pattern may read anything, but changes only the root and what it
// replaces, and leaves the graph untouched unless it returns Applied.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "passes/effects.h"
#include "passes/pass.h"

namespace graphopt {

// What a pattern sees: the graph, the registry, the hidden accesses as of the start of the run,
// and the opset the graph imports for the default domain (0: none, the newest semantics).
struct RewriteContext {
  Graph& graph;
  const OpRegistry& ops;
  const HiddenAccess& hidden;
  int64_t opset = 0;
};

// What a rewrite did.
class RewriteResult {
 public:
  enum class Kind { kNoMatch, kApplied, kRefused };
  // The pattern does not apply; the graph is untouched.
  static RewriteResult NoMatch() { return RewriteResult(Kind::kNoMatch, nullptr); }
  // The graph was rewritten.
  static RewriteResult Applied() { return RewriteResult(Kind::kApplied, nullptr); }
  // The pattern matched but the rewrite is not allowed here (`why`, a static string, is counted
  // in the report: "connects graph inputs and outputs"); the graph is untouched.
  static RewriteResult Refused(const char* why) { return RewriteResult(Kind::kRefused, why); }

  Kind kind() const { return kind_; }
  const char* why() const { return why_; }

 private:
  RewriteResult(Kind kind, const char* why) : kind_(kind), why_(why) {}
  Kind kind_;
  const char* why_;
};

struct RewritePattern {
  // Its name in the report ("transpose_pair").
  const char* name;
  // The default-domain op types its root may run.
  std::vector<const char*> ops;
  // A cheap structural test of the root (its producer's kind, an attribute's presence); null:
  // always. Only when it holds is the hidden-access check made and the rewrite tried.
  std::function<bool(const RewriteContext&, NodeId)> match;
  std::function<absl::StatusOr<RewriteResult>(RewriteContext&, NodeId)> rewrite;
};

struct RewriteDriverOptions {
  enum class Order {
    // A topological order: a chain is rewritten from its start, each root seeing its inputs
    // already rewritten.
    kTopological,
    // Node-id order over the candidates alone, for patterns that do not depend on their inputs
    // having been visited (saves the topological sort).
    kNodeId,
  };
  Order order = Order::kTopological;
  // Sweeps at most (the first over every candidate, later ones over what rewrites touched).
  int max_sweeps = 4;
  // Rewrites of one root per visit at most.
  int max_rewrites_per_root = 4;
};

struct RewriteStats {
  // Per pattern name: how often it rewrote; per reason: how often a match was refused (a root
  // touching a hidden access counts as "hidden accesses").
  absl::btree_map<std::string, int64_t> applied;
  absl::btree_map<std::string, int64_t> refused;
  int64_t total_applied = 0;
  int sweeps = 0;
  // False when the last allowed sweep still rewrote.
  bool fixpoint = true;

  // The report line: "<what> 3: neutral_operand 2, transpose_pair 1; refused 1: connects graph
  // inputs and outputs 1" (the refusals and a missed fixpoint only when there are any).
  std::string Summary(absl::string_view what) const;
};

// Runs `patterns` over `graph` to a fixpoint (or the bound). Patterns of one kind are tried in
// list order; the first that applies wins. Fails only when a rewrite fails or the request is
// stopped (context.stop).
absl::StatusOr<RewriteStats> ApplyPatterns(Graph& graph, const PassContext& context,
                                           absl::Span<const RewritePattern> patterns,
                                           const RewriteDriverOptions& options = {});

// A pattern pass's whole Run: ApplyPatterns, then the report line stats.Summary(`what`) as a
// note; true when a pattern rewrote.
absl::StatusOr<bool> RunPatterns(Graph& graph, const PassContext& context,
                                 absl::Span<const RewritePattern> patterns, absl::string_view what,
                                 const RewriteDriverOptions& options = {});

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_REWRITE_DRIVER_H_
