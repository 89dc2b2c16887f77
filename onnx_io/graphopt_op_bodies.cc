#include "onnx_io/graphopt_op_bodies.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphopt {
namespace onnx_portable {
namespace {

onnx::AttributeProto IntsAttr(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto IntAttr(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}


const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::vector<int64_t> Ints(const onnx::NodeProto& n, const std::string& name) {
  const onnx::AttributeProto* a = FindAttr(n, name);
  if (a == nullptr) return {};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

int64_t Int(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = FindAttr(n, name);
  return a == nullptr ? fallback : a->i();
}

std::string Str(const onnx::NodeProto& n, const std::string& name, const std::string& fallback) {
  const onnx::AttributeProto* a = FindAttr(n, name);
  return a == nullptr ? fallback : a->s();
}

// Copies the attributes of `n` named in `keep`, in n's order.
std::vector<onnx::AttributeProto> Keep(const onnx::NodeProto& n,
                                       const std::vector<std::string>& keep) {
  std::vector<onnx::AttributeProto> out;
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (std::find(keep.begin(), keep.end(), a.name()) != keep.end()) out.push_back(a);
  }
  return out;
}

// The node's inputs without trailing absent ones: the function's inputs, by position.
int PresentInputs(const onnx::NodeProto& n) {
  int count = n.input_size();
  while (count > 0 && n.input(count - 1).empty()) --count;
  return count;
}

// A function body under construction: inputs in0.., outputs out0.., intermediates t0...
class Body {
 public:
  Body(const std::string& name, int inputs, int outputs, int64_t opset) {
    f_.set_name(name);
    f_.set_domain(kGraphoptDomain);
    for (int i = 0; i < inputs; ++i) f_.add_input(absl::StrCat("in", i));
    for (int i = 0; i < outputs; ++i) f_.add_output(absl::StrCat("out", i));
    onnx::OperatorSetIdProto* o = f_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }

  // Adds `op` reading `inputs`; writes `output` (a fresh name when empty) and returns it.
  std::string Op(const std::string& op, const std::vector<std::string>& inputs,
                 std::vector<onnx::AttributeProto> attrs = {}, std::string output = "") {
    if (output.empty()) output = Fresh();
    onnx::NodeProto* n = f_.add_node();
    n->set_op_type(op);
    for (const std::string& i : inputs) n->add_input(i);
    n->add_output(output);
    for (onnx::AttributeProto& a : attrs) *n->add_attribute() = std::move(a);
    return output;
  }

  // A node with several outputs, fresh names; returns them.
  std::vector<std::string> MultiOp(const std::string& op, const std::vector<std::string>& inputs,
                                   int outputs, std::vector<onnx::AttributeProto> attrs) {
    onnx::NodeProto* n = f_.add_node();
    n->set_op_type(op);
    for (const std::string& i : inputs) n->add_input(i);
    std::vector<std::string> names;
    for (int i = 0; i < outputs; ++i) {
      names.push_back(Fresh());
      n->add_output(names.back());
    }
    for (onnx::AttributeProto& a : attrs) *n->add_attribute() = std::move(a);
    return names;
  }

  // A constant int64 vector.
  std::string Int64s(const std::vector<int64_t>& v) {
    onnx::AttributeProto a;
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto* t = a.mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    std::string raw(v.size() * sizeof(int64_t), '\0');
    if (!v.empty()) std::memcpy(raw.data(), v.data(), raw.size());
    t->set_raw_data(std::move(raw));
    return Op("Constant", {}, {std::move(a)});
  }

  // A constant tensor of `dims` holding `values` as element type `elem` (FLOAT or DOUBLE).
  std::string Floats(const std::vector<int64_t>& dims, const std::vector<double>& values,
                     int32_t elem) {
    onnx::AttributeProto a;
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    onnx::TensorProto* t = a.mutable_t();
    t->set_data_type(elem);
    for (int64_t d : dims) t->add_dims(d);
    std::string raw;
    if (elem == onnx::TensorProto::DOUBLE) {
      raw.resize(values.size() * sizeof(double));
      if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    } else {
      std::vector<float> f(values.begin(), values.end());
      raw.resize(f.size() * sizeof(float));
      if (!f.empty()) std::memcpy(raw.data(), f.data(), raw.size());
    }
    t->set_raw_data(std::move(raw));
    return Op("Constant", {}, {std::move(a)});
  }

  onnx::FunctionProto Take() { return std::move(f_); }

 private:
  std::string Fresh() { return absl::StrCat("t", next_++); }
  onnx::FunctionProto f_;
  int next_ = 0;
};

absl::Status Missing(const std::string& what, const std::string& why) {
  return absl::UnimplementedError(absl::StrCat(
      what, " has no standard ONNX form here: ", why,
      " (write graphopt's native ops instead: OptimizeOptions.native_ops, "
      "`graphopt optimize --native-ops`)"));
}

absl::Status NeedOpset(const std::string& what, int64_t opset, int64_t need,
                       const std::string& op) {
  if (opset >= need) return absl::OkStatus();
  return Missing(what, absl::StrCat("its body needs ", op, " of opset ", need,
                                    ", the model imports opset ", opset));
}

// Permutations between channels-last [N, spatial..., C] and channels-first [N, C, spatial...].
std::vector<int64_t> ToChannelsFirst(int rank) {
  std::vector<int64_t> p = {0, rank - 1};
  for (int i = 1; i < rank - 1; ++i) p.push_back(i);
  return p;
}
std::vector<int64_t> ToChannelsLast(int rank) {
  std::vector<int64_t> p = {0};
  for (int i = 2; i < rank; ++i) p.push_back(i);
  p.push_back(1);
  return p;
}
// Swaps the first two axes.
std::vector<int64_t> SwapFirstTwo(int rank) {
  std::vector<int64_t> p = {1, 0};
  for (int i = 2; i < rank; ++i) p.push_back(i);
  return p;
}

// A forward op's window, resolved as graphopt's kernels resolve it.
struct Window {
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end;
  std::vector<int64_t> Pads() const {
    std::vector<int64_t> p = pad_begin;
    p.insert(p.end(), pad_end.begin(), pad_end.end());
    return p;
  }
};

// `in`: the forward input's spatial dims, or empty when unknown (then auto_pad SAME_* fails).
absl::StatusOr<Window> ResolveWindow(const onnx::NodeProto& n, const std::string& what,
                                     const std::vector<int64_t>& kernel,
                                     const std::vector<int64_t>& in) {
  const size_t nd = kernel.size();
  Window w;
  w.kernel = kernel;
  w.stride = Ints(n, "strides");
  w.dilation = Ints(n, "dilations");
  if (w.stride.empty()) w.stride.assign(nd, 1);
  if (w.dilation.empty()) w.dilation.assign(nd, 1);
  if (w.stride.size() != nd || w.dilation.size() != nd) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": strides or dilations do not match the ", nd, " kernel dims"));
  }
  w.pad_begin.assign(nd, 0);
  w.pad_end.assign(nd, 0);
  const std::string auto_pad = Str(n, "auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (in.size() != nd) return Missing(what, "auto_pad SAME needs the input's static spatial dims");
    for (size_t i = 0; i < nd; ++i) {
      const int64_t ek = (kernel[i] - 1) * w.dilation[i] + 1;
      const int64_t out = (in[i] + w.stride[i] - 1) / w.stride[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.stride[i] + ek - in[i]);
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[i] = total - w.pad_begin[i];
    }
  } else if (auto_pad == "NOTSET") {
    const std::vector<int64_t> pads = Ints(n, "pads");
    if (!pads.empty()) {
      if (pads.size() != 2 * nd) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": 'pads' has ", pads.size(),
                                                       " values for ", nd, " kernel dims"));
      }
      for (size_t i = 0; i < nd; ++i) {
        w.pad_begin[i] = pads[i];
        w.pad_end[i] = pads[nd + i];
      }
    }
  } else if (auto_pad != "VALID") {
    return absl::InvalidArgumentError(absl::StrCat(what, ": unknown auto_pad '", auto_pad, "'"));
  }
  return w;
}

