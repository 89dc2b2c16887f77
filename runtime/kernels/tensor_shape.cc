// Tensor-family kernels, part "shape" (see RegisterTensorKernels in tensor.cc): Constant,
// Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Expand, Dropout and ConstantOfShape.
// The generators (Range, EyeLike, Tile, Trilu, CumSum, OneHot) are in tensor_shape_gen.cc.
//
// Reshape, Flatten, Squeeze, Unsqueeze and inference-mode Dropout produce views of their input
// (Tensor::Reshaped), never copies.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/tensor_shape_util.h"
#include "runtime/kernels/tensor_util.h"

namespace graphopt::runtime {
namespace shape_internal {

absl::Status LabelStatus(const KernelInfo& info, const absl::Status& s) {
  if (s.ok()) return s;
  if (absl::StartsWith(s.message(), info.label())) return s;
  return absl::Status(s.code(), absl::StrCat(info.label(), ": ", s.message()));
}

}  // namespace shape_internal

namespace {

using shape_internal::LabelStatus;
using shape_internal::TypedData;

// --- Constant -------------------------------------------------------------------------------

// Constant: the tensor is decoded once at plan time; every execution shares it.
class ConstantKernel : public OpKernel {
 public:
  explicit ConstantKernel(Tensor value) : value_(std::move(value)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    static constexpr const char* kForms[] = {"value",      "value_float",  "value_floats",
                                             "value_int",  "value_ints",   "value_string",
                                             "value_strings", "sparse_value"};
    std::vector<std::string> present;
    for (const char* name : kForms) {
      if (info.has_attr(name)) present.push_back(name);
    }
    if (present.size() != 1) {
      return info.Invalid(absl::StrCat(
          "exactly one of the value attributes must be set, found ",
          present.empty() ? std::string("none") : absl::StrJoin(present, ", ")));
    }
    const std::string& form = present[0];
    const v1::Attribute& a = *info.attr(form);
    auto wrong_kind = [&]() {
      return info.Invalid(absl::StrCat("attribute '", form, "' has the wrong kind"));
    };
    Tensor t;
    if (form == "value") {
      if (a.value_case() != v1::Attribute::kT) return wrong_kind();
      absl::StatusOr<Tensor> v = info.GetTensor("value");
      if (!v.ok()) return LabelStatus(info, v.status());
      t = *std::move(v);
    } else if (form == "value_float") {
      if (a.value_case() != v1::Attribute::kF) return wrong_kind();
      t = Tensor::FromVector<float>(v1::DT_FLOAT32, {a.f()}, {});
    } else if (form == "value_floats") {
      if (a.value_case() != v1::Attribute::kFloats) return wrong_kind();
      std::vector<float> v = info.GetFloats(form);
      const int64_t n = static_cast<int64_t>(v.size());
      t = Tensor::FromVector<float>(v1::DT_FLOAT32, v, {n});
    } else if (form == "value_int") {
      if (a.value_case() != v1::Attribute::kI) return wrong_kind();
      t = Tensor::FromVector<int64_t>(v1::DT_INT64, {a.i()}, {});
    } else if (form == "value_ints") {
      if (a.value_case() != v1::Attribute::kInts) return wrong_kind();
      std::vector<int64_t> v = info.GetInts(form);
      const int64_t n = static_cast<int64_t>(v.size());
      t = Tensor::FromVector<int64_t>(v1::DT_INT64, v, {n});
    } else if (form == "value_string" || form == "value_strings") {
      std::vector<std::string> v;
      Shape shape;
      if (form == "value_string") {
        if (a.value_case() != v1::Attribute::kS) return wrong_kind();
        v.push_back(a.s());
      } else {
        if (a.value_case() != v1::Attribute::kStrings) return wrong_kind();
        v = info.GetStrings(form);
        shape.push_back(static_cast<int64_t>(v.size()));
      }
      absl::StatusOr<Tensor> s = Tensor::Allocate(v1::DT_STRING, shape);
      if (!s.ok()) return LabelStatus(info, s.status());
      for (size_t i = 0; i < v.size(); ++i) s->strings()[i] = std::move(v[i]);
      t = *std::move(s);
    } else {
      return info.Unimplemented("attribute 'sparse_value' (a sparse constant) is not supported");
    }
    return std::unique_ptr<OpKernel>(std::make_unique<ConstantKernel>(std::move(t)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ctx.SetOutput(0, value_);
    return absl::OkStatus();
  }

 private:
  const Tensor value_;
};

// --- Shape, Size ----------------------------------------------------------------------------

// Shape: the dims of input 0 in [start, end) (opset 15; negative ends count from the back and
// both are clamped to [0, rank]).
absl::Status ShapeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  const int64_t rank = (*x)->rank();
  int64_t start = ctx.info().GetInt("start", 0);
  int64_t end = ctx.info().GetInt("end", rank);
  auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return std::min(std::max<int64_t>(v, 0), rank);
  };
  start = clamp(start);
  end = clamp(end);
  const int64_t n = std::max<int64_t>(end - start, 0);
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_INT64, {n});
  if (!out.ok()) return out.status();
  int64_t* o = (*out)->data<int64_t>();
  for (int64_t i = 0; i < n; ++i) o[i] = (*x)->dim(static_cast<int>(start + i));
  return absl::OkStatus();
}

// Size: the element count of input 0 as an int64 scalar.
absl::Status SizeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_INT64, {});
  if (!out.ok()) return out.status();
  *(*out)->data<int64_t>() = (*x)->num_elements();
  return absl::OkStatus();
}

