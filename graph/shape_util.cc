#include "graph/shape_util.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace graphopt {

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// Known factors of a shape: the product of the known sizes, the symbols (sorted), and whether
// any dim is unknown or the product overflowed.
struct Factors {
  int64_t known = 1;
  std::vector<std::string> symbols;
  bool unknown = false;
};

Factors FactorsOf(const Dims& dims, size_t begin, size_t end) {
  Factors f;
  for (size_t i = begin; i < end && i < dims.size(); ++i) {
    const Dim& d = dims[i];
    if (d.is_known() && d.size() >= 0) {
      std::optional<int64_t> p = CheckedMul(f.known, d.size());
      if (!p) {
        f.unknown = true;
      } else {
        f.known = *p;
      }
    } else if (d.is_symbol()) {
      f.symbols.push_back(d.symbol());
    } else {
      f.unknown = true;
    }
  }
  std::sort(f.symbols.begin(), f.symbols.end());
  return f;
}

// Removes the multiset `sub` from the multiset `from` (both sorted). False when `sub` is not
// contained in `from`.
bool SubtractSymbols(const std::vector<std::string>& from, const std::vector<std::string>& sub,
                     std::vector<std::string>* rest) {
  rest->clear();
  size_t j = 0;
  for (const std::string& s : from) {
    if (j < sub.size() && sub[j] == s) {
      ++j;
    } else {
      rest->push_back(s);
    }
  }
  return j == sub.size();
}

// ceil(a / b) for a >= 0, b > 0 without overflow.
int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> CheckedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<Dim> BroadcastDim(const Dim& a, const Dim& b) {
  if (a.is_known() && b.is_known()) {
    if (a.size() == b.size() || b.size() == 1) return a;
    if (a.size() == 1) return b;
    return std::nullopt;
  }
  // At most one is known from here on.
  if (a.is_known()) return a.size() == 1 ? b : a;
  if (b.is_known()) return b.size() == 1 ? a : b;
  if (a.is_symbol() && b.is_symbol() && a.symbol() == b.symbol()) return a;
  return Dim::Unknown();
}

absl::StatusOr<std::optional<Dims>> BroadcastShapes(
    const std::vector<std::optional<Dims>>& shapes) {
  size_t rank = 0;
  for (const std::optional<Dims>& s : shapes) {
    if (!s) return std::optional<Dims>();
    rank = std::max(rank, s->size());
  }
  Dims out(rank, Dim::Known(1));
  // For each output axis, the input whose dim last decided a known size other than 1.
  std::vector<int> decided_by(rank, -1);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Dims& s = *shapes[i];
    const size_t offset = rank - s.size();
    for (size_t k = 0; k < s.size(); ++k) {
      const size_t axis = offset + k;
      std::optional<Dim> d = BroadcastDim(out[axis], s[k]);
      if (!d) {
        const int j = std::max(decided_by[axis], 0);
        return absl::InvalidArgumentError(absl::StrCat(
            "cannot broadcast shapes ", ShapeToString(shapes[j]), " (operand ", j, ") and ",
            ShapeToString(shapes[i]), " (operand ", i, "): dim ", out[axis].ToString(), " vs ",
            s[k].ToString(), " at output axis ", axis));
      }
      if (s[k].is_known() && s[k].size() != 1) decided_by[axis] = static_cast<int>(i);
      out[axis] = *std::move(d);
    }
  }
  return std::optional<Dims>(std::move(out));
}

absl::Status CheckUnidirectionalBroadcast(const Dims& from, const Dims& to) {
  if (from.size() > to.size()) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(from),
                                                   " cannot be broadcast to ", ShapeToString(to),
                                                   ": it has more dims"));
  }
  const size_t offset = to.size() - from.size();
  for (size_t k = 0; k < from.size(); ++k) {
    const Dim& f = from[k];
    const Dim& t = to[offset + k];
    if (f.is_known() && f.size() != 1 && t.is_known() && f.size() != t.size()) {
      return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(from),
                                                     " cannot be broadcast to ",
                                                     ShapeToString(to)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Dim> MergeEqualDims(const Dim& a, const Dim& b) {
  if (a.is_known() && b.is_known()) {
    if (a.size() != b.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sizes ", a.size(), " and ", b.size(), " differ"));
    }
    return a;
  }
  if (a.is_known()) return a;
  if (b.is_known()) return b;
  if (a.is_symbol() && b.is_symbol()) return a.symbol() == b.symbol() ? a : Dim::Unknown();
  if (a.is_symbol()) return a;
  return b;
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, absl::string_view what) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat(what, " value ", axis,
                                                   " is out of range for rank ", rank,
                                                   " (expected [", -rank, ", ", rank - 1, "])"));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes, int64_t rank,
                                                   absl::string_view what) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t a : axes) {
    absl::StatusOr<int64_t> n = NormalizeAxis(a, rank, what);
    if (!n.ok()) return n.status();
    if (seen[*n]) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " repeats axis ", a, " (", *n, " after normalisation)"));
    }
    seen[*n] = true;
    out.push_back(*n);
  }
  return out;
}