// Output spatial size of the forward window over `in` (graphopt's and ONNX's rule).
int64_t ForwardOut(const Window& w, size_t i, int64_t in, bool ceil_mode) {
  const int64_t ek = (w.kernel[i] - 1) * w.dilation[i] + 1;
  const int64_t span = in + w.pad_begin[i] + w.pad_end[i] - ek;
  const int64_t s = w.stride[i];
  if (!ceil_mode) return span / s + 1;
  int64_t out = (span + s - 1) / s + 1;
  if ((out - 1) * s >= in + w.pad_begin[i]) --out;
  return out;
}

// The spatial dims of `value` (rank rank, [N, C, spatial...] or its shape vector).
std::vector<int64_t> SpatialOf(const std::optional<std::vector<int64_t>>& dims) {
  if (!dims || dims->size() < 3) return {};
  return std::vector<int64_t>(dims->begin() + 2, dims->end());
}

// X in channels-last layout around a channels-first op `op`.
absl::StatusOr<onnx::FunctionProto> NhwcBody(const onnx::NodeProto& n, const std::string& what,
                                             const ValueFacts& facts, int64_t opset,
                                             const std::string& op,
                                             const std::vector<std::string>& attrs) {
  int rank = facts.Rank(n.input(0));
  if (rank < 0) rank = facts.Rank(n.output(0));
  const std::vector<int64_t> kernel = Ints(n, "kernel_shape");
  if (rank < 0 && !kernel.empty()) rank = static_cast<int>(kernel.size()) + 2;
  if (rank < 0 && n.input_size() > 1) rank = facts.Rank(n.input(1));
  if (rank < 3) return Missing(what, "the rank of its input X is not known");
  if (op == "AveragePool") {
    const std::vector<int64_t> d = Ints(n, "dilations");
    if (std::any_of(d.begin(), d.end(), [](int64_t v) { return v != 1; })) {
      return Missing(what, "AveragePool has no dilations before opset 19");
    }
  }
  const int inputs = PresentInputs(n);
  Body b(n.op_type(), inputs, 1, opset);
  std::vector<std::string> in = {b.Op("Transpose", {"in0"}, {IntsAttr("perm", ToChannelsFirst(rank))})};
  for (int i = 1; i < inputs; ++i) in.push_back(absl::StrCat("in", i));
  const std::string y = b.Op(op, in, Keep(n, attrs));
  b.Op("Transpose", {y}, {IntsAttr("perm", ToChannelsLast(rank))}, "out0");
  return b.Take();
}

