// Image sampling with ONNX semantics: GridSample and RoiAlign; kernels in
// runtime/kernels/misc_image.cc.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// GridSample: X [N, C, D1...] sampled at grid [N, H1..., r-2] gives [N, C, H1...].
absl::Status GridSampleShape(InferenceContext& ctx) {
  for (const char* attr : {"mode", "padding_mode"}) {
    absl::StatusOr<std::string> v = ctx.GetString(attr);
    if (!v.ok()) return v.status();
    const bool ok = std::string(attr) == "mode"
                        ? (*v == "bilinear" || *v == "nearest" || *v == "bicubic" ||
                           *v == "linear" || *v == "cubic")
                        : (*v == "zeros" || *v == "border" || *v == "reflection");
    if (!ok) return ctx.Error("attribute '", attr, "' has unknown value '", *v, "'");
  }
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> grid = InputShape(ctx, 1);
  if (x && x->size() < 3) return ctx.Error("input X must have rank >= 3, got ", ShapeToString(x));
  if (grid && grid->size() < 3) {
    return ctx.Error("input grid must have rank >= 3, got ", ShapeToString(grid));
  }
  if (x && grid && grid->size() != x->size()) {
    return ctx.Error("input grid ", ShapeToString(grid), " must have the rank of X ",
                     ShapeToString(x));
  }
  if (grid) {
    const Dim& last = grid->back();
    if (last.is_known() && last.size() != static_cast<int64_t>(grid->size()) - 2) {
      return ctx.Error("input grid ", ShapeToString(grid), " must end in ", grid->size() - 2,
                       " coordinates");
    }
  }
  if (!grid && !x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const size_t rank = x ? x->size() : grid->size();
  absl::StatusOr<Dim> n = MergeEqualDims(x ? (*x)[0] : Dim::Unknown(),
                                         grid ? (*grid)[0] : Dim::Unknown());
  if (!n.ok()) {
    return ctx.Error("inputs X ", ShapeToString(x), " and grid ", ShapeToString(grid),
                     " differ in batch size");
  }
  Dims out = {*n, x ? (*x)[1] : Dim::Unknown()};
  for (size_t i = 1; i + 1 < rank; ++i) out.push_back(grid ? (*grid)[i] : Dim::Unknown());
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// [num_rois, C, output_height, output_width].
absl::Status RoiAlignShape(InferenceContext& ctx) {
  absl::StatusOr<std::string> mode = ctx.GetString("mode");
  if (!mode.ok()) return mode.status();
  if (*mode != "avg" && *mode != "max") {
    return ctx.Error("attribute 'mode' must be avg or max, got '", *mode, "'");
  }
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> rois = InputShape(ctx, 1);
  const std::optional<Dims> idx = InputShape(ctx, 2);
  if (x && x->size() != 4) return ctx.Error("input X must be 4-D, got ", ShapeToString(x));
  if (rois && (rois->size() != 2 || !MergeEqualDims((*rois)[1], Dim::Known(4)).ok())) {
    return ctx.Error("input rois must be [num_rois, 4], got ", ShapeToString(rois));
  }
  if (idx && idx->size() != 1) {
    return ctx.Error("input batch_indices must be 1-D, got ", ShapeToString(idx));
  }
  absl::StatusOr<Dim> num_rois = MergeEqualDims(rois ? (*rois)[0] : Dim::Unknown(),
                                                idx ? (*idx)[0] : Dim::Unknown());
  if (!num_rois.ok()) {
    return ctx.Error("inputs rois ", ShapeToString(rois), " and batch_indices ",
                     ShapeToString(idx), " differ in the number of regions");
  }
  Dims out = {*num_rois, x ? (*x)[1] : Dim::Unknown()};
  for (const char* attr : {"output_height", "output_width"}) {
    absl::StatusOr<int64_t> v = ctx.GetInt(attr);
    if (!v.ok()) return v.status();
    if (*v <= 0) return ctx.Error("attribute '", attr, "' must be positive, got ", *v);
    out.push_back(Dim::Known(*v));
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace

void AddMiscImageOps(std::vector<OpDef>* ops) {
  const DTypes hsd = HalfSingleDouble();
  ops->push_back(OpBuilder("GridSample", "Samples X at the normalised coordinates of 'grid'.")
                     .Input("X", "T1")
                     .Input("grid", "T2")
                     .Output("Y", "T1")
                     .IntAttr("align_corners", 0)
                     .StringAttr("mode", "bilinear")
                     .StringAttr("padding_mode", "zeros")
                     .Constraint("T1", AllTypes())
                     .Constraint("T2", hsd)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(GridSampleShape)
                     .Build());
  ops->push_back(OpBuilder("RoiAlign", "Region-of-interest align: one output_height x "
                                       "output_width map per region.")
                     .Input("X", "T1")
                     .Input("rois", "T1")
                     .Input("batch_indices", "T2")
                     .Output("Y", "T1")
                     .StringAttr("coordinate_transformation_mode", "half_pixel", "Opset 16+.")
                     .StringAttr("mode", "avg", "avg or max.")
                     .IntAttr("output_height", 1)
                     .IntAttr("output_width", 1)
                     .IntAttr("sampling_ratio", 0)
                     .FloatAttr("spatial_scale", 1.0f)
                     .Constraint("T1", hsd)
                     .Constraint("T2", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(RoiAlignShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