// --- Reshape, Flatten, Squeeze, Unsqueeze ---------------------------------------------------

// The output shape of Reshape(x, spec): 0 copies the input dim (unless allowzero), one -1 is
// inferred. INVALID_ARGUMENT when the spec is malformed or does not fit x's element count.
absl::StatusOr<Shape> ReshapeTarget(const KernelContext& ctx, const Shape& in,
                                    absl::Span<const int64_t> spec, bool allowzero) {
  const int64_t count = ShapeNumElements(in);
  Shape out(spec.begin(), spec.end());
  int infer = -1;
  bool has_zero = false;
  int64_t known = 1;
  for (int i = 0; i < static_cast<int>(out.size()); ++i) {
    int64_t& d = out[i];
    if (d == -1) {
      if (infer >= 0) {
        return ctx.Invalid(absl::StrCat("shape ", ShapeString(spec), " has more than one -1"));
      }
      infer = i;
      continue;
    }
    if (d < -1) {
      return ctx.Invalid(absl::StrCat("shape ", ShapeString(spec), " has a negative dim ", d));
    }
    if (d == 0) {
      if (allowzero) {
        has_zero = true;
      } else {
        if (i >= static_cast<int>(in.size())) {
          return ctx.Invalid(absl::StrCat("shape ", ShapeString(spec), " copies dim ", i,
                                          " (0) but the input ", ShapeString(in), " has rank ",
                                          in.size()));
        }
        d = in[i];
      }
    }
    if (d != 0 && known > (int64_t{1} << 62) / d) {
      return ctx.Invalid(absl::StrCat("shape ", ShapeString(spec), " is too large"));
    }
    known *= d;
  }
  if (infer >= 0) {
    if (has_zero) {
      return ctx.Invalid(absl::StrCat("shape ", ShapeString(spec),
                                      " has both -1 and 0 with allowzero set"));
    }
    if (known == 0 || count % known != 0) {
      return ctx.Invalid(absl::StrCat("cannot reshape ", ShapeString(in), " to ",
                                      ShapeString(spec), ": the -1 dim cannot be inferred"));
    }
    out[infer] = count / known;
  } else if (known != count) {
    return ctx.Invalid(absl::StrCat("cannot reshape ", ShapeString(in), " (", count,
                                    " elements) to ", ShapeString(out)));
  }
  return out;
}