// SumToShape(grad, shape): ReduceSum over the axes where grad's shape differs from `shape`
// padded with leading ones to grad's rank, kept, then reshaped to `shape`.
absl::StatusOr<onnx::FunctionProto> SumToShapeBody(const onnx::NodeProto& n,
                                                   const std::string& what, int64_t opset) {
  if (absl::Status s = NeedOpset(what, opset, 13, "ReduceSum with an axes input"); !s.ok()) return s;
  Body b(n.op_type(), 2, 1, opset);
  const std::string gs = b.Op("Shape", {"in0"});
  const std::string extra = b.Op("Sub", {b.Op("Size", {gs}), b.Op("Size", {"in1"})});
  const std::string extra1 = b.Op("Reshape", {extra, b.Int64s({1})});
  onnx::AttributeProto one;
  one.set_name("value");
  one.set_type(onnx::AttributeProto::TENSOR);
  one.mutable_t()->set_data_type(onnx::TensorProto::INT64);
  one.mutable_t()->add_dims(1);
  const int64_t v = 1;
  one.mutable_t()->set_raw_data(std::string(reinterpret_cast<const char*>(&v), sizeof(v)));
  const std::string ones = b.Op("ConstantOfShape", {extra1}, {one});
  const std::string padded = b.Op("Concat", {ones, "in1"}, {IntAttr("axis", 0)});
  const std::string differ = b.Op("Not", {b.Op("Equal", {padded, gs})});
  const std::string axes = b.Op("Reshape", {b.Op("NonZero", {differ}), b.Int64s({-1})});
  const std::string summed = b.Op("ReduceSum", {"in0", axes},
                                  {IntAttr("keepdims", 1), IntAttr("noop_with_empty_axes", 1)});
  b.Op("Reshape", {summed, "in1"}, {}, "out0");
  return b.Take();
}

