#ifndef GRAPHOPT_OPS_GRAD_UTIL_H_
#define GRAPHOPT_OPS_GRAD_UTIL_H_

// Private to the builtin_ops target: helpers of the tensor and reduction gradients
// (ops/grad_tensor*.cc, ops/grad_reduction.cc) beyond graph/gradient.h's: constant int operands,
// attribute-or-input operands by opset, and emitting ops whose form changed with the opset.

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/gradient.h"

namespace graphopt {
namespace builtin_internal {

// Contents of `v` when it is a constant (an initializer that is not a graph input, or a
// Constant node) of integers; nullopt otherwise.
std::optional<std::vector<int64_t>> ConstantInts(const GradientContext& ctx, ValueId v);

// The rank of `v`; an error naming the node when it is unknown.
absl::StatusOr<int> RankOf(const GradientContext& ctx, ValueId v, absl::string_view what);

// The sizes of `v` when every dim is known.
std::optional<std::vector<int64_t>> KnownDims(const GradientContext& ctx, ValueId v);

// An int list that ONNX moved from attribute `attribute` to input `input`: the input's
// constant contents when the node has the input, else the attribute's values. `given` is false
// when neither is present; `values` is nullopt when the input is not a constant.
struct GradInts {
  bool given = false;
  std::optional<std::vector<int64_t>> values;
};
absl::StatusOr<GradInts> IntsAttrOrInput(const GradientContext& ctx,
                                            absl::string_view attribute, int input);

// True when the graph's opset is older than `version` (0, no import, is the newest).
inline bool OpsetBefore(const GradientContext& ctx, int64_t version) {
  const int64_t v = ctx.opset_version();
  return v > 0 && v < version;
}

// `op_type`(x) with the int list `values` as attribute `name` before opset `input_since`, as
// an int64 constant input appended to `inputs` from it.
absl::StatusOr<ValueId> EmitWithInts(GradientContext& ctx, absl::string_view op_type,
                                     std::vector<ValueId> inputs, absl::string_view name,
                                     absl::Span<const int64_t> values, int64_t input_since,
                                     AttributeMap attributes = {});

// Zeros of `like`'s shape and element type.
absl::StatusOr<ValueId> ZerosLike(GradientContext& ctx, ValueId like);

// Normalizes `axes` against `rank` (negative counts from the end); an error naming the node for
// an axis out of range or repeated. Sorted ascending.
absl::StatusOr<std::vector<int64_t>> NormalizedAxes(const GradientContext& ctx,
                                                    std::vector<int64_t> axes, int rank);

// Returns the status of a StatusOr `expr` from the enclosing function when it is not OK, else
// assigns its value to `lhs`.
#define GRAD_ASSIGN_OR_RETURN(lhs, expr)          \
  GRAD_ASSIGN_OR_RETURN_IMPL(GRAD_CONCAT(grad_status_, __LINE__), lhs, expr)
#define GRAD_CONCAT_INNER(a, b) a##b
#define GRAD_CONCAT(a, b) GRAD_CONCAT_INNER(a, b)
#define GRAD_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = *std::move(tmp)
#define GRAD_RETURN_IF_ERROR(expr)                       \
  do {                                                   \
    if (absl::Status grad_st = (expr); !grad_st.ok()) return grad_st; \
  } while (0)

}  // namespace builtin_internal
}  // namespace graphopt

#endif  // GRAPHOPT_OPS_GRAD_UTIL_H_