Dim DimProduct(const Dims& dims, size_t begin, size_t end) {
  end = std::min(end, dims.size());
  if (begin >= end) return Dim::Known(1);
  Factors f = FactorsOf(dims, begin, end);
  if (f.unknown) return Dim::Unknown();
  if (f.symbols.empty()) return Dim::Known(f.known);
  if (f.symbols.size() == 1 && f.known == 1) return Dim::Symbol(f.symbols[0]);
  return Dim::Unknown();
}

absl::StatusOr<AutoPad> ParseAutoPad(absl::string_view value) {
  if (value.empty() || value == "NOTSET") return AutoPad::kNotSet;
  if (value == "SAME_UPPER") return AutoPad::kSameUpper;
  if (value == "SAME_LOWER") return AutoPad::kSameLower;
  if (value == "VALID") return AutoPad::kValid;
  return absl::InvalidArgumentError(
      absl::StrCat("attribute 'auto_pad' has unknown value '", value,
                   "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)"));
}

absl::StatusOr<Dim> ConvOutputDim(const Dim& in, int64_t kernel, int64_t stride,
                                  int64_t dilation, int64_t pad_begin, int64_t pad_end,
                                  AutoPad auto_pad, bool ceil_mode) {
  if (kernel <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("kernel size ", kernel, " is not positive"));
  }
  if (stride <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("stride ", stride, " is not positive"));
  }
  if (dilation <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("dilation ", dilation, " is not positive"));
  }
  if (pad_begin < 0 || pad_end < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pads ", pad_begin, ", ", pad_end, " must not be negative"));
  }
  std::optional<int64_t> km1 = CheckedMul(kernel - 1, dilation);
  std::optional<int64_t> dilated_or = km1 ? CheckedAdd(*km1, 1) : std::nullopt;
  if (!dilated_or) return Dim::Unknown();
  const int64_t dilated = *dilated_or;
  std::optional<int64_t> pads = CheckedAdd(pad_begin, pad_end);
  if (!pads) return Dim::Unknown();

  if (in.is_symbol()) {
    bool same = false;
    switch (auto_pad) {
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower:
        same = stride == 1;
        break;
      case AutoPad::kValid:
        same = stride == 1 && dilated == 1;
        break;
      case AutoPad::kNotSet:
        same = stride == 1 && *pads == dilated - 1;
        break;
    }
    return same ? in : Dim::Unknown();
  }
  if (!in.is_known() || in.size() < 0) return Dim::Unknown();
  const int64_t n = in.size();
  switch (auto_pad) {
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower:
      return Dim::Known(CeilDiv(n, stride));
    case AutoPad::kValid:
      if (n < dilated) {
        return absl::InvalidArgumentError(absl::StrCat("window of size ", dilated,
                                                       " does not fit input size ", n));
      }
      return Dim::Known((n - dilated) / stride + 1);
    case AutoPad::kNotSet:
      break;
  }
  std::optional<int64_t> padded = CheckedAdd(n, *pads);
  if (!padded) return Dim::Unknown();
  if (*padded < dilated) {
    return absl::InvalidArgumentError(absl::StrCat("window of size ", dilated,
                                                   " does not fit padded input size ", *padded,
                                                   " (input ", n, ", pads ", pad_begin, "+",
                                                   pad_end, ")"));
  }
  const int64_t span = *padded - dilated;
  int64_t out = (ceil_mode ? CeilDiv(span, stride) : span / stride) + 1;
  if (ceil_mode && out > 1) {
    // A last window that would start inside the end padding is dropped.
    std::optional<int64_t> last_start = CheckedMul(out - 1, stride);
    std::optional<int64_t> limit = CheckedAdd(n, pad_begin);
    if (last_start && limit && *last_start >= *limit) --out;
  }
  return Dim::Known(out);
}

absl::StatusOr<std::optional<Dims>> MatMulShape(const std::optional<Dims>& a,
                                                const std::optional<Dims>& b) {
  if (a && a->empty()) {
    return absl::InvalidArgumentError("operand A is a scalar; MatMul needs rank >= 1");
  }
  if (b && b->empty()) {
    return absl::InvalidArgumentError("operand B is a scalar; MatMul needs rank >= 1");
  }
  if (!a || !b) return std::optional<Dims>();
  Dims ea = *a;
  Dims eb = *b;
  if (ea.size() == 1) ea.insert(ea.begin(), Dim::Known(1));
  if (eb.size() == 1) eb.push_back(Dim::Known(1));
  const Dim& ka = ea[ea.size() - 1];
  const Dim& kb = eb[eb.size() - 2];
  if (ka.is_known() && kb.is_known() && ka.size() != kb.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inner dimensions differ: A ", ShapeToString(a), " has K=", ka.size(), " but B ",
        ShapeToString(b), " has K=", kb.size()));
  }
  std::vector<std::optional<Dims>> batches = {Dims(ea.begin(), ea.end() - 2),
                                              Dims(eb.begin(), eb.end() - 2)};
  absl::StatusOr<std::optional<Dims>> batch = BroadcastShapes(batches);
  if (!batch.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("batch dims of A ", ShapeToString(a),
                                                   " and B ", ShapeToString(b),
                                                   " do not broadcast: ",
                                                   batch.status().message()));
  }
  Dims out = **batch;
  if (a->size() > 1) out.push_back(ea[ea.size() - 2]);
  if (b->size() > 1) out.push_back(eb[eb.size() - 1]);
  return std::optional<Dims>(std::move(out));
}