// The kernel's spatial dims: kernel_shape, else those of W (input `w`, [M, C/group, k...]).
std::vector<int64_t> KernelDims(const onnx::NodeProto& n, const ValueFacts& facts,
                                const std::string& w) {
  std::vector<int64_t> k = Ints(n, "kernel_shape");
  if (!k.empty()) return k;
  std::optional<std::vector<int64_t>> dims = facts.Dims(w);
  if (!dims) dims = facts.Int64Values(w);  // a shape input
  return SpatialOf(dims);
}

// ConvGradData(dY, W, X_shape): ConvTranspose with Conv's window, output_padding making its
// output X's size.
absl::StatusOr<onnx::FunctionProto> ConvGradDataBody(const onnx::NodeProto& n,
                                                     const std::string& what,
                                                     const ValueFacts& facts, int64_t opset) {
  if (n.input_size() < 3) return absl::InvalidArgumentError(absl::StrCat(what, " needs 3 inputs"));
  const std::vector<int64_t> k = KernelDims(n, facts, n.input(1));
  if (k.empty()) return Missing(what, "the kernel's spatial dims are not known");
  std::optional<std::vector<int64_t>> xs = facts.Int64Values(n.input(2));
  if (!xs) xs = facts.Dims(n.output(0));
  const std::vector<int64_t> x = SpatialOf(xs);
  absl::StatusOr<Window> w = ResolveWindow(n, what, k, x);
  if (!w.ok()) return w.status();
  std::vector<int64_t> output_padding(k.size(), 0);
  for (size_t i = 0; i < k.size(); ++i) {
    if (w->stride[i] == 1) continue;
    if (x.size() != k.size()) return Missing(what, "X's static spatial dims are not known");
    const int64_t ek = (k[i] - 1) * w->dilation[i] + 1;
    output_padding[i] = (x[i] + w->pad_begin[i] + w->pad_end[i] - ek) % w->stride[i];
  }
  Body b(n.op_type(), 3, 1, opset);
  b.Op("ConvTranspose", {"in0", "in1"},
       {IntsAttr("strides", w->stride), IntsAttr("dilations", w->dilation),
        IntsAttr("pads", w->Pads()), IntsAttr("output_padding", output_padding),
        IntsAttr("kernel_shape", k), IntAttr("group", Int(n, "group", 1))},
       "out0");
  return b.Take();
}

// ConvGradWeight(X, dY, W_shape): dW[m, c, k] = sum_n,o dY[n, m, o] X[n, g(m) Cg + c, o s + k d - p]
// is a Conv whose batch is c, whose channels are (group, n) and whose weights are dY with its
// first two axes swapped: stride d, dilation s, the forward pads; the result cut to k.
absl::StatusOr<onnx::FunctionProto> ConvGradWeightBody(const onnx::NodeProto& n,
                                                       const std::string& what,
                                                       const ValueFacts& facts, int64_t opset) {
  if (absl::Status s = NeedOpset(what, opset, 10, "Slice with inputs"); !s.ok()) return s;
  if (n.input_size() < 3) return absl::InvalidArgumentError(absl::StrCat(what, " needs 3 inputs"));
  std::optional<std::vector<int64_t>> ws = facts.Int64Values(n.input(2));
  if (!ws) ws = facts.Dims(n.output(0));
  if (!ws || ws->size() < 3) return Missing(what, "W's static shape is not known");
  const int rank = static_cast<int>(ws->size());
  const int64_t group = Int(n, "group", 1);
  const int64_t cg = (*ws)[1];
  const std::vector<int64_t> k = SpatialOf(ws);
  const std::vector<int64_t> x = SpatialOf(facts.Dims(n.input(0)));
  absl::StatusOr<Window> w = ResolveWindow(n, what, k, x);
  if (!w.ok()) return w.status();
  Body b(n.op_type(), 3, 1, opset);
  // X [N, C, s...] -> [Cg, group*N, s...], channel c of group g at (g, n).
  const std::string grouped = b.Op("Reshape", {"in0", b.Int64s({0, group, cg, -1})});
  const std::string moved = b.Op("Transpose", {grouped}, {IntsAttr("perm", {2, 1, 0, 3})});
  const std::string spatial = b.Op("Slice", {b.Op("Shape", {"in0"}), b.Int64s({2}),
                                             b.Int64s({std::numeric_limits<int64_t>::max()})});
  const std::string shape = b.Op("Concat", {b.Int64s({cg, -1}), spatial}, {IntAttr("axis", 0)});
  const std::string input = b.Op("Reshape", {moved, shape});
  const std::string weights = b.Op("Transpose", {"in1"}, {IntsAttr("perm", SwapFirstTwo(rank))});
  const std::string corr = b.Op("Conv", {input, weights},
                                {IntsAttr("strides", w->dilation), IntsAttr("dilations", w->stride),
                                 IntsAttr("pads", w->Pads()), IntAttr("group", group)});
  const std::string dw = b.Op("Transpose", {corr}, {IntsAttr("perm", SwapFirstTwo(rank))});
  std::vector<int64_t> axes, starts;
  for (int i = 2; i < rank; ++i) {
    axes.push_back(i);
    starts.push_back(0);
  }
  b.Op("Slice", {dw, b.Int64s(starts), b.Int64s(k), b.Int64s(axes)}, {}, "out0");
  return b.Take();
}

