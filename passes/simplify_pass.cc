#include "passes/simplify_pass.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "graph/inference.h"
#include "passes/rewrite_driver.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

// Constants larger than this are not inspected for neutral elements.
constexpr int64_t kMaxInspectedElements = int64_t{1} << 16;

struct Options {
  // x + (+0.0) and x - (-0.0) are x except for x = -0.0; allowed only when asked.
  bool ignore_signed_zeros = false;
};

// What a constant operand of an arithmetic node is, for the neutral-element rules: its dtype
// and dims, and whether all its elements are one, zeros of either sign, or -0.0 / +0.0 only.
struct ConstantSummary {
  bool known = false;  // a constant of at most kMaxInspectedElements numeric elements
  v1::DataType dtype = v1::DT_UNDEFINED;
  std::vector<int64_t> dims;
  bool all_one = false;
  bool all_zero = false;
  bool all_negative_zero = false;
  bool all_positive_zero = false;
};

ConstantSummary Summarize(const ConstantView& c) {
  ConstantSummary s;
  if (c.num_elements() == 0) return s;
  s.known = true;
  s.dtype = c.dtype();
  s.dims = c.dims();
  s.all_one = s.all_zero = s.all_negative_zero = s.all_positive_zero = true;
  for (int64_t i = 0; i < c.num_elements(); ++i) {
    const double e = c.AsDouble(i);
    s.all_one &= e == 1;
    s.all_zero &= e == 0;
    s.all_negative_zero &= e == 0 && std::signbit(e);
    s.all_positive_zero &= e == 0 && !std::signbit(e);
  }
  return s;
}

// Lossless (exact and injective) element conversions `from` -> `to` that the runtime computes
// by value. Half-precision sources are left out: the runtime canonicalises their NaNs.
bool LosslessCast(v1::DataType from, v1::DataType to) {
  using v1::DataType;
  auto in = [to](std::initializer_list<DataType> list) {
    return std::find(list.begin(), list.end(), to) != list.end();
  };
  switch (from) {
    case v1::DT_BOOL:
      return in({v1::DT_INT8, v1::DT_UINT8, v1::DT_INT16, v1::DT_UINT16, v1::DT_INT32,
                 v1::DT_UINT32, v1::DT_INT64, v1::DT_UINT64, v1::DT_FLOAT32, v1::DT_FLOAT64});
    case v1::DT_INT8:
      return in({v1::DT_INT16, v1::DT_INT32, v1::DT_INT64, v1::DT_FLOAT32, v1::DT_FLOAT64});
    case v1::DT_UINT8:
      return in({v1::DT_INT16, v1::DT_UINT16, v1::DT_INT32, v1::DT_UINT32, v1::DT_INT64,
                 v1::DT_UINT64, v1::DT_FLOAT32, v1::DT_FLOAT64});
    case v1::DT_INT16:
      return in({v1::DT_INT32, v1::DT_INT64, v1::DT_FLOAT32, v1::DT_FLOAT64});
    case v1::DT_UINT16:
      return in({v1::DT_INT32, v1::DT_UINT32, v1::DT_INT64, v1::DT_UINT64, v1::DT_FLOAT32,
                 v1::DT_FLOAT64});
    case v1::DT_INT32:
      return in({v1::DT_INT64, v1::DT_FLOAT64});
    case v1::DT_UINT32:
      return in({v1::DT_INT64, v1::DT_UINT64, v1::DT_FLOAT64});
    case v1::DT_FLOAT32:
      // Exact for every float; the round trip back keeps every bit pattern but signalling
      // NaNs, which come out quiet (as any float arithmetic leaves them).
      return to == v1::DT_FLOAT64;
    default:
      return false;
  }
}

const v1::Attribute* Attr(const Node& n, const char* name) {
  auto it = n.attributes.find(name);
  return it == n.attributes.end() ? nullptr : &it->second;
}

std::optional<int> RankOf(const Graph& graph, ValueId v) {
  const std::optional<Dims>& shape = graph.value(v).type.shape;
  if (!shape) return std::nullopt;
  return static_cast<int>(shape->size());
}

