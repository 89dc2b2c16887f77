#include "runtime/kernels/kernel_util.h"

#include <algorithm>

#include "absl/strings/str_join.h"

namespace graphopt::runtime {

absl::StatusOr<Shape> BroadcastShapes(absl::Span<const Shape> shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    const size_t pad = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[pad + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::vector<std::string> names;
      for (const Shape& t : shapes) names.push_back(ShapeString(t));
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", absl::StrJoin(names, " and "), " do not broadcast"));
    }
  }
  return out;
}

BroadcastIndexer::BroadcastIndexer(absl::Span<const Shape> inputs, const Shape& out) {
  const int rank = static_cast<int>(out.size());
  const int n = static_cast<int>(inputs.size());
  // Per input, per output dim: its stride (0 when broadcast).
  std::vector<std::vector<int64_t>> full(n, std::vector<int64_t>(rank, 0));
  for (int k = 0; k < n; ++k) {
    const Shape& s = inputs[k];
    const int pad = rank - static_cast<int>(s.size());
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; --i) {
      const int j = i - pad;
      if (j < 0) break;
      if (s[j] != 1) full[k][i] = stride;
      stride *= s[j];
    }
  }
  // Collapse adjacent dims where every input is contiguous across them (or broadcast in both).
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(n);
  for (int i = 0; i < rank; ++i) {
    if (out[i] == 1) continue;
    bool merge = !dims.empty();
    for (int k = 0; merge && k < n; ++k) {
      const int64_t prev = strides[k].back();
      const int64_t cur = full[k][i];
      merge = (prev == 0 && cur == 0) || (cur != 0 && prev == cur * out[i]);
    }
    if (merge) {
      dims.back() *= out[i];
      for (int k = 0; k < n; ++k) strides[k].back() = full[k][i];
    } else {
      dims.push_back(out[i]);
      for (int k = 0; k < n; ++k) strides[k].push_back(full[k][i]);
    }
  }
  inner_steps_.assign(n, 0);
  if (dims.empty()) {
    inner_ = 1;
    for (int k = 0; k < n; ++k) inner_steps_[k] = 1;
    strides_.assign(n, {});
    runs_ = 1;
    return;
  }
  inner_ = dims.back();
  for (int k = 0; k < n; ++k) {
    inner_steps_[k] = strides[k].back() == 0 ? 0 : 1;
    strides[k].pop_back();
  }
  dims.pop_back();
  outer_dims_ = dims;
  strides_ = std::move(strides);
  runs_ = 1;
  for (int64_t d : outer_dims_) runs_ *= d;
}

void BroadcastIndexer::RunOffsets(int64_t r, int64_t* offsets) const {
  const int n = static_cast<int>(strides_.size());
  for (int k = 0; k < n; ++k) offsets[k] = 0;
  for (int i = static_cast<int>(outer_dims_.size()) - 1; i >= 0 && r > 0; --i) {
    const int64_t d = outer_dims_[i];
    const int64_t c = r % d;
    r /= d;
    for (int k = 0; k < n; ++k) offsets[k] += c * strides_[k][i];
  }
}

absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank, const KernelInfo& info) {
  if (axis < -rank || axis >= std::max(rank, 1)) {
    return info.Invalid(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int64_t> Strides(absl::Span<const int64_t> shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

absl::StatusOr<std::vector<int64_t>> InputInts(const KernelContext& ctx, int i) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return ctx.Invalid(absl::StrCat("input ", i, " is required"));
  absl::StatusOr<std::vector<int64_t>> v = t->ToInt64Vector();
  if (!v.ok()) return ctx.Invalid(absl::StrCat("input ", i, ": ", v.status().message()));
  return v;
}

absl::StatusOr<const Tensor*> RequireInput(const KernelContext& ctx, int i) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return ctx.Invalid(absl::StrCat("input ", i, " is required"));
  return t;
}

}  // namespace graphopt::runtime