// How a pool's backward spreads values over the windows: ConvTranspose on [N*C, channels,
// out...] with the forward window, its end padding grown where the last window reaches past X
// (ceil_mode) and its output padded up to X's size.
struct Spread {
  std::vector<int64_t> out;  // the pool's output spatial dims
  std::vector<int64_t> pads, output_padding;
};

absl::StatusOr<Spread> SpreadFor(const Window& w, const std::vector<int64_t>& x, bool ceil_mode,
                                 const std::string& what) {
  const size_t nd = x.size();
  Spread sp;
  std::vector<int64_t> pads_end = w.pad_end;
  sp.output_padding.assign(nd, 0);
  int64_t out_size = 1;
  for (size_t i = 0; i < nd; ++i) {
    sp.out.push_back(ForwardOut(w, i, x[i], ceil_mode));
    if (sp.out[i] <= 0) return Missing(what, "the window does not fit the input");
    out_size *= sp.out[i];
    if (out_size > (int64_t{1} << 24)) return Missing(what, "the output is too large to tabulate");
    const int64_t ek = (w.kernel[i] - 1) * w.dilation[i] + 1;
    const int64_t got = w.stride[i] * (sp.out[i] - 1) + ek - w.pad_begin[i] - pads_end[i];
    if (got > x[i]) {
      pads_end[i] += got - x[i];
    } else {
      sp.output_padding[i] = x[i] - got;
    }
    if (sp.output_padding[i] >= std::max(w.stride[i], w.dilation[i])) {
      return Missing(what, "the pool's output padding is out of ConvTranspose's range");
    }
  }
  sp.pads = w.pad_begin;
  sp.pads.insert(sp.pads.end(), pads_end.begin(), pads_end.end());
  return sp;
}

std::vector<onnx::AttributeProto> SpreadAttrs(const Window& w, const Spread& sp) {
  return {IntsAttr("strides", w.stride), IntsAttr("dilations", w.dilation),
          IntsAttr("pads", sp.pads), IntsAttr("output_padding", sp.output_padding),
          IntsAttr("kernel_shape", w.kernel)};
}