// Normalised, sorted axes, or nullopt when one is out of range or repeated.
std::optional<std::vector<int64_t>> NormalizedAxes(std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

// What the patterns share during one run: the options, and the summaries of the constants
// they inspected (a constant many nodes read is read once).
struct State {
  Options options;
  absl::flat_hash_map<int32_t, ConstantSummary> summaries;
  const ConstantSummary not_constant{};

  const ConstantSummary& SummaryOf(const RewriteContext& c, ValueId value) {
    // Most operands are not constants: those are answered without growing the table.
    if (ConstantTensorOf(c.graph, value) == nullptr) return not_constant;
    auto [it, inserted] = summaries.try_emplace(value.value());
    if (inserted) {
      std::optional<ConstantView> view =
          ConstantValue(c.graph, value, c.hidden, kMaxInspectedElements);
      if (view) it->second = Summarize(*view);
    }
    return it->second;
  }
};

constexpr char kInterface[] = "connects graph inputs/initializers and outputs";

// Replaces the root by `x` (its output's readers read x); refused when the interface forbids it.
RewriteResult Bypass(RewriteContext& c, NodeId id, ValueId x) {
  if (ReplaceNodeByValue(c.graph, id, x, c.hidden)) return RewriteResult::Applied();
  return RewriteResult::Refused(kInterface);
}

// Input `i` of the root, when present.
ValueId In(const RewriteContext& c, NodeId id, size_t i) {
  const Node& n = c.graph.node(id);
  return i < n.inputs.size() ? n.inputs[i] : ValueId();
}

// Output 0 of the root, when present.
ValueId Out(const RewriteContext& c, NodeId id) {
  const Node& n = c.graph.node(id);
  return n.outputs.empty() ? ValueId() : n.outputs[0];
}

// The input of the root's producer of input 0 when that producer runs `op` and its own input 0
// has no hidden access (the rewrite makes the root read it); invalid otherwise.
ValueId InnerSource(const RewriteContext& c, NodeId id, const char* op, NodeId* inner = nullptr) {
  const NodeId p = ProducerOf(c.graph, In(c, id, 0), op);
  if (!p.valid()) return ValueId();
  const ValueId source = In(c, p, 0);
  if (!source.valid() || c.hidden.any(source)) return ValueId();
  if (inner != nullptr) *inner = p;
  return source;
}

// A cheap match: the root's producer of input 0 runs `op`.
std::function<bool(const RewriteContext&, NodeId)> After(const char* op) {
  return [op](const RewriteContext& c, NodeId id) {
    return ProducerOf(c.graph, In(c, id, 0), op).valid();
  };
}

// True when `x` is a MatMul's output, which is never -0.0: each element is a sum that starts
// from +0.0 (as ONNX's reference, numpy, BLAS and the runtime's kernels compute it), and a sum
// that starts from +0.0 is never -0.0 in round-to-nearest. So x + (+0.0) is x bit for bit: the
// all-zero bias Add that exporters write after a Linear without bias, or after zero-initialised
// biases.
bool NeverNegativeZero(const RewriteContext& c, ValueId x) {
  return ProducerOf(c.graph, x, "MatMul").valid();
}

// x + c, c + x, x - c, x * c, c * x, x / c, x ** c, with c a constant that is the operation's
// neutral element and cannot broadcast x to another shape; the zero's sign keeps -0.0 intact.
RewriteResult NeutralOperand(State& s, RewriteContext& c, NodeId id) {
  const Node& n = c.graph.node(id);
  if (n.inputs.size() != 2 || !n.inputs[0].valid() || !n.inputs[1].valid() || !Out(c, id).valid()) {
    return RewriteResult::NoMatch();
  }
  const std::string& op = n.op_type;
  const bool commutative = op == "Add" || op == "Mul";
  for (int x_index : {0, 1}) {
    if (x_index == 1 && !commutative) break;
    const ValueId x = n.inputs[x_index];
    const ConstantSummary& k = s.SummaryOf(c, n.inputs[1 - x_index]);
    if (!k.known) continue;
    const TensorType& xt = c.graph.value(x).type;
    const TensorType& out = c.graph.value(n.outputs[0]).type;
    // Half-precision arithmetic runs in float32 and canonicalises NaNs on the way back, so
    // even x * 1 is not x bit for bit there.
    if (xt.dtype == v1::DT_UNDEFINED || out.dtype != xt.dtype || xt.dtype == v1::DT_FLOAT16 ||
        xt.dtype == v1::DT_BFLOAT16) {
      continue;
    }
    const bool is_float = IsFloatingPoint(xt.dtype);
    const bool signed_zero = is_float && !s.options.ignore_signed_zeros;
    bool neutral = false;
    if (op == "Add") {
      // -0.0 + -0.0 is -0.0 but -0.0 + +0.0 is +0.0: only a negative zero is neutral, unless x
      // cannot be -0.0.
      neutral = signed_zero ? k.all_negative_zero || (k.all_zero && NeverNegativeZero(c, x))
                            : k.all_zero;
    } else if (op == "Sub") {
      neutral = signed_zero ? k.all_positive_zero : k.all_zero;
    } else if (op == "Pow") {
      // Integer bases with a floating exponent go through double: exact only below 2^53.
      neutral = k.all_one && (is_float || (IsInteger(xt.dtype) && IsInteger(k.dtype)));
    } else {
      neutral = k.all_one;
    }
    if (!neutral) continue;
    // The result has x's shape when the constant's dims are all 1 and its rank is not above
    // x's, or when inference says so.
    bool keeps_shape = SameStaticShape(xt, out);
    if (!keeps_shape) {
      bool ones = true;
      for (int64_t d : k.dims) ones &= d == 1;
      keeps_shape = ones && (k.dims.empty() || (xt.shape && k.dims.size() <= xt.shape->size()));
    }
    if (!keeps_shape) continue;
    return Bypass(c, id, x);
  }
  return RewriteResult::NoMatch();
}

// Perm of a Transpose reading a value of rank `rank` (nullopt rank: only an explicit perm).
std::optional<std::vector<int64_t>> PermOf(const Node& n, std::optional<int> rank) {
  std::optional<std::vector<int64_t>> perm = IntsAttr(n, "perm");
  if (!perm) {
    if (Attr(n, "perm") != nullptr || !rank) return std::nullopt;
    perm.emplace();
    for (int k = *rank - 1; k >= 0; --k) perm->push_back(k);
  }
  std::vector<char> seen(perm->size(), 0);
  for (int64_t p : *perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm->size()) || seen[p]) return std::nullopt;
    seen[p] = 1;
  }
  if (rank && static_cast<int>(perm->size()) != *rank) return std::nullopt;
  return perm;
}

