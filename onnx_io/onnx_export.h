#ifndef GRAPHOPT_ONNX_IO_ONNX_EXPORT_H_
#define GRAPHOPT_ONNX_IO_ONNX_EXPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "proto/graph.pb.h"

namespace graphopt {

// The ONNX IR version and default-domain opset written for graphs that carry none (a native
// graphopt graph): the newest that ONNX 1.12, the checker graphopt is tested with, accepts.
inline constexpr int64_t kDefaultOnnxIrVersion = 8;
inline constexpr int64_t kDefaultOnnxOpset = 17;

struct OnnxExportOptions {
  // Write graphopt's own ops (domain "graphopt": fused groups, channels-last and backward ops)
  // as they are, which only graphopt runs. By default they become calls of ONNX model-local
  // functions with standard-ONNX bodies (ExportGraphoptOpsAsFunctions), which any ONNX runtime
  // runs and GraphFromOnnx inlines.
  bool native_ops = false;
  // Leave the top-level graph's value_info out of the model. Portable bodies are built from it
  // first (a layout op's body needs its input's rank), so give the graph with value_info.
  bool strip_value_info = false;
};

// Converts graphopt's wire graph into an ONNX model, the inverse of GraphFromOnnx: for a
// graph that came from GraphFromOnnx, GraphFromOnnx(GraphToOnnx(g)) == g. Model metadata comes
// from graph.model (producer "graphopt" when absent); a domain that nodes use without an
// opset import gets one: kDefaultOnnxOpset for the default domain, 1 for any other. Tensors
// are written as raw_data (string tensors as string_data); a Tensor with `blob` set becomes external data at "graphopt-blob:<digest>". Node device annotations have no ONNX field and are dropped.
// An empty graph name becomes "graph" (the ONNX checker requires one).
//
// Moves tensor bytes out of `graph`. INVALID_ARGUMENT naming the attribute for an opaque
// attribute whose bytes do not parse as the ONNX message they claim to be; without native_ops,
// UNIMPLEMENTED naming the node for a graphopt op that has no standard-ONNX form.
absl::StatusOr<onnx::ModelProto> GraphToOnnx(v1::Graph graph,
                                             const OnnxExportOptions& options = {});

// GraphToOnnx, serialized deterministically.
absl::StatusOr<std::string> GraphToOnnxBytes(v1::Graph graph,
                                             const OnnxExportOptions& options = {});

}  // namespace graphopt

#endif  // GRAPHOPT_ONNX_IO_ONNX_EXPORT_H_