// MaxPoolGrad(dY, X): MaxPool's Indices (flat into X, the first maximum) say which tap t of its
// window each output took; dY masked per tap, [N*C, T, out...], goes through a ConvTranspose
// whose kernel t is one-hot at tap t, which adds each value at its input position.
absl::StatusOr<onnx::FunctionProto> MaxPoolGradBody(const onnx::NodeProto& n,
                                                    const std::string& what,
                                                    const ValueFacts& facts, int64_t opset) {
  if (absl::Status s = NeedOpset(what, opset, 10, "Mod and MaxPool's dilations"); !s.ok()) {
    return s;
  }
  if (n.input_size() < 2) return absl::InvalidArgumentError(absl::StrCat(what, " needs 2 inputs"));
  int32_t elem = facts.ElemType(n.input(1));
  if (elem == 0) elem = facts.ElemType(n.input(0));
  if (elem != onnx::TensorProto::FLOAT && elem != onnx::TensorProto::DOUBLE) {
    return Missing(what, "the element type of X is not known as float or double");
  }
  std::optional<std::vector<int64_t>> xs = facts.Dims(n.input(1));
  if (!xs) xs = facts.Dims(n.output(0));
  const std::vector<int64_t> x = SpatialOf(xs);
  const std::vector<int64_t> k = Ints(n, "kernel_shape");
  if (k.empty() || x.size() != k.size()) {
    return Missing(what, "X's static shape and the kernel_shape are needed");
  }
  absl::StatusOr<Window> w = ResolveWindow(n, what, k, x);
  if (!w.ok()) return w.status();
  absl::StatusOr<Spread> sp = SpreadFor(*w, x, Int(n, "ceil_mode", 0) != 0, what);
  if (!sp.ok()) return sp.status();
  const size_t nd = k.size();
  int64_t taps = 1, plane = 1;
  for (size_t i = 0; i < nd; ++i) {
    taps *= k[i];
    plane *= x[i];
  }
  if (taps > 4096) return Missing(what, "the window has too many taps");
  Body b(n.op_type(), 2, 1, opset);
  std::vector<onnx::AttributeProto> attrs =
      Keep(n, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides"});
  const std::vector<std::string> pooled = b.MultiOp("MaxPool", {"in1"}, 2, std::move(attrs));
  // The position in X's plane, then per spatial dim its coordinate and the tap's index.
  const std::string local = b.Op("Mod", {pooled[1], b.Int64s({plane})});
  std::string tap;
  int64_t x_stride = plane, k_stride = taps;
  for (size_t i = 0; i < nd; ++i) {
    x_stride /= x[i];
    k_stride /= k[i];
    const std::string coord =
        b.Op("Mod", {b.Op("Div", {local, b.Int64s({x_stride})}), b.Int64s({x[i]})});
    // The window's first position along dim i, shaped to broadcast over [N, C, out...].
    std::vector<int64_t> starts;
    for (int64_t o = 0; o < sp->out[i]; ++o) starts.push_back(o * w->stride[i] - w->pad_begin[i]);
    std::vector<int64_t> shape(nd + 2, 1);
    shape[i + 2] = sp->out[i];
    const std::string start = b.Op("Reshape", {b.Int64s(starts), b.Int64s(shape)});
    const std::string along = b.Op("Div", {b.Op("Sub", {coord, start}), b.Int64s({w->dilation[i]})});
    const std::string scaled = b.Op("Mul", {along, b.Int64s({k_stride})});
    tap = tap.empty() ? scaled : b.Op("Add", {tap, scaled});
  }
  std::vector<int64_t> planes_shape = {-1, 1}, tap_shape = {1, taps};
  for (size_t i = 0; i < nd; ++i) {
    planes_shape.push_back(sp->out[i]);
    tap_shape.push_back(1);
  }
  std::vector<int64_t> all_taps(taps);
  for (int64_t t = 0; t < taps; ++t) all_taps[t] = t;
  const std::string tap_planes = b.Op("Reshape", {tap, b.Int64s(planes_shape)});
  const std::string hit = b.Op("Equal", {tap_planes, b.Op("Reshape", {b.Int64s(all_taps),
                                                                      b.Int64s(tap_shape)})});
  const std::string mask = b.Op("Cast", {hit}, {IntAttr("to", elem)});
  const std::string masked = b.Op("Mul", {mask, b.Op("Reshape", {"in0", b.Int64s(planes_shape)})});
  std::vector<int64_t> kernel_dims = {taps, 1};
  kernel_dims.insert(kernel_dims.end(), k.begin(), k.end());
  std::vector<double> one_hot(taps * taps, 0.0);
  for (int64_t t = 0; t < taps; ++t) one_hot[t * taps + t] = 1.0;
  const std::string spread = b.Op("ConvTranspose", {masked, b.Floats(kernel_dims, one_hot, elem)},
                                  SpreadAttrs(*w, *sp));
  b.Op("Reshape", {spread, b.Op("Shape", {"in1"})}, {}, "out0");
  return b.Take();
}

// AveragePoolGrad(dY, X_shape): dY divided by each window's count, then spread over the window
// by a ConvTranspose with a ones kernel on [N*C, 1, out...].
absl::StatusOr<onnx::FunctionProto> AveragePoolGradBody(const onnx::NodeProto& n,
                                                        const std::string& what,
                                                        const ValueFacts& facts, int64_t opset) {
  if (n.input_size() < 2) return absl::InvalidArgumentError(absl::StrCat(what, " needs 2 inputs"));
  std::optional<std::vector<int64_t>> xs = facts.Int64Values(n.input(1));
  if (!xs) xs = facts.Dims(n.output(0));
  const std::vector<int64_t> x = SpatialOf(xs);
  const std::vector<int64_t> k = Ints(n, "kernel_shape");
  if (k.empty() || x.size() != k.size()) {
    return Missing(what, "X's static shape and the kernel_shape are needed");
  }
  int32_t elem = facts.ElemType(n.input(0));
  if (elem == 0) elem = facts.ElemType(n.output(0));
  if (elem != onnx::TensorProto::FLOAT && elem != onnx::TensorProto::DOUBLE) {
    return Missing(what, "the element type of dY is not known as float or double");
  }
  const bool ceil_mode = Int(n, "ceil_mode", 0) != 0;
  const bool include_pad = Int(n, "count_include_pad", 0) != 0;
  absl::StatusOr<Window> w = ResolveWindow(n, what, k, x);
  if (!w.ok()) return w.status();
  absl::StatusOr<Spread> sp = SpreadFor(*w, x, ceil_mode, what);
  if (!sp.ok()) return sp.status();
  const std::vector<int64_t>& out = sp->out;
  const size_t nd = k.size();
  // Per spatial dim, each output position's count of taps inside the input (or inside the
  // padded input): the window is a box, so the count is their product.
  std::vector<std::vector<int64_t>> counts(nd);
  int64_t out_size = 1;
  for (size_t i = 0; i < nd; ++i) {
    out_size *= out[i];
    const int64_t lo = include_pad ? -w->pad_begin[i] : 0;
    const int64_t hi = include_pad ? x[i] + w->pad_end[i] : x[i];
    for (int64_t o = 0; o < out[i]; ++o) {
      int64_t c = 0;
      for (int64_t t = 0; t < k[i]; ++t) {
        const int64_t p = o * w->stride[i] + t * w->dilation[i] - w->pad_begin[i];
        if (p >= lo && p < hi) ++c;
      }
      counts[i].push_back(c);
    }
  }
  std::vector<double> inverse(out_size);
  std::vector<int64_t> pos(nd, 0);
  for (int64_t o = 0; o < out_size; ++o) {
    int64_t c = 1;
    for (size_t i = 0; i < nd; ++i) c *= counts[i][pos[i]];
    inverse[o] = c > 0 ? 1.0 / static_cast<double>(c) : 0.0;
    for (int i = static_cast<int>(nd) - 1; i >= 0; --i) {
      if (++pos[i] < out[i]) break;
      pos[i] = 0;
    }
  }
  std::vector<int64_t> count_dims = {1, 1}, planes_shape = {-1, 1}, kernel_dims = {1, 1};
  int64_t kernel_size = 1;
  for (size_t i = 0; i < nd; ++i) {
    count_dims.push_back(out[i]);
    planes_shape.push_back(out[i]);
    kernel_dims.push_back(k[i]);
    kernel_size *= k[i];
  }
  Body b(n.op_type(), 2, 1, opset);
  const std::string scaled = b.Op("Mul", {"in0", b.Floats(count_dims, inverse, elem)});
  const std::string planes = b.Op("Reshape", {scaled, b.Int64s(planes_shape)});
  const std::string ones = b.Floats(kernel_dims, std::vector<double>(kernel_size, 1.0), elem);
  const std::string spread = b.Op("ConvTranspose", {planes, ones}, SpreadAttrs(*w, *sp));
  b.Op("Reshape", {spread, "in1"}, {}, "out0");
  return b.Take();
}

}  // namespace

