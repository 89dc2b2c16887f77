#ifndef GRAPHOPT_ONNX_IO_ONNX_PORTABLE_H_
#define GRAPHOPT_ONNX_IO_ONNX_PORTABLE_H_

// Portable ONNX: graphopt's own ops (domain "graphopt": fused groups, channels-last layout ops,
// backward ops) written as ONNX model-local functions whose bodies are standard ONNX ops, so
// that any ONNX runtime can load and run a graph graphopt optimized; and the way back in
// (model-local functions inlined on import).

#include <cstdint>

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace graphopt {

// Every graphopt-domain node of `model` (in the graph, its subgraphs and fused-group bodies)
// becomes a call of a model-local function in domain "graphopt" without attributes:
//   - a FusedGroup: its body, values renamed by position (x<i> inputs, y<i> outputs, t<k>),
//     graphopt nodes in it calling functions in turn;
//   - any other graphopt op: the standard-ONNX body of graphopt_op_bodies.h.
// Nodes that share a name within a graph get "#<k>" appended (ONNX Runtime refuses such graphs).
// Identical bodies share one function; functions are named "<op>_<k>" in order of first use,
// so the same model gives the same bytes. Bodies use the model's default-domain opset; the IR
// version is raised to 8 (model-local functions) where lower.
//
// UNIMPLEMENTED naming the node where an op has no standard form here (see GraphoptOpBody);
// INVALID_ARGUMENT for a malformed fused group (no body, a body reading a value it lacks).
absl::Status ExportGraphoptOpsAsFunctions(onnx::ModelProto* model, int64_t default_opset);

// Replaces every call of a model-local function (in the graph and its subgraphs, and calls in
// function bodies) by the function's body, then drops the functions. Inlined values are named
// "<call's first output>/<function>/<body name>" (made unique where that is taken); attributes
// that refer to the call's (ref_attr_name) take its value, or are left out when the call has
// none (ONNX's rule).
//
// UNIMPLEMENTED for a body node with a subgraph, a function whose default-domain opset differs
// from the model's; INVALID_ARGUMENT for calls nested deeper than 64 functions or inlining that
// would make more than 2^24 nodes.
absl::Status InlineLocalFunctions(onnx::ModelProto* model);

}  // namespace graphopt

#endif  // GRAPHOPT_ONNX_IO_ONNX_PORTABLE_H_