bool IsIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// The root's perm composed after its producer's: out[i] = x[q[i]] = source[p[q[i]]].
std::optional<std::vector<int64_t>> ComposedPerm(const RewriteContext& c, NodeId id,
                                                 ValueId* source) {
  NodeId inner;
  *source = InnerSource(c, id, "Transpose", &inner);
  if (!source->valid()) return std::nullopt;
  std::optional<std::vector<int64_t>> outer =
      PermOf(c.graph.node(id), RankOf(c.graph, In(c, id, 0)));
  std::optional<std::vector<int64_t>> first =
      PermOf(c.graph.node(inner), RankOf(c.graph, *source));
  if (!outer || !first || first->size() != outer->size()) return std::nullopt;
  std::vector<int64_t> composed(outer->size());
  for (size_t i = 0; i < composed.size(); ++i) composed[i] = (*first)[(*outer)[i]];
  return composed;
}

// Transpose(x, identity) = x.
RewriteResult TransposeIdentity(RewriteContext& c, NodeId id) {
  const ValueId x = In(c, id, 0);
  if (!x.valid()) return RewriteResult::NoMatch();
  std::optional<std::vector<int64_t>> perm = PermOf(c.graph.node(id), RankOf(c.graph, x));
  if (!perm || !IsIdentityPerm(*perm)) return RewriteResult::NoMatch();
  return Bypass(c, id, x);
}

