// Identity; its kernel is in runtime/kernels/tensor.cc.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// Identity and Cast between integer types: same shape, same contents.
absl::Status ShapeAndValueOfInput0(InferenceContext& ctx) {
  if (absl::Status s = SameShapeAsInput0(ctx); !s.ok()) return s;
  if (std::optional<Dims> v = InputDimsValue(ctx, 0)) SetDimsValue(ctx, 0, *std::move(v));
  return absl::OkStatus();
}

}  // namespace

void AddTensorOps(std::vector<OpDef>* ops) {
  ops->push_back(OpBuilder("Identity", "Returns its input.")
                     .Input("input", "T")
                     .Output("output", "T")
                     .Constraint("T", AllTypes())
                     .Fusion(v1::FUSION_ELEMWISE)
                     .InPlace(0, 0)
                     .ShapeFn(ShapeAndValueOfInput0)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
