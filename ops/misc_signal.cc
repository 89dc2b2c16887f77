// Signal-processing builtin operators with ONNX semantics (opset 17): DFT, STFT, the window
// generators (HannWindow, HammingWindow, BlackmanWindow) and MelWeightMatrix.

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

// The value of a scalar integer input that must be positive; nullopt when unknown.
absl::StatusOr<std::optional<int64_t>> PositiveScalar(const InferenceContext& ctx, int i,
                                                      absl::string_view what) {
  if (absl::Status s = CheckScalarInput(ctx, i, what, false); !s.ok()) return s;
  std::optional<int64_t> v = ScalarInputInt(ctx, i);
  if (v && *v <= 0) return ctx.Error("input ", i, " (", what, ") must be positive, got ", *v);
  return v;
}

// A one-sided transform keeps n / 2 + 1 of n frequency bins.
Dim Bins(const Dim& n, bool onesided) {
  if (!onesided) return n;
  return n.is_known() ? Dim::Known(n.size() / 2 + 1) : Dim::Unknown();
}

// INVALID_ARGUMENT unless the signal's last dim is 1 (real) or 2 (complex).
absl::Status CheckComplexAxis(const InferenceContext& ctx, const Dims& x) {
  const Dim& last = x.back();
  if (last.is_known() && last.size() != 1 && last.size() != 2) {
    return ctx.Error("the last dim of the signal ", ShapeToString(x),
                     " must be 1 (real) or 2 (complex)");
  }
  return absl::OkStatus();
}

// DFT: the signal's shape with the transformed axis dft_length long (n / 2 + 1 when one-sided)
// and a last dim of 2 (complex).
absl::Status DftShape(InferenceContext& ctx) {
  absl::StatusOr<int64_t> onesided = ctx.GetInt("onesided");
  if (!onesided.ok()) return onesided.status();
  absl::StatusOr<int64_t> inverse = ctx.GetInt("inverse");
  if (!inverse.ok()) return inverse.status();
  if (*onesided && *inverse) return ctx.Error("'onesided' and 'inverse' cannot both be set");
  absl::StatusOr<std::optional<int64_t>> length = PositiveScalar(ctx, 1, "dft_length");
  if (!length.ok()) return length.status();
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  if (x->size() < 2) return ctx.Error("the signal must have rank >= 2, got ", ShapeToString(x));
  if (absl::Status s = CheckComplexAxis(ctx, *x); !s.ok()) return s;
  const int64_t rank = static_cast<int64_t>(x->size());
  absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x);
  if (!axis.ok()) return axis.status();
  if (*axis == rank - 1) {
    return ctx.Error("attribute 'axis' must not name the last (real/imaginary) dim of ",
                     ShapeToString(x));
  }
  Dims out = *x;
  Dim n = (*x)[*axis];
  if (ctx.has_input(1)) n = *length ? Dim::Known(**length) : Dim::Unknown();
  out[*axis] = Bins(n, *onesided != 0);
  out.back() = Dim::Known(2);
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// STFT: [batch, frames, bins, 2] for a signal [batch, length, 1 or 2], frames =
// (length - frame_length) / frame_step + 1 and frame_length from the input or the window.
absl::Status StftShape(InferenceContext& ctx) {
  absl::StatusOr<int64_t> onesided = ctx.GetInt("onesided");
  if (!onesided.ok()) return onesided.status();
  absl::StatusOr<std::optional<int64_t>> step = PositiveScalar(ctx, 1, "frame_step");
  if (!step.ok()) return step.status();
  absl::StatusOr<std::optional<int64_t>> frame_length = PositiveScalar(ctx, 3, "frame_length");
  if (!frame_length.ok()) return frame_length.status();
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (x && x->size() != 3) {
    return ctx.Error("the signal must be [batch, length, 1 or 2], got ", ShapeToString(x));
  }
  if (x) {
    if (absl::Status s = CheckComplexAxis(ctx, *x); !s.ok()) return s;
  }
  Dim frame = *frame_length ? Dim::Known(**frame_length) : Dim::Unknown();
  if (const std::optional<Dims> w = InputShape(ctx, 2)) {
    absl::StatusOr<Dim> merged = w->size() == 1 ? MergeEqualDims(frame, (*w)[0])
                                                : absl::InvalidArgumentError("");
    if (!merged.ok()) {
      return ctx.Error("input window ", ShapeToString(w), " must be 1-D of the frame length ",
                       frame.ToString());
    }
    frame = *merged;
  }
  Dim frames = Dim::Unknown();
  const Dim length = x ? (*x)[1] : Dim::Unknown();
  if (length.is_known() && frame.is_known() && *step) {
    if (length.size() < frame.size()) {
      return ctx.Error("the signal ", ShapeToString(x), " is shorter than a frame of ",
                       frame.size());
    }
    frames = Dim::Known((length.size() - frame.size()) / **step + 1);
  }
  ctx.set_output_shape(0, Dims{x ? (*x)[0] : Dim::Unknown(), frames, Bins(frame, *onesided != 0),
                               Dim::Known(2)});
  return absl::OkStatus();
}

