#ifndef GRAPHOPT_ONNX_IO_EXTERNAL_DATA_H_
#define GRAPHOPT_ONNX_IO_EXTERNAL_DATA_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"
#include "proto/graph.pb.h"

namespace graphopt {

// ONNX external data: tensors whose bytes live in files beside the model (models past
// protobuf's 2 GB limit are saved this way).

// What LoadExternalData did.
struct ExternalDataStats {
  int64_t tensors = 0;  // tensors whose bytes were read from files
  int64_t bytes = 0;    // their bytes
  int64_t files = 0;    // distinct files mapped
};

// Reads the external data of every tensor of `model` (initializers and Constant-node and other
// tensor attributes, in the main graph and in every subgraph) into the tensor's raw_data, and
// marks it as stored inline. Locations name files relative to `model_dir` (the folder of the
// model file), as ONNX specifies; "offset" and "length" select a range (default: from 0 to the
// file's end). Tensors whose location is a graphopt blob reference ("graphopt-blob:...") are
// left alone.
//
// Each file is memory-mapped once and each tensor's bytes are copied once, straight into the
// tensor; the pages of a range already copied are released at once, so that the process does
// not hold the file's pages and the tensors' copies together (peak memory stays near the
// weights' size).
//
// INVALID_ARGUMENT naming the tensor for: no location, an absolute location, one with a ".."
// component or a NUL, a location that resolves (symlinks followed) outside `model_dir`, an
// offset or length that is not a non-negative integer, a range past the file's end, a string
// tensor with external data. NOT_FOUND naming the tensor and the file when it cannot be opened.
absl::StatusOr<ExternalDataStats> LoadExternalData(onnx::ModelProto& model,
                                                   absl::string_view model_dir);

// Whether any tensor of `model` keeps its bytes in an external file (not a graphopt blob).
bool HasExternalFileData(const onnx::ModelProto& model);

// Reads an ONNX model file and loads its external data (LoadExternalData with the folder of
// the file, symlinks resolved: a link to a model reads the data beside the model). INVALID_ARGUMENT when it does not parse; errors name the file.
absl::StatusOr<onnx::ModelProto> ReadOnnxFile(const std::string& path);

// ReadOnnxFile for a file whose bytes the caller has read already (released once parsed).
absl::StatusOr<onnx::ModelProto> OnnxFromFileBytes(const std::string& path, std::string bytes);

// ReadOnnxFile, then GraphFromOnnx; errors name the file.
absl::StatusOr<v1::Graph> GraphFromOnnxFile(const std::string& path);

// Moves the bytes of every initializer of the main graph holding at least `threshold_bytes`
// into one file, `data_file_name`, in `model_dir` (each tensor's offset aligned to 4096 bytes,
// so that a reader can map it), and rewrites their external_data entries (location, offset,
// length). The file is written to a temporary name and renamed. The model's own bytes must
// then be written by the caller. Errors name the file; on an error the model is left partly
// rewritten.
absl::Status SaveExternalData(onnx::ModelProto& model, absl::string_view model_dir,
                              absl::string_view data_file_name, int64_t threshold_bytes);

}  // namespace graphopt

#endif  // GRAPHOPT_ONNX_IO_EXTERNAL_DATA_H_
