#ifndef GRAPHOPT_RUNTIME_NPY_H_
#define GRAPHOPT_RUNTIME_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

// NumPy's .npy format (versions 1.0-3.0), C order, little-endian or single-byte element
// types: float16/32/64, int8..64, uint8..64, bool. `what` names the source in errors.
// INVALID_ARGUMENT for a malformed header, Fortran order, big-endian data, an unsupported
// dtype, or a data size that does not match the shape.
absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes, absl::string_view what);
// Serializes as version 1.0 (2.0 when the header needs it). UNIMPLEMENTED for dtypes .npy
// cannot hold as such (string, bfloat16).
absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_NPY_H_