// Transpose(Transpose(x, p), q) = x when p[q[i]] = i.
RewriteResult TransposePair(RewriteContext& c, NodeId id) {
  ValueId source;
  std::optional<std::vector<int64_t>> composed = ComposedPerm(c, id, &source);
  if (!composed || !IsIdentityPerm(*composed)) return RewriteResult::NoMatch();
  return Bypass(c, id, source);
}

// Transpose(Transpose(x, p), q) = Transpose(x, p∘q).
RewriteResult TransposeChain(RewriteContext& c, NodeId id) {
  ValueId source;
  std::optional<std::vector<int64_t>> composed = ComposedPerm(c, id, &source);
  if (!composed) return RewriteResult::NoMatch();
  v1::Attribute perm;
  for (int64_t p : *composed) perm.mutable_ints()->add_values(p);
  c.graph.mutable_node(id).attributes["perm"] = std::move(perm);
  c.graph.SetInput(id, 0, source);
  return RewriteResult::Applied();
}

// The target of a Reshape as given (input 1, or the 'shape' attribute before opset 5).
std::optional<std::vector<int64_t>> ReshapeTarget(const RewriteContext& c, const Node& n) {
  if (c.opset != 0 && c.opset < 5) return IntsAttr(n, "shape");
  if (n.inputs.size() < 2 || !n.inputs[1].valid()) return std::nullopt;
  return ConstantInts(c.graph, n.inputs[1], c.hidden);
}

// Reshape(Reshape(x, s1), s2) = Reshape(x, s2) when s2 copies no dim (no 0 without allowzero).
RewriteResult ReshapeChain(RewriteContext& c, NodeId id) {
  const ValueId source = InnerSource(c, id, "Reshape");
  if (!source.valid()) return RewriteResult::NoMatch();
  const Node& n = c.graph.node(id);
  std::optional<std::vector<int64_t>> target = ReshapeTarget(c, n);
  const bool allowzero = IntAttr(n, "allowzero").value_or(0) != 0;
  if (!target || (!allowzero && std::find(target->begin(), target->end(), 0) != target->end())) {
    return RewriteResult::NoMatch();
  }
  c.graph.SetInput(id, 0, source);
  return RewriteResult::Applied();
}

// Op(x) = x for a Reshape or Expand whose output has x's static shape.
RewriteResult SameShape(RewriteContext& c, NodeId id) {
  const ValueId x = In(c, id, 0), y = Out(c, id);
  if (!x.valid() || !y.valid()) return RewriteResult::NoMatch();
  const TensorType& in = c.graph.value(x).type;
  const TensorType& out = c.graph.value(y).type;
  if (in.dtype != out.dtype || !SameStaticShape(in, out)) return RewriteResult::NoMatch();
  return Bypass(c, id, x);
}

// Slice(x, starts, ends, axes, steps of 1) = x when the output has x's static shape.
RewriteResult SliceWhole(RewriteContext& c, NodeId id) {
  const ValueId steps_value = In(c, id, 4);
  if (steps_value.valid()) {
    std::optional<std::vector<int64_t>> steps = ConstantInts(c.graph, steps_value, c.hidden);
    if (!steps) return RewriteResult::NoMatch();
    for (int64_t s : *steps) {
      if (s != 1) return RewriteResult::NoMatch();
    }
  }
  return SameShape(c, id);
}

// Cast(x, to = type of x) = x.
RewriteResult CastSameType(RewriteContext& c, NodeId id) {
  std::optional<int64_t> to = IntAttr(c.graph.node(id), "to");
  const ValueId x = In(c, id, 0);
  if (!to || !x.valid()) return RewriteResult::NoMatch();
  const v1::DataType x_type = c.graph.value(x).type.dtype;
  if (x_type == v1::DT_UNDEFINED || x_type != *to) return RewriteResult::NoMatch();
  return Bypass(c, id, x);
}

// The source of a Cast of a lossless Cast (the types: source -> middle -> last); invalid when
// the root is no such Cast.
ValueId LosslessInnerCast(const RewriteContext& c, NodeId id, v1::DataType* from,
                          v1::DataType* last) {
  NodeId inner;
  const ValueId source = InnerSource(c, id, "Cast", &inner);
  std::optional<int64_t> to = IntAttr(c.graph.node(id), "to");
  if (!source.valid() || !to) return ValueId();
  std::optional<int64_t> middle = IntAttr(c.graph.node(inner), "to");
  if (!middle) return ValueId();
  *from = c.graph.value(source).type.dtype;
  *last = static_cast<v1::DataType>(*to);
  if (!LosslessCast(*from, static_cast<v1::DataType>(*middle))) return ValueId();
  return source;
}