// Sets output 0 to a view of x under `shape`.
absl::Status SetView(KernelContext& ctx, const Tensor& x, Shape shape) {
  absl::StatusOr<Tensor> v = x.Reshaped(std::move(shape));
  if (!v.ok()) return LabelStatus(ctx.info(), v.status());
  ctx.SetOutput(0, *std::move(v));
  return absl::OkStatus();
}

// Reshape: the target shape is input 1 (opset >= 5) or the 'shape' attribute (before).
absl::Status ReshapeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  std::vector<int64_t> spec;
  const int64_t opset = ctx.info().opset();
  if (opset != 0 && opset < 5) {
    absl::StatusOr<std::vector<int64_t>> s = ctx.info().RequireInts("shape");
    if (!s.ok()) return s.status();
    spec = *std::move(s);
  } else {
    const Tensor* shape = ctx.input(1);
    if (shape == nullptr) return ctx.Invalid("input 1 (shape) is required");
    if (shape->rank() != 1) {
      return ctx.Invalid(absl::StrCat("input 1 (shape) must be 1-D, got ", shape->DebugString()));
    }
    absl::StatusOr<std::vector<int64_t>> s = InputInts(ctx, 1);
    if (!s.ok()) return s.status();
    spec = *std::move(s);
  }
  const bool allowzero = ctx.info().GetInt("allowzero", 0) != 0;
  absl::StatusOr<Shape> target = ReshapeTarget(ctx, (*x)->shape(), spec, allowzero);
  if (!target.ok()) return target.status();
  return SetView(ctx, **x, *std::move(target));
}

// Flatten: [prod(dims[:axis]), prod(dims[axis:])], axis in [-rank, rank].
absl::Status FlattenKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  const Shape& in = (*x)->shape();
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.info().GetInt("axis", 1);
  if (axis < -rank || axis > rank) {
    return ctx.Invalid(absl::StrCat("attribute 'axis' (", axis, ") is out of range for rank ",
                                    rank));
  }
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in[i];
  return SetView(ctx, **x, {outer, inner});
}

// The axes of Squeeze/Unsqueeze: the 'axes' attribute before opset 13, input 1 from 13.
// `present` is false when neither gives any.
absl::StatusOr<std::vector<int64_t>> AxesOf(const KernelContext& ctx, bool* present) {
  const int64_t opset = ctx.info().opset();
  *present = true;
  if (opset != 0 && opset < 13) {
    if (!ctx.info().has_attr("axes")) {
      *present = false;
      return std::vector<int64_t>();
    }
    return ctx.info().GetInts("axes");
  }
  if (ctx.input(1) == nullptr) {
    *present = false;
    return std::vector<int64_t>();
  }
  if (ctx.input(1)->rank() > 1) {
    return ctx.Invalid(absl::StrCat("input 1 (axes) must be 1-D, got ",
                                    ctx.input(1)->DebugString()));
  }
  return InputInts(ctx, 1);
}

// Normalises `axes` against `rank`, rejecting out-of-range and repeated axes; the result is a
// per-dim mask.
absl::StatusOr<std::vector<bool>> AxisMask(const KernelContext& ctx,
                                           absl::Span<const int64_t> axes, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return ctx.Invalid(absl::StrCat("axis ", a, " in axes ", ShapeString(axes),
                                      " is out of range for rank ", rank));
    }
    if (a < 0) a += rank;
    if (mask[a]) {
      return ctx.Invalid(absl::StrCat("axes ", ShapeString(axes), " repeat axis ", a));
    }
    mask[a] = true;
  }
  return mask;
}