absl::StatusOr<Dims> ReshapeOutputDims(const std::optional<Dims>& input, const Dims& target,
                                       bool allowzero) {
  Dims out(target.size());
  int infer = -1;
  bool has_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    const Dim& t = target[i];
    if (!t.is_known()) {
      out[i] = t;
      continue;
    }
    const int64_t v = t.size();
    if (v == -1) {
      if (infer >= 0) {
        return absl::InvalidArgumentError(absl::StrCat("shape has more than one -1 (at indices ",
                                                       infer, " and ", i, ")"));
      }
      infer = static_cast<int>(i);
      continue;
    }
    if (v < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape entry ", v, " at index ", i, " is invalid"));
    }
    if (v == 0) {
      has_zero = true;
      if (!allowzero) {
        if (!input) {
          out[i] = Dim::Unknown();
        } else if (i >= input->size()) {
          return absl::InvalidArgumentError(
              absl::StrCat("shape entry 0 at index ", i, " copies a dim the input ",
                           ShapeToString(input), " does not have"));
        } else {
          out[i] = (*input)[i];
        }
        continue;
      }
    }
    out[i] = Dim::Known(v);
  }
  if (allowzero && has_zero && infer >= 0) {
    return absl::InvalidArgumentError("shape contains both 0 and -1 while allowzero is set");
  }
  if (!input) return out;
  const Factors in = FactorsOf(*input, 0, input->size());
  if (infer >= 0) {
    out[infer] = Dim::Unknown();
    Dims others = out;
    others.erase(others.begin() + infer);
    const Factors rest = FactorsOf(others, 0, others.size());
    if (in.unknown || rest.unknown || rest.known == 0) return out;
    std::vector<std::string> remaining;
    if (!SubtractSymbols(in.symbols, rest.symbols, &remaining)) return out;
    if (in.known % rest.known != 0) {
      if (!remaining.empty()) return out;
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot infer the -1 entry: the input ", ShapeToString(input), " has ", in.known,
          " elements, which the other entries' product ", rest.known, " does not divide"));
    }
    const int64_t q = in.known / rest.known;
    if (remaining.empty()) {
      out[infer] = Dim::Known(q);
    } else if (remaining.size() == 1 && q == 1) {
      out[infer] = Dim::Symbol(remaining[0]);
    }
    return out;
  }
  const Factors res = FactorsOf(out, 0, out.size());
  if (!in.unknown && !res.unknown && in.symbols == res.symbols && in.known != res.known) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reshape ", ShapeToString(input),
                                                   " to ", ShapeToString(out),
                                                   ": element counts differ"));
  }
  return out;
}

SliceRange ComputeSliceRange(int64_t size, int64_t start, int64_t end, int64_t step) {
  SliceRange r;
  if (size <= 0 || step == 0) return r;
  if (start < 0) start += size;  // start >= INT64_MIN + 1 after this: no overflow
  if (end < 0) end += size;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, 0, size);
    if (end <= start) return r;
    r.first = start;
    r.count = CeilDiv(end - start, step);
  } else {
    start = std::clamp<int64_t>(start, 0, size - 1);
    end = std::clamp<int64_t>(end, -1, size - 1);
    if (start <= end) return r;
    const uint64_t diff = static_cast<uint64_t>(start - end);
    const uint64_t s = step == kInt64Min ? (uint64_t{1} << 63) : static_cast<uint64_t>(-step);
    r.first = start;
    r.count = static_cast<int64_t>(diff / s + (diff % s != 0 ? 1 : 0));
  }
  return r;
}

Dim SliceDim(const Dim& in, int64_t start, int64_t end, int64_t step) {
  if (in.is_known() && in.size() >= 0) {
    return Dim::Known(ComputeSliceRange(in.size(), start, end, step).count);
  }
  if (in.is_symbol()) {
    if (step == 1 && start == 0 && end == kInt64Max) return in;
    if (step == -1 && (start == -1 || start == kInt64Max) && end == kInt64Min) return in;
  }
  return Dim::Unknown();
}

}  // namespace graphopt