// Cast(Cast(x, lossless to T), type of x) = x.
RewriteResult CastRoundTrip(RewriteContext& c, NodeId id) {
  v1::DataType from, last;
  const ValueId source = LosslessInnerCast(c, id, &from, &last);
  if (!source.valid() || last != from) return RewriteResult::NoMatch();
  return Bypass(c, id, source);
}

// Cast(Cast(x, lossless to T), U) = Cast(x, U) when x -> U is lossless too.
RewriteResult CastChain(RewriteContext& c, NodeId id) {
  v1::DataType from, last;
  const ValueId source = LosslessInnerCast(c, id, &from, &last);
  if (!source.valid() || last == from || !LosslessCast(from, last)) {
    return RewriteResult::NoMatch();
  }
  c.graph.SetInput(id, 0, source);
  return RewriteResult::Applied();
}

// Shape(x) and Size(x) of a fully known shape are constants.
RewriteResult ShapeOfStatic(RewriteContext& c, NodeId id) {
  const Node& n = c.graph.node(id);
  if (n.inputs.empty() || !n.inputs[0].valid() || n.outputs.size() != 1 ||
      !n.outputs[0].valid()) {
    return RewriteResult::NoMatch();
  }
  const std::optional<Dims>& shape = c.graph.value(n.inputs[0]).type.shape;
  if (!FullyKnown(shape)) return RewriteResult::NoMatch();
  const bool size = n.op_type == "Size";
  const int64_t rank = static_cast<int64_t>(shape->size());
  std::vector<int64_t> values;
  if (size) {
    std::optional<int64_t> count = NumElements(*shape);
    if (!count) return RewriteResult::NoMatch();
    values.push_back(*count);
  } else {
    // The runtime's Shape: start and end clamped to [0, rank] after adding rank to negatives.
    auto clamp = [rank](int64_t v) {
      if (v < 0) v += rank;
      return std::min(std::max<int64_t>(v, 0), rank);
    };
    const int64_t start = clamp(IntAttr(n, "start").value_or(0));
    const int64_t end = clamp(IntAttr(n, "end").value_or(rank));
    for (int64_t i = start; i < end; ++i) values.push_back((*shape)[i].size());
  }
  v1::Tensor tensor;
  tensor.set_dtype(v1::DT_INT64);
  if (!size) tensor.add_dims(static_cast<int64_t>(values.size()));
  tensor.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                                  values.size() * sizeof(int64_t)));
  ReplaceOutputByInitializer(c.graph, id, 0, std::move(tensor));
  return RewriteResult::Applied();
}

// Squeeze/Unsqueeze axes: the attribute before opset 13, input 1 from 13. nullopt when absent
// or not constant.
std::optional<std::vector<int64_t>> AxesOf(const RewriteContext& c, const Node& n) {
  if (c.opset != 0 && c.opset < 13) return IntsAttr(n, "axes");
  if (n.inputs.size() < 2 || !n.inputs[1].valid()) return std::nullopt;
  return ConstantInts(c.graph, n.inputs[1], c.hidden);
}

// Squeeze's axes normalised against its input `x`; without axes, the dims of x known to be 1
// (all of x's dims must be known then).
std::optional<std::vector<int64_t>> SqueezedAxes(const RewriteContext& c, const Node& squeeze,
                                                 ValueId x) {
  const std::optional<Dims>& shape = c.graph.value(x).type.shape;
  std::optional<std::vector<int64_t>> axes = AxesOf(c, squeeze);
  const bool has_axes_input = squeeze.inputs.size() > 1 && squeeze.inputs[1].valid();
  if (!axes) {
    if (has_axes_input || (c.opset != 0 && c.opset < 13 && Attr(squeeze, "axes") != nullptr) ||
        !FullyKnown(shape)) {
      return std::nullopt;
    }
    axes.emplace();
    for (size_t i = 0; i < shape->size(); ++i) {
      if ((*shape)[i].size() == 1) axes->push_back(static_cast<int64_t>(i));
    }
    return axes;
  }
  if (!shape) return std::nullopt;
  return NormalizedAxes(*axes, static_cast<int64_t>(shape->size()));
}

