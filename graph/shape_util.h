#ifndef GRAPHOPT_GRAPH_SHAPE_UTIL_H_
#define GRAPHOPT_GRAPH_SHAPE_UTIL_H_

// Shape arithmetic shared by the builtin operators' shape functions. Every function is total:
// sizes that cannot be known come back as Dim::Unknown() (or a nullopt rank), never guessed,
// and arithmetic that would overflow int64 yields unknown. Errors are INVALID_ARGUMENT with a
// message that does not name a node; shape functions prefix it with InferenceContext::Error.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/types.h"

namespace graphopt {

// --- Checked arithmetic -----------------------------------------------------------------------

// a * b, a + b and a - b, or nullopt on int64 overflow.
std::optional<int64_t> CheckedMul(int64_t a, int64_t b);
std::optional<int64_t> CheckedAdd(int64_t a, int64_t b);
std::optional<int64_t> CheckedSub(int64_t a, int64_t b);

// --- Broadcasting -----------------------------------------------------------------------------

// Multidirectional (numpy) broadcast of two dims:
//   known a, known b:   equal -> a; a == 1 -> b; b == 1 -> a; otherwise incompatible;
//   symbol s, same s:   s;            symbol s vs 1: s;     symbol vs known n > 1: n;
//   two different symbols: unknown;   unknown vs 1 or a symbol: unknown;  unknown vs n > 1: n.
// nullopt when the two are incompatible.
std::optional<Dim> BroadcastDim(const Dim& a, const Dim& b);

// Multidirectional broadcast of several shapes (right-aligned). nullopt (rank unknown) when any
// rank is unknown. INVALID_ARGUMENT naming both offending shapes (by their position in `shapes`)
// when two known sizes differ and neither is 1.
absl::StatusOr<std::optional<Dims>> BroadcastShapes(
    const std::vector<std::optional<Dims>>& shapes);

// Unidirectional broadcast: OK when `from` can be broadcast to `to` (as Gemm's C to [M, N]);
// INVALID_ARGUMENT naming both shapes when it provably cannot.
absl::Status CheckUnidirectionalBroadcast(const Dims& from, const Dims& to);

// Two dims that the op requires to be equal (Concat's non-axis dims, a channel count seen
// twice): a known size wins over a symbol or unknown, a symbol over unknown, two different
// symbols give unknown. INVALID_ARGUMENT when both are known and differ.
absl::StatusOr<Dim> MergeEqualDims(const Dim& a, const Dim& b);

// --- Axes -------------------------------------------------------------------------------------

// Maps `axis` in [-rank, rank) to [0, rank). INVALID_ARGUMENT "<what> value V is out of range
// for rank R (expected [-R, R-1])" otherwise; `what` names the attribute or input, for example
// "attribute 'axis'".
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, absl::string_view what);

// NormalizeAxis for each element, in order; INVALID_ARGUMENT on a repeated axis.
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes, int64_t rank,
                                                   absl::string_view what);

// --- Products ---------------------------------------------------------------------------------

// Product of dims[begin, end): known when every factor is known (and it does not overflow), the
// symbol when exactly one factor is a symbol and the rest are known 1s, unknown otherwise.
Dim DimProduct(const Dims& dims, size_t begin, size_t end);

// --- Convolution and pooling ------------------------------------------------------------------

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// Parses ONNX's auto_pad values ("NOTSET" or empty, "SAME_UPPER", "SAME_LOWER", "VALID").
absl::StatusOr<AutoPad> ParseAutoPad(absl::string_view value);

// Output size along one spatial axis of a convolution or pooling window:
//   SAME_*:  ceil(in / stride);
//   VALID:   floor((in - dilated_kernel) / stride) + 1;
//   NOTSET:  floor or (ceil_mode) ceil((in + pad_begin + pad_end - dilated_kernel) / stride) + 1,
//            where with ceil_mode a last window starting in the end padding is dropped;
// with dilated_kernel = (kernel - 1) * dilation + 1. A symbolic input size is kept when the
// output provably equals it (stride 1 and the padding making up for the window), and is unknown
// otherwise. INVALID_ARGUMENT when kernel, stride or dilation is not positive, a pad is
// negative, or the window does not fit the (padded) input.
absl::StatusOr<Dim> ConvOutputDim(const Dim& in, int64_t kernel, int64_t stride,
                                  int64_t dilation, int64_t pad_begin, int64_t pad_end,
                                  AutoPad auto_pad, bool ceil_mode);

// --- Linear algebra ---------------------------------------------------------------------------

// numpy.matmul's result shape: a 1-D first operand is promoted to [1, K] and a 1-D second
// operand to [K, 1] (the added dims are removed again), and the batch dims broadcast. nullopt
// when either rank is unknown. INVALID_ARGUMENT for a scalar operand, different known inner
// dims or incompatible batch dims.
absl::StatusOr<std::optional<Dims>> MatMulShape(const std::optional<Dims>& a,
                                                const std::optional<Dims>& b);

// --- Reshape ----------------------------------------------------------------------------------

// Output dims of ONNX Reshape. `target` holds the requested shape as dims: known entries (-1 to
// infer, 0 to copy the input's dim at that index unless `allowzero`), symbols, and unknown
// entries (which give unknown output dims). The -1 entry is inferred when the input's and the
// other entries' factors allow it, also symbolically ([batch,3,4] -> [batch,-1] gives
// [batch,12]). INVALID_ARGUMENT for more than one -1, entries below -1, a 0 copying a dim past
// the input's rank, -1 together with 0 under allowzero, and element counts that provably differ.
absl::StatusOr<Dims> ReshapeOutputDims(const std::optional<Dims>& input, const Dims& target,
                                       bool allowzero);

// --- Slicing ----------------------------------------------------------------------------------

// The range an ONNX Slice selects from an axis of known size `size`: the first index and the
// number of elements (indices first, first + step, ...). `step` must not be 0.
struct SliceRange {
  int64_t first = 0;
  int64_t count = 0;
};
SliceRange ComputeSliceRange(int64_t size, int64_t start, int64_t end, int64_t step);

// Slice of one dim: known sizes are computed; a symbol is kept for the full range (start 0, end
// INT64_MAX, step 1, or start -1, end INT64_MIN, step -1) and is unknown otherwise.
Dim SliceDim(const Dim& in, int64_t start, int64_t end, int64_t step);

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_SHAPE_UTIL_H_