// Windows: [size].
absl::Status WindowShape(InferenceContext& ctx) {
  absl::StatusOr<std::optional<int64_t>> size = PositiveScalar(ctx, 0, "size");
  if (!size.ok()) return size.status();
  ctx.set_output_shape(0, Dims{*size ? Dim::Known(**size) : Dim::Unknown()});
  return absl::OkStatus();
}

// The element type 'output_datatype' names, which the output's constraint must allow.
absl::Status OutputDatatypeType(InferenceContext& ctx) {
  return OutputDTypeFromAttribute(ctx, 0, "output_datatype", v1::DT_UNDEFINED);
}

// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins].
absl::Status MelWeightMatrixShape(InferenceContext& ctx) {
  absl::StatusOr<std::optional<int64_t>> bins = PositiveScalar(ctx, 0, "num_mel_bins");
  if (!bins.ok()) return bins.status();
  absl::StatusOr<std::optional<int64_t>> dft = PositiveScalar(ctx, 1, "dft_length");
  if (!dft.ok()) return dft.status();
  for (int i = 2; i < 5; ++i) {
    if (absl::Status s = CheckScalarInput(ctx, i, "a scalar parameter", false); !s.ok()) return s;
  }
  ctx.set_output_shape(0, Dims{*dft ? Dim::Known(**dft / 2 + 1) : Dim::Unknown(),
                               *bins ? Dim::Known(**bins) : Dim::Unknown()});
  return absl::OkStatus();
}

}  // namespace

void AddMiscSignalOps(std::vector<OpDef>* ops) {
  const DTypes index_types = {v1::DT_INT32, v1::DT_INT64};
  const DTypes numeric = NumericTypes();
  ops->push_back(OpBuilder("DFT", "Discrete Fourier transform along 'axis' of a real ([..., 1]) "
                                  "or complex ([..., 2]) signal.")
                     .Input("input", "T1")
                     .OptionalInput("dft_length", "T2", "Scalar: pads or truncates the axis.")
                     .Output("output", "T1")
                     .IntAttr("axis", 1)
                     .IntAttr("inverse", 0)
                     .IntAttr("onesided", 0)
                     .Constraint("T1", FloatTypes())
                     .Constraint("T2", index_types)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(DftShape)
                     .Build());
  ops->push_back(OpBuilder("STFT", "Short-time Fourier transform: [batch, frames, bins, 2].")
                     .Input("signal", "T1")
                     .Input("frame_step", "T2")
                     .OptionalInput("window", "T1")
                     .OptionalInput("frame_length", "T2")
                     .Output("output", "T1")
                     .IntAttr("onesided", 1)
                     .Constraint("T1", FloatTypes())
                     .Constraint("T2", index_types)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(StftShape)
                     .Build());
  for (const char* name : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    ops->push_back(OpBuilder(name, "A cosine-sum window of 'size' points (periodic or "
                                   "symmetric).")
                       .Input("size", "T1")
                       .Output("output", "T2")
                       .IntAttr("output_datatype", v1::DT_FLOAT32)
                       .IntAttr("periodic", 1)
                       .Constraint("T1", index_types)
                       .Constraint("T2", numeric)
                       .Fusion(v1::FUSION_OPAQUE)
                       .ShapeFn(WindowShape)
                       .TypeFn(OutputDatatypeType)
                       .Build());
  }
  ops->push_back(OpBuilder("MelWeightMatrix", "Weights mapping dft_length / 2 + 1 linear "
                                              "frequency bins to num_mel_bins mel bins.")
                     .Input("num_mel_bins", "T1")
                     .Input("dft_length", "T1")
                     .Input("sample_rate", "T1")
                     .Input("lower_edge_hertz", "T2")
                     .Input("upper_edge_hertz", "T2")
                     .Output("output", "T3")
                     .IntAttr("output_datatype", v1::DT_FLOAT32)
                     .Constraint("T1", index_types)
                     .Constraint("T2", FloatTypes())
                     .Constraint("T3", numeric)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(MelWeightMatrixShape)
                     .TypeFn(OutputDatatypeType)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