void ValueFacts::AddGraph(const onnx::GraphProto& g) {
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type()) types_[v.name()] = &v.type().tensor_type();
  };
  for (const onnx::ValueInfoProto& v : g.input()) add(v);
  for (const onnx::ValueInfoProto& v : g.output()) add(v);
  for (const onnx::ValueInfoProto& v : g.value_info()) add(v);
  for (const onnx::TensorProto& t : g.initializer()) initializers_[t.name()] = &t;
}

const onnx::TypeProto::Tensor* ValueFacts::Type(const std::string& name) const {
  for (const ValueFacts* f = this; f != nullptr; f = f->parent_) {
    auto it = f->types_.find(name);
    if (it != f->types_.end()) return it->second;
    if (f->initializers_.contains(name)) return nullptr;  // shadows outer declarations
  }
  return nullptr;
}

int ValueFacts::Rank(const std::string& name) const {
  const onnx::TypeProto::Tensor* t = Type(name);
  if (t != nullptr && t->has_shape()) return t->shape().dim_size();
  for (const ValueFacts* f = this; f != nullptr; f = f->parent_) {
    auto it = f->initializers_.find(name);
    if (it != f->initializers_.end()) return it->second->dims_size();
  }
  return -1;
}

std::optional<std::vector<int64_t>> ValueFacts::Dims(const std::string& name) const {
  const onnx::TypeProto::Tensor* t = Type(name);
  if (t != nullptr && t->has_shape()) {
    std::vector<int64_t> dims;
    for (const onnx::TensorShapeProto::Dimension& d : t->shape().dim()) {
      if (!d.has_dim_value()) return std::nullopt;
      dims.push_back(d.dim_value());
    }
    return dims;
  }
  for (const ValueFacts* f = this; f != nullptr; f = f->parent_) {
    auto it = f->initializers_.find(name);
    if (it != f->initializers_.end()) {
      return std::vector<int64_t>(it->second->dims().begin(), it->second->dims().end());
    }
  }
  return std::nullopt;
}