// Squeeze: removes the listed dims (each must be 1), or every dim of 1 when none are listed.
absl::Status SqueezeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  const Shape& in = (*x)->shape();
  bool present = false;
  absl::StatusOr<std::vector<int64_t>> axes = AxesOf(ctx, &present);
  if (!axes.ok()) return axes.status();
  Shape out;
  if (!present) {
    for (int64_t d : in) {
      if (d != 1) out.push_back(d);
    }
    return SetView(ctx, **x, std::move(out));
  }
  absl::StatusOr<std::vector<bool>> mask =
      AxisMask(ctx, *axes, static_cast<int64_t>(in.size()));
  if (!mask.ok()) return mask.status();
  for (size_t i = 0; i < in.size(); ++i) {
    if (!(*mask)[i]) {
      out.push_back(in[i]);
      continue;
    }
    if (in[i] != 1) {
      return ctx.Invalid(absl::StrCat("cannot squeeze axis ", i, " of ", ShapeString(in),
                                      ": its size is ", in[i], ", not 1"));
    }
  }
  return SetView(ctx, **x, std::move(out));
}

// Unsqueeze: inserts dims of 1 at `axes`, which index the output (rank + len(axes)).
absl::Status UnsqueezeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  const Shape& in = (*x)->shape();
  bool present = false;
  absl::StatusOr<std::vector<int64_t>> axes = AxesOf(ctx, &present);
  if (!axes.ok()) return axes.status();
  if (!present) return ctx.Invalid("axes are required (attribute before opset 13, else input 1)");
  const int64_t rank = static_cast<int64_t>(in.size() + axes->size());
  absl::StatusOr<std::vector<bool>> mask = AxisMask(ctx, *axes, rank);
  if (!mask.ok()) return mask.status();
  Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back((*mask)[i] ? 1 : in[next++]);
  return SetView(ctx, **x, std::move(out));
}

// --- Expand ---------------------------------------------------------------------------------

// Expand: input 0 broadcast (numpy rules, both ways) with the shape in input 1.
absl::Status ExpandKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xin = RequireInput(ctx, 0);
  if (!xin.ok()) return xin.status();
  const Tensor& x = **xin;
  const Tensor* shape_t = ctx.input(1);
  if (shape_t == nullptr) return ctx.Invalid("input 1 (shape) is required");
  if (shape_t->rank() > 1) {
    return ctx.Invalid(absl::StrCat("input 1 (shape) must be 1-D, got ", shape_t->DebugString()));
  }
  absl::StatusOr<std::vector<int64_t>> spec = InputInts(ctx, 1);
  if (!spec.ok()) return spec.status();
  Shape target(spec->begin(), spec->end());
  for (int64_t d : target) {
    if (d < 0) {
      return ctx.Invalid(absl::StrCat("input 1 (shape) ", ShapeString(target),
                                      " has a negative dim"));
    }
  }
  const Shape shapes[2] = {x.shape(), target};
  absl::StatusOr<Shape> out_shape = BroadcastShapes(shapes);
  if (!out_shape.ok()) return LabelStatus(ctx.info(), out_shape.status());
  if (*out_shape == x.shape()) {
    ctx.SetOutput(0, x);
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), *out_shape);
  if (!out.ok()) return out.status();
  return LabelStatus(ctx.info(), shape_internal::BroadcastCopy(ctx, x, **out));
}

// --- Dropout --------------------------------------------------------------------------------

// MT19937 as numpy's legacy RandomState uses it, so that a seeded training-mode Dropout draws
// the mask numpy's reference does: np.random.seed(seed); np.random.uniform(0, 1, shape).
class Mt19937 {
 public:
  explicit Mt19937(uint32_t seed) {
    state_[0] = seed;
    for (int i = 1; i < kN; ++i) {
      state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
    }
  }

