#include "ops/grad_util.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "graph/constant_view.h"

namespace graphopt {
namespace builtin_internal {

std::optional<std::vector<int64_t>> ConstantInts(const GradientContext& ctx, ValueId v) {
  if (!v.valid()) return std::nullopt;
  // Index lists (axes, starts, pads, repeats) are short; a large constant is not one.
  std::optional<ConstantView> view = ConstantView::Of(ctx.graph(), v, /*max_elements=*/1 << 16);
  if (!view || !IsInteger(view->dtype())) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(view->num_elements());
  for (int64_t i = 0; i < view->num_elements(); ++i) {
    out.push_back(static_cast<int64_t>(view->AsDouble(i)));
  }
  return out;
}

absl::StatusOr<int> RankOf(const GradientContext& ctx, ValueId v, absl::string_view what) {
  const std::optional<Dims>& s = ctx.shape(v);
  if (!s) return ctx.Error("the rank of ", what, " is unknown (run infer_shape first)");
  return static_cast<int>(s->size());
}

std::optional<std::vector<int64_t>> KnownDims(const GradientContext& ctx, ValueId v) {
  const std::optional<Dims>& s = ctx.shape(v);
  if (!s) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& d : *s) {
    if (!d.is_known()) return std::nullopt;
    out.push_back(d.size());
  }
  return out;
}

absl::StatusOr<GradInts> IntsAttrOrInput(const GradientContext& ctx,
                                            absl::string_view attribute, int input) {
  GradInts out;
  if (ctx.has_input(input)) {
    out.given = true;
    out.values = ConstantInts(ctx, ctx.input(input));
    return out;
  }
  if (ctx.attr(attribute) != nullptr) {
    absl::StatusOr<std::vector<int64_t>> v = ctx.GetInts(attribute, {});
    if (!v.ok()) return v.status();
    out.given = true;
    out.values = *std::move(v);
  }
  return out;
}

absl::StatusOr<ValueId> EmitWithInts(GradientContext& ctx, absl::string_view op_type,
                                     std::vector<ValueId> inputs, absl::string_view name,
                                     absl::Span<const int64_t> values, int64_t input_since,
                                     AttributeMap attributes) {
  if (OpsetBefore(ctx, input_since)) {
    attributes[std::string(name)] = IntsAttr(values);
  } else {
    inputs.push_back(Int64Constant(ctx, values));
  }
  return ctx.Emit1(op_type, inputs, std::move(attributes));
}

absl::StatusOr<ValueId> ZerosLike(GradientContext& ctx, ValueId like) {
  return FilledLike(ctx, like, 0.0);
}

absl::StatusOr<std::vector<int64_t>> NormalizedAxes(const GradientContext& ctx,
                                                    std::vector<int64_t> axes, int rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      return ctx.Error("axis ", a, " is out of range for rank ", rank);
    }
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    return ctx.Error("an axis is repeated");
  }
  return axes;
}

}  // namespace builtin_internal
}  // namespace graphopt