int32_t ValueFacts::ElemType(const std::string& name) const {
  const onnx::TypeProto::Tensor* t = Type(name);
  if (t != nullptr) return t->elem_type();
  for (const ValueFacts* f = this; f != nullptr; f = f->parent_) {
    auto it = f->initializers_.find(name);
    if (it != f->initializers_.end()) return it->second->data_type();
  }
  return 0;
}

std::optional<std::vector<int64_t>> ValueFacts::Int64Values(const std::string& name) const {
  for (const ValueFacts* f = this; f != nullptr; f = f->parent_) {
    auto it = f->initializers_.find(name);
    if (it == f->initializers_.end()) continue;
    const onnx::TensorProto& t = *it->second;
    if (t.data_type() != onnx::TensorProto::INT64 || t.dims_size() != 1) return std::nullopt;
    std::vector<int64_t> v(t.dims(0));
    if (t.has_raw_data() && t.raw_data().size() == v.size() * sizeof(int64_t)) {
      if (!v.empty()) std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
      return v;
    }
    if (t.int64_data_size() == static_cast<int>(v.size())) {
      std::copy(t.int64_data().begin(), t.int64_data().end(), v.begin());
      return v;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

absl::StatusOr<onnx::FunctionProto> GraphoptOpBody(const onnx::NodeProto& n,
                                                   const std::string& what,
                                                   const ValueFacts& facts, int64_t opset) {
  const std::string& op = n.op_type();
  if (n.input_size() == 0 || n.output_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has no input or no output"));
  }
  if (op == "NhwcConv") {
    return NhwcBody(n, what, facts, opset, "Conv",
                    {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  }
  if (op == "NhwcMaxPool") {
    return NhwcBody(n, what, facts, opset, "MaxPool",
                    {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides"});
  }
  if (op == "NhwcAveragePool") {
    return NhwcBody(n, what, facts, opset, "AveragePool",
                    {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads",
                     "strides"});
  }
  if (op == "NhwcGlobalAveragePool") {
    return NhwcBody(n, what, facts, opset, "GlobalAveragePool", {});
  }
  if (op == "NhwcGlobalMaxPool") return NhwcBody(n, what, facts, opset, "GlobalMaxPool", {});
  if (op == "SumToShape") return SumToShapeBody(n, what, opset);
  if (op == "ConvGradData") return ConvGradDataBody(n, what, facts, opset);
  if (op == "ConvGradWeight") return ConvGradWeightBody(n, what, facts, opset);
  if (op == "MaxPoolGrad") return MaxPoolGradBody(n, what, facts, opset);
  if (op == "AveragePoolGrad") return AveragePoolGradBody(n, what, facts, opset);
  return Missing(what, "graphopt knows no standard-ONNX body for this op");
}

}  // namespace onnx_portable
}  // namespace graphopt