  uint32_t Next() {
    if (pos_ >= kN) Refill();
    uint32_t y = state_[pos_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

  // A double in [0, 1) from 53 random bits.
  double NextDouble() {
    const uint32_t a = Next() >> 5;
    const uint32_t b = Next() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

 private:
  static constexpr int kN = 624;
  static constexpr int kM = 397;

  void Refill() {
    for (int i = 0; i < kN; ++i) {
      const uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % kN] & 0x7fffffffu);
      state_[i] = state_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    pos_ = 0;
  }

  uint32_t state_[kN];
  int pos_ = kN;
};

// Dropout: in inference (the default) output 0 views the input and the optional mask is all
// true. With training_mode (input 2, opset >= 12) and a ratio > 0, elements are dropped with
// probability ratio and the rest scaled by 1 / (1 - ratio); the 'seed' attribute makes the
// mask that of numpy's legacy generator.
absl::Status DropoutKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xin = RequireInput(ctx, 0);
  if (!xin.ok()) return xin.status();
  const Tensor& x = **xin;
  const int64_t opset = ctx.info().opset();
  bool training = false;
  float ratio = ctx.info().GetFloat("ratio", 0.5f);
  if (opset == 0 || opset >= 12) {
    ratio = 0.5f;
    if (const Tensor* r = ctx.input(1)) {
      if (r->num_elements() != 1) {
        return ctx.Invalid(absl::StrCat("input 1 (ratio) must be a scalar, got ", r->DebugString()));
      }
      ratio = static_cast<float>(r->ElementAsDouble(0));
    }
    if (const Tensor* t = ctx.input(2)) {
      if (t->dtype() != v1::DT_BOOL || t->num_elements() != 1) {
        return ctx.Invalid(absl::StrCat("input 2 (training_mode) must be a bool scalar, got ",
                                        t->DebugString()));
      }
      training = *t->data<bool>();
    }
  }
  if (training && !(ratio >= 0.0f && ratio < 1.0f)) {
    return ctx.Invalid(absl::StrCat("ratio ", ratio, " is not in [0, 1)"));
  }
  const bool want_mask = ctx.num_outputs() > 1 && ctx.output_wanted(1);
  const v1::DataType mask_type = (opset != 0 && opset < 10) ? x.dtype() : v1::DT_BOOL;
  if (!training || ratio == 0.0f) {
    ctx.SetOutput(0, x);
    if (!want_mask) return absl::OkStatus();
    absl::StatusOr<Tensor*> mask = ctx.AllocateOutput(1, mask_type, x.shape());
    if (!mask.ok()) return mask.status();
    Tensor& m = **mask;
    return LabelStatus(ctx.info(), DispatchAll(mask_type, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, std::string>) {
        return absl::UnimplementedError("a string mask is not supported");
      } else {
        std::fill_n(m.data<T>(), m.num_elements(), FromCompute<T>(1));
        return absl::OkStatus();
      }
    }));
  }
  Mt19937 rng(static_cast<uint32_t>(
      ctx.info().has_attr("seed") ? ctx.info().GetInt("seed", 0) : std::random_device{}()));
  const int64_t n = x.num_elements();
  std::vector<bool> keep(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) keep[i] = rng.NextDouble() >= static_cast<double>(ratio);
  absl::StatusOr<Tensor*> yout = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!yout.ok()) return yout.status();
  Tensor& y = **yout;
  const float scale = 1.0f / (1.0f - ratio);
  absl::Status s = DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      out[i] = keep[i] ? FromCompute<T>(ToCompute(in[i]) * scale) : FromCompute<T>(0);
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return LabelStatus(ctx.info(), s);
  if (!want_mask) return absl::OkStatus();
  absl::StatusOr<Tensor*> mask = ctx.AllocateOutput(1, v1::DT_BOOL, x.shape());
  if (!mask.ok()) return mask.status();
  bool* m = (*mask)->data<bool>();
  for (int64_t i = 0; i < n; ++i) m[i] = keep[i];
  return absl::OkStatus();
}

// --- ConstantOfShape ------------------------------------------------------------------------

