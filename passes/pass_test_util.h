#ifndef GRAPHOPT_PASSES_PASS_TEST_UTIL_H_
#define GRAPHOPT_PASSES_PASS_TEST_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "proto/graph.pb.h"

namespace graphopt {
namespace testing {

// Registries with the builtin ops and passes, and helpers to run passes over text-format graphs.
class PassTestEnv {
 public:
  PassTestEnv();

  const OpRegistry& ops() const { return ops_; }
  const PassRegistry& passes() const { return passes_; }

  // Registers a test op besides the builtins.
  absl::Status AddOp(OpDef def) { return ops_.Register(std::move(def)); }

  // Parses a text-format graphopt.v1.Graph into the IR.
  absl::StatusOr<Graph> Parse(const std::string& text) const;

  // Runs the named passes (with verify_each_pass) and returns the resulting graph in wire form.
  absl::StatusOr<v1::Graph> Run(const std::string& text, const std::vector<std::string>& passes,
                                PipelineResult* result = nullptr) const;
  // The same with pass options.
  absl::StatusOr<v1::Graph> RunSpecs(const std::string& text, const std::vector<PassSpec>& passes,
                                PipelineResult* result = nullptr) const;

 private:
  OpRegistry ops_;
  PassRegistry passes_;
};

// Registers test ops of domain my.ops: Print(x) -> y has side effects, Accumulate(acc, x) -> y
// writes its input 0, Sample(x) -> y is nondeterministic.
void AddEffectOps(PassTestEnv& env);

// Pieces of text-format graphs (graphopt.v1.Graph) for tests:
// a graph input of static `dims`;
std::string InputText(const std::string& name, const std::vector<int>& dims,
                      const std::string& dtype = "DT_FLOAT32");
// a graph output;
std::string OutputText(const std::string& name);
// a node "<out>_node" running `op` on `in` into `out`, with `extra` text inside it (attributes);
std::string NodeText(const std::string& op, const std::vector<std::string>& in,
                     const std::string& out, const std::string& extra = "");
// an ints attribute, for NodeText's `extra`.
std::string IntsText(const std::string& name, const std::vector<int>& values);

// Op types of the graph's nodes in order.
std::vector<std::string> OpTypes(const v1::Graph& graph);
// The ValueInfo of `name` among inputs, outputs and value_info; null when absent.
const v1::ValueInfo* FindValueInfo(const v1::Graph& graph, const std::string& name);
// "float32[batch,3]" for a value of the graph, "<none>" when it has no type.
std::string TypeOf(const v1::Graph& graph, const std::string& name);

}  // namespace testing
}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_PASS_TEST_UTIL_H_
