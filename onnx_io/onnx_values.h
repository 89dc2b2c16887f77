#ifndef GRAPHOPT_ONNX_IO_ONNX_VALUES_H_
#define GRAPHOPT_ONNX_IO_ONNX_VALUES_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
// onnx-data_pb.h includes onnx_pb.h first, which the generated header needs.
#include "onnx/onnx-data_pb.h"
#include "proto/graph.pb.h"
#include "runtime/tensor.h"

namespace graphopt {

// Runtime values from ONNX's serialized value messages, as ONNX's test data stores them
// (input_0.pb, output_0.pb): a TensorProto for a tensor, a SequenceProto for a sequence of
// tensors, an OptionalProto for an optional. `kind` says which message the bytes hold (the
// bytes alone do not: the messages parse as one another). `name` (may be null) receives the
// message's name. INVALID_ARGUMENT naming `what` when the bytes do not parse or hold what the
// kind does not carry (maps, sparse tensors, nested sequences).
absl::StatusOr<runtime::Tensor> ValueFromOnnxBytes(const std::string& bytes, v1::ValueKind kind,
                                                   absl::string_view what,
                                                   std::string* name = nullptr);

absl::StatusOr<runtime::Tensor> ValueFromOnnxSequence(const onnx::SequenceProto& sequence,
                                                      absl::string_view what);
absl::StatusOr<runtime::Tensor> ValueFromOnnxOptional(const onnx::OptionalProto& optional,
                                                      absl::string_view what);

}  // namespace graphopt

#endif  // GRAPHOPT_ONNX_IO_ONNX_VALUES_H_
