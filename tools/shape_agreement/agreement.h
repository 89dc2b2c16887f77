#ifndef GRAPHOPT_TOOLS_SHAPE_AGREEMENT_AGREEMENT_H_
#define GRAPHOPT_TOOLS_SHAPE_AGREEMENT_AGREEMENT_H_

// Compares graphopt's type and shape inference with ONNX's own (onnx::shape_inference) on one
// ONNX model, value by value.
//
// Both sides start from the model's graph inputs and initializers only: value_info is cleared
// and the graph outputs' declared types are dropped, so every node output's type is inferred.
// graphopt runs InferNodeTypes and InferNodeShapes node by node in topological order (what the
// infer_type and infer_shape passes do), skipping ops its registry does not know (their
// outputs stay unknown) and carrying on after a node whose rule fails (its outputs become
// unknown). ONNX runs with data propagation (its partial evaluation of shape computations).
// Only the top-level graph's node outputs are compared; values inside subgraphs (If, Loop, Scan
// bodies) are not.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "onnx/onnx_pb.h"

namespace graphopt {
namespace shape_agreement {

// One value (or node) on which the two sides disagree.
struct Disagreement {
  std::string model;
  std::string value;     // empty for a node-level error without outputs
  std::string node;      // the node's name, or "#<index>" when it has none
  std::string op;        // OpLabel(domain, op_type)
  std::string onnx;      // ONNX's type ("float32[2,?,N]", "none" when it has none)
  std::string graphopt;  // graphopt's type, or "error: <message>"
};

// How each node output of the top-level graph came out. Every output with a name falls in
// exactly one of agreed, disagreed, unsupported, graphopt_only, onnx_only and neither.
struct ModelResult {
  std::string model;
  // graphopt could not import the model (GraphFromOnnx / GraphFromProto / a cycle); nothing
  // was compared. `unimplemented` when that is UNIMPLEMENTED (sequence/optional types, ...).
  std::string import_error;
  bool unimplemented = false;
  // ONNX's inference failed as a whole (not at one node); nothing was compared.
  std::string onnx_error;

  int64_t agreed = 0;       // both have a type and nothing in it conflicts
  int64_t disagreed = 0;    // a conflict, or graphopt failed on a node ONNX accepts
  int64_t unsupported = 0;  // produced by an op graphopt's registry does not know
  int64_t graphopt_only = 0;  // only graphopt has a type
  int64_t onnx_only = 0;      // only ONNX has a type
  int64_t neither = 0;        // no type on either side
  // Of agreed values: those where graphopt knows something ONNX does not (a dtype, a rank, a
  // dim's size or symbol), and the other way round. A value may count in both.
  int64_t graphopt_knows_more = 0;
  int64_t onnx_knows_more = 0;

  // Op label -> number of values it produces that count as unsupported.
  std::map<std::string, int64_t> unsupported_ops;
  std::vector<Disagreement> disagreements;
  // Nodes ONNX rejects: "<node> (<op>): <message>" (their outputs are not compared as errors;
  // whatever graphopt inferred for them counts as graphopt_only).
  std::vector<std::string> onnx_node_errors;
  // Nodes of known ops that graphopt's verifier (VerifyNode: arity, attributes) rejects while
  // ONNX accepts them: "<node> (<op>): <message>". Counted as disagreements by the tool.
  std::vector<std::string> verifier_errors;
  // With CompareOptions::record_values: every node output, in node order, whatever its
  // category (`graphopt` is "unsupported op" for unknown ops).
  std::vector<Disagreement> values;
};

struct CompareOptions {
  bool record_values = false;
};

// Compares the two inferences on `model` (which is not modified). `name` labels the model in
// the result.
ModelResult CompareModel(absl::string_view name, const onnx::ModelProto& model,
                         const OpRegistry& ops, const CompareOptions& options = {});

// graphopt's IR of `model` as CompareModel builds it: value_info and the graph outputs' declared
// types are dropped first, so that every node output's type is inferred from the graph inputs
// and initializers. The error of GraphFromOnnx (UNIMPLEMENTED for parts graphopt does not
// carry) or of GraphFromProto otherwise.
absl::StatusOr<Graph> ImportForInference(const onnx::ModelProto& model);

// Totals over several models.
struct Summary {
  int64_t models = 0;
  int64_t agreed = 0, disagreed = 0, unsupported = 0, graphopt_only = 0, onnx_only = 0,
          neither = 0, graphopt_knows_more = 0, onnx_knows_more = 0;
  std::map<std::string, int64_t> unsupported_ops;
  std::vector<std::string> not_imported;  // "<model>: <error>"
  std::vector<std::string> onnx_failed;   // "<model>: <error>"
  int64_t onnx_node_errors = 0;
  std::vector<std::string> verifier_errors;  // "<model>: <node> (<op>): <message>"
  std::vector<Disagreement> disagreements;

  void Add(const ModelResult& r);
};

// A copy of `model` whose graph inputs (other than initializers) have every known dim replaced
// by the symbol "d<size>": dims of equal size share a symbol. Both inferences must agree on any
// typing of the inputs, and this one exercises their symbolic paths.
onnx::ModelProto SymbolizeInputs(const onnx::ModelProto& model);

// "float32[2,?,N]" from an ONNX type; "?" dims for ONNX's generated "unk__" symbols. "none"
// for a type without an element type or shape; "sequence" etc. for non-tensor types.
std::string OnnxTypeToString(const onnx::TypeProto& type);

}  // namespace shape_agreement
// The model files named by command-line arguments: a file as is, a directory searched
// recursively for */model.onnx (sorted). Prints an error to stderr and returns false for an
// argument that is neither, or a directory that cannot be read.
bool CollectModelFiles(const std::vector<std::string>& args,
                       std::vector<std::filesystem::path>* out);

}  // namespace graphopt

#endif  // GRAPHOPT_TOOLS_SHAPE_AGREEMENT_AGREEMENT_H_