// ConstantOfShape: a tensor of the shape in input 0 filled with the one-element 'value'
// attribute (default float32 0).
class ConstantOfShapeKernel : public OpKernel {
 public:
  explicit ConstantOfShapeKernel(Tensor value) : value_(std::move(value)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    Tensor value;
    if (info.has_attr("value")) {
      absl::StatusOr<Tensor> v = info.GetTensor("value");
      if (!v.ok()) return LabelStatus(info, v.status());
      if (v->num_elements() != 1) {
        return info.Invalid(absl::StrCat("attribute 'value' must have one element, got ",
                                         v->DebugString()));
      }
      value = *std::move(v);
    } else {
      value = Tensor::FromVector<float>(v1::DT_FLOAT32, {0.0f}, {1});
    }
    absl::Status s = DispatchAll(value.dtype(), [](auto) { return absl::OkStatus(); });
    if (!s.ok()) return LabelStatus(info, s);
    return std::unique_ptr<OpKernel>(std::make_unique<ConstantOfShapeKernel>(std::move(value)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor* shape_t = ctx.input(0);
    if (shape_t == nullptr) return ctx.Invalid("input 0 (shape) is required");
    if (shape_t->rank() > 1) {
      return ctx.Invalid(
          absl::StrCat("input 0 (shape) must be 1-D, got ", shape_t->DebugString()));
    }
    absl::StatusOr<std::vector<int64_t>> spec = InputInts(ctx, 0);
    if (!spec.ok()) return spec.status();
    Shape shape(spec->begin(), spec->end());
    for (int64_t d : shape) {
      if (d < 0) {
        return ctx.Invalid(absl::StrCat("input 0 (shape) ", ShapeString(shape),
                                        " has a negative dim"));
      }
    }
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, value_.dtype(), shape);
    if (!out.ok()) return out.status();
    Tensor& o = **out;
    return LabelStatus(ctx.info(), DispatchAll(value_.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T v = *TypedData<T>(value_);
      T* p = TypedData<T>(o);
      const int64_t n = o.num_elements();
      ctx.ParallelFor(n, 65536, [&](int64_t begin, int64_t end) {
        std::fill(p + begin, p + end, v);
      });
      return absl::OkStatus();
    }));
  }

 private:
  const Tensor value_;
};

}  // namespace

absl::Status shape_internal::BroadcastCopy(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  if (out.num_elements() == 0) return absl::OkStatus();
  return DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Shape shapes[1] = {x.shape()};
    const BroadcastIndexer idx(shapes, out.shape());
    const int64_t len = idx.inner_length();
    const bool step = idx.inner_step(0) != 0;
    const T* in = TypedData<T>(x);
    T* po = TypedData<T>(out);
    // Long runs (a scalar expanded to a long vector is one run) in blocks, so that no unit of
    // work is the whole output.
    const int64_t block = std::max<int64_t>(1, std::min<int64_t>(len, 32768));
    const int64_t blocks = (len + block - 1) / block;
    auto body = [&](int64_t begin, int64_t end) {
      int64_t off = 0;
      for (int64_t u = begin; u < end; ++u) {
        const int64_t r = u / blocks;
        const int64_t lo = (u % blocks) * block, hi = std::min(len, lo + block);
        idx.RunOffsets(r, &off);
        T* o = po + r * len;
        const T* s = in + off;
        if (step) {
          std::copy(s + lo, s + hi, o + lo);
        } else {
          std::fill(o + lo, o + hi, *s);
        }
      }
    };
    const int64_t grain = std::max<int64_t>(1, 32768 / block);
    ctx.ParallelFor(idx.num_runs() * blocks, grain, body);
    return absl::OkStatus();
  });
}

absl::Status RegisterTensorShapeKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Constant", KernelFactory(ConstantKernel::Create)));
  s.Update(registry.Register("Shape", ShapeKernel));
  s.Update(registry.Register("Size", SizeKernel));
  s.Update(registry.Register("Reshape", ReshapeKernel));
  s.Update(registry.Register("Flatten", FlattenKernel));
  s.Update(registry.Register("Squeeze", SqueezeKernel));
  s.Update(registry.Register("Unsqueeze", UnsqueezeKernel));
  s.Update(registry.Register("Expand", ExpandKernel));
  s.Update(registry.Register("Dropout", DropoutKernel));
  s.Update(registry.Register("ConstantOfShape", KernelFactory(ConstantOfShapeKernel::Create)));
  s.Update(shape_internal::RegisterTensorShapeGenKernels(registry));
  return s;
}

}  // namespace graphopt::runtime
