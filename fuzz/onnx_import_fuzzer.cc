// libFuzzer target: the ONNX side of an Optimize request. The input is a serialized ONNX
// ModelProto; it goes through GraphFromOnnxBytes, GraphFromProto and VerifyGraph over the
// builtin ops, and the IR is written back out as ONNX (GraphToProto, GraphToOnnxBytes), as a
// request with result_format ONNX does after its pipeline.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "fuzz/fuzz_util.h"
#include "graph/proto_convert.h"
#include "graph/verifier.h"
#include "onnx_io/onnx_export.h"
#include "onnx_io/onnx_import.h"
#include "proto/graph.pb.h"

namespace graphopt {
namespace fuzz {
namespace {

void RunOne(const uint8_t* data, size_t size) {
  absl::StatusOr<v1::Graph> imported =
      GraphFromOnnxBytes(std::string(reinterpret_cast<const char*>(data), size));
  if (!imported.ok()) return;
  absl::StatusOr<Graph> graph = GraphFromProto(std::move(*imported));
  if (!graph.ok()) return;
  // Import keeps graphs whose ops graphopt does not know; the verifier names them.
  (void)VerifyGraph(*graph, BuiltinOps());
  (void)GraphToOnnxBytes(GraphToProto(*graph));
}

}  // namespace
}  // namespace fuzz
}  // namespace graphopt

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  graphopt::fuzz::RunOne(data, size);
  return 0;
}
