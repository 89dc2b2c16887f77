#ifndef GRAPHOPT_ONNX_IO_ONNX_IMPORT_H_
#define GRAPHOPT_ONNX_IO_ONNX_IMPORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"
#include "proto/graph.pb.h"

namespace graphopt {

// External-data location prefix of an initializer whose bytes live in the service's
// content-addressed blob store: "graphopt-blob:sha256:<hex>" (see Tensor.blob).
inline constexpr absl::string_view kBlobLocationPrefix = "graphopt-blob:";

// The ONNX metadata_props key carrying a graph's state updates (Graph.state_updates, which ONNX
// has no field for): one "state<TAB>update" line each, the names C-escaped. GraphToOnnx writes
// it; import turns it back into state_updates (and leaves it out of metadata_props).
inline constexpr char kStateUpdatesMetadataKey[] = "graphopt.state_updates";

// Converts an ONNX model into graphopt's wire graph (the IR is then built by GraphFromProto).
//
// Model-local functions are inlined first (InlineLocalFunctions): their calls become their
// bodies, so a model graphopt wrote with portable functions comes back as standard ops.
//
// Kept: graph name and doc string, model metadata (ir_version, producer, domain, version,
// doc string, metadata_props), opset imports, every node with its name, domain ("ai.onnx" is
// the default domain ""), attributes of every kind (sparse tensors and type protos are carried
// as opaque bytes), doc strings, graph inputs (also those that are initializers), outputs,
// value_info, initializers and Constant nodes. Tensor data stored in ONNX's typed fields
// (float_data, int32_data, ...) becomes little-endian raw_data; an initializer whose external
// data location is a blob reference becomes a Tensor with `blob` set.
//
// Moves tensor bytes out of `model` instead of copying them.
//
// INVALID_ARGUMENT naming the node / value / tensor / attribute for: a data type ONNX 1.12
// does not define, a tensor whose data does not match its dims, a negative dim, an attribute
// without a name or whose value does not match its declared type, subgraphs nested more than
// 64 deep. Sequences of tensors and optionals of either become v1::TensorType kinds;
// model-local functions are inlined (InlineLocalFunctions). UNIMPLEMENTED, naming what, for
// parts graphopt does not carry: other value types (maps, sparse tensors, nested sequences),
// sparse initializers, functions InlineLocalFunctions refuses, training info, tensors in
// external files, segmented tensors.
absl::StatusOr<v1::Graph> GraphFromOnnx(onnx::ModelProto model);

// Parses a serialized ModelProto and converts it. INVALID_ARGUMENT when the bytes do not parse.
// `bytes` is released as soon as it has been parsed.
absl::StatusOr<v1::Graph> GraphFromOnnxBytes(std::string bytes);

// Converts one ONNX tensor (used by the import and by tools comparing with ONNX). `what` names
// the tensor in errors ("initializer 'w'", "attribute 'value' of node 'c'").
absl::StatusOr<v1::Tensor> TensorFromOnnx(onnx::TensorProto tensor, absl::string_view what);

}  // namespace graphopt

#endif  // GRAPHOPT_ONNX_IO_ONNX_IMPORT_H_