// Squeeze(Unsqueeze(x, A), A) = x.
RewriteResult UnsqueezeSqueeze(RewriteContext& c, NodeId id) {
  NodeId inner_id;
  const ValueId source = InnerSource(c, id, "Unsqueeze", &inner_id);
  if (!source.valid()) return RewriteResult::NoMatch();
  std::optional<std::vector<int64_t>> inserted = AxesOf(c, c.graph.node(inner_id));
  std::optional<int> source_rank = RankOf(c.graph, source);
  if (!inserted || !source_rank) return RewriteResult::NoMatch();
  const int64_t rank = *source_rank + static_cast<int64_t>(inserted->size());
  inserted = NormalizedAxes(*inserted, rank);
  if (!inserted) return RewriteResult::NoMatch();
  std::optional<std::vector<int64_t>> removed = SqueezedAxes(c, c.graph.node(id), In(c, id, 0));
  if (!removed || *removed != *inserted) return RewriteResult::NoMatch();
  return Bypass(c, id, source);
}

// Unsqueeze(Squeeze(x, A), A) = x when x's dims at A are known to be 1.
RewriteResult SqueezeUnsqueeze(RewriteContext& c, NodeId id) {
  NodeId inner_id;
  const ValueId source = InnerSource(c, id, "Squeeze", &inner_id);
  if (!source.valid()) return RewriteResult::NoMatch();
  std::optional<std::vector<int64_t>> removed = SqueezedAxes(c, c.graph.node(inner_id), source);
  const std::optional<Dims>& shape = c.graph.value(source).type.shape;
  if (!removed || !shape) return RewriteResult::NoMatch();
  for (int64_t a : *removed) {
    if (!(*shape)[a].is_known() || (*shape)[a].size() != 1) return RewriteResult::NoMatch();
  }
  std::optional<std::vector<int64_t>> inserted = AxesOf(c, c.graph.node(id));
  if (!inserted) return RewriteResult::NoMatch();
  inserted = NormalizedAxes(*inserted, static_cast<int64_t>(shape->size()));
  if (!inserted || *inserted != *removed) return RewriteResult::NoMatch();
  return Bypass(c, id, source);
}

// Pad(x, pads = 0) = x.
RewriteResult PadZero(RewriteContext& c, NodeId id) {
  const Node& n = c.graph.node(id);
  const ValueId x = In(c, id, 0);
  if (!x.valid()) return RewriteResult::NoMatch();
  std::optional<std::vector<int64_t>> pads;
  if (c.opset != 0 && c.opset < 11) {
    pads = IntsAttr(n, "pads");
    if (!pads) pads = IntsAttr(n, "paddings");
  } else if (In(c, id, 1).valid()) {
    pads = ConstantInts(c.graph, In(c, id, 1), c.hidden);
  }
  if (!pads) return RewriteResult::NoMatch();
  for (int64_t p : *pads) {
    if (p != 0) return RewriteResult::NoMatch();
  }
  return Bypass(c, id, x);
}

// Concat(x) = x.
RewriteResult ConcatSingle(RewriteContext& c, NodeId id) {
  const Node& n = c.graph.node(id);
  if (n.inputs.size() != 1 || !n.inputs[0].valid()) return RewriteResult::NoMatch();
  return Bypass(c, id, n.inputs[0]);
}

// Neg(Neg(x)) = x; Not(Not(x)) = x (each flips every sign or bit; integers wrap alike).
RewriteResult InvolutionPair(RewriteContext& c, NodeId id) {
  const ValueId source = InnerSource(c, id, c.graph.node(id).op_type.c_str());
  if (!source.valid()) return RewriteResult::NoMatch();
  return Bypass(c, id, source);
}

