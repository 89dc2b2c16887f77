#ifndef GRAPHOPT_RUNTIME_NPY_H_
#define GRAPHOPT_RUNTIME_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

// NumPy's .npy format (versions 1.0-3.0), C order. What is read, by the header's 'descr':
//   '<f2' '<f4' '<f8', '<i1'..'<i8', '<u1'..'<u8', '|b1' (single-byte codes with '|' too):
//       the numbers as such;
//   '<V2' or '|V2', and 'bfloat16': bfloat16, as raw bits. NumPy has no bfloat16 code, so
//       np.save of an ml_dtypes.bfloat16 array writes a 2-byte void ('<V2'); a header written
//       by hand with str(a.dtype) says 'bfloat16'. Any other void size is refused;
//   '<U<n>' (UTF-32, n code points) and '|S<n>' (n bytes): DT_STRING, each element its
//       UTF-8 text (for S, its bytes) with the trailing NULs NumPy pads with removed.
//       Object arrays ('|O') are refused: reading them needs pickle.
// `what` names the source in errors. INVALID_ARGUMENT for a malformed or truncated header,
// Fortran order, big-endian data, an unsupported dtype, an invalid code point, or a data size
// that does not match the shape. Nothing is allocated before the data size is checked against
// the shape, so a header claiming a huge shape costs no memory.
absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes, absl::string_view what);

// Serializes as version 1.0 (2.0 when the header needs it). bfloat16 is written as '<f4',
// which holds every bfloat16 value exactly (np.load gives float32; ParseNpy reads it back as
// float32, and PrepareInputs converts it back to the same bits). Strings are written as
// '<U<n>' (n the most code points of an element) when every element is valid UTF-8, else as
// '|S<n>'. UNIMPLEMENTED for an element ending in NUL (NumPy's fixed-width strings cannot
// keep it) or a fixed-width array over 1 GiB (one long string widens every element).
absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor);

// How SerializeNpy writes `tensor` when that is not its own dtype ("bfloat16 as float32,
// exactly"), else "".
std::string NpyConversionNote(const Tensor& tensor);

// A float32 tensor's elements rounded to bfloat16 (nearest, ties to even; NaN stays NaN): how
// a float32 .npy file feeds a bfloat16 model input. INVALID_ARGUMENT for other dtypes.
absl::StatusOr<Tensor> Float32ToBFloat16(const Tensor& tensor);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_NPY_H_
