#ifndef GRAPHOPT_GRAPH_ONNX_TYPE_BYTES_H_
#define GRAPHOPT_GRAPH_ONNX_TYPE_BYTES_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/types.h"
#include "proto/graph.pb.h"

namespace graphopt {

// The type a serialized ONNX TypeProto describes (an attribute of kind TYPE_PROTO, carried as
// OpaqueAttribute "onnx.TypeProto"; ONNX's Optional op has one), as a TensorType: a tensor, a
// sequence of tensors or an optional of either, with the tensors' element type and shape.
// Read from the protobuf wire format, so that neither the runtime nor the op rules link ONNX.
// INVALID_ARGUMENT when the bytes are not a TypeProto; UNIMPLEMENTED for the kinds graphopt
// does not carry (maps, sparse tensors, nested sequences).
absl::StatusOr<TensorType> TensorTypeFromOnnxTypeBytes(absl::string_view bytes);

// The same for an attribute: it must be an opaque "onnx.TypeProto" holding one value.
absl::StatusOr<TensorType> TensorTypeFromTypeAttribute(const v1::Attribute& attribute);

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_ONNX_TYPE_BYTES_H_