// The patterns, tried in this order for a root of their ops.
std::vector<RewritePattern> Patterns(State* s) {
  return {
      {"neutral_operand",
       {"Add", "Sub", "Mul", "Div", "Pow"},
       [](const RewriteContext& c, NodeId id) {
         const Node& n = c.graph.node(id);
         return n.inputs.size() == 2 && (ConstantTensorOf(c.graph, n.inputs[0]) != nullptr ||
                                         ConstantTensorOf(c.graph, n.inputs[1]) != nullptr);
       },
       [s](RewriteContext& c, NodeId id) { return NeutralOperand(*s, c, id); }},
      {"transpose_identity", {"Transpose"}, nullptr, TransposeIdentity},
      {"transpose_pair", {"Transpose"}, After("Transpose"), TransposePair},
      {"transpose_chain", {"Transpose"}, After("Transpose"), TransposeChain},
      {"reshape_chain", {"Reshape"}, After("Reshape"), ReshapeChain},
      {"reshape_same_shape", {"Reshape"}, nullptr, SameShape},
      {"expand_same_shape", {"Expand"}, nullptr, SameShape},
      {"slice_whole", {"Slice"}, nullptr, SliceWhole},
      {"cast_same_type", {"Cast"}, nullptr, CastSameType},
      {"cast_round_trip", {"Cast"}, After("Cast"), CastRoundTrip},
      {"cast_chain", {"Cast"}, After("Cast"), CastChain},
      {"shape_of_static", {"Shape"}, nullptr, ShapeOfStatic},
      {"size_of_static", {"Size"}, nullptr, ShapeOfStatic},
      {"unsqueeze_squeeze", {"Squeeze"}, After("Unsqueeze"), UnsqueezeSqueeze},
      {"squeeze_unsqueeze", {"Unsqueeze"}, After("Squeeze"), SqueezeUnsqueeze},
      {"pad_zero", {"Pad"}, nullptr, PadZero},
      {"concat_single", {"Concat"}, nullptr, ConcatSingle},
      {"involution_pair",
       {"Neg", "Not"},
       [](const RewriteContext& c, NodeId id) {
         return ProducerOf(c.graph, In(c, id, 0), c.graph.node(id).op_type.c_str()).valid();
       },
       InvolutionPair},
  };
}

class SimplifyPass : public Pass {
 public:
  explicit SimplifyPass(Options options) { state_.options = options; }

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    state_.summaries.clear();
    return RunPatterns(graph, context, patterns_, "simplified");
  }

 private:
  State state_;
  const std::vector<RewritePattern> patterns_ = Patterns(&state_);
};

}  // namespace

PassInfo SimplifyPassInfo() {
  PassInfo info;
  info.name = "simplify";
  info.description =
      "Algebraic identities that keep every value bit for bit: x+(-0), x-0, x*1, x/1, x**1 "
      "(when the constant cannot broadcast x), MatMul(a,b)+0 (a sum from +0 is never -0), "
      "Transpose chains composed (identity removed), "
      "Reshape chains, Reshape/Expand/Slice/Pad that change nothing, Cast to the same type and "
      "lossless Cast chains, Shape/Size of static shapes as constants, Unsqueeze/Squeeze pairs, "
      "Concat of one input, Neg(Neg(x)) and Not(Not(x)); graph outputs keep their names.";
  info.options = {
      {"ignore_signed_zeros",
       "'true' also removes x+0 and x-(-0) in floating point, which turn -0.0 into +0.0 "
       "(default false)"},
  };
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  // Every value that stays keeps its type and shape; new constants carry theirs.
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 2;
  info.repeat_to_fixpoint = true;
  info.factory = [](const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    Options o;
    if (auto it = options.find("ignore_signed_zeros"); it != options.end()) {
      if (it->second != "true" && it->second != "false") {
        return absl::InvalidArgumentError(absl::StrCat(
            "option 'ignore_signed_zeros': '", it->second, "' is not 'true' or 'false'"));
      }
      o.ignore_signed_zeros = it->second == "true";
    }
    return std::unique_ptr<Pass>(std::make_unique<SimplifyPass>(o));
  };
  return info;
}

}  // namespace graphopt
