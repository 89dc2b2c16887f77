#include "passes/decompose_rnn_pass.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/inference.h"
#include "graph/opset.h"

namespace graphopt {
namespace {

enum class Cell { kRnn = 0, kGru = 1, kLstm = 2 };
constexpr int kNumCells = 3;
constexpr Cell kCells[kNumCells] = {Cell::kRnn, Cell::kGru, Cell::kLstm};

const char* CellName(Cell c) { return c == Cell::kRnn ? "RNN" : c == Cell::kGru ? "GRU" : "LSTM"; }
int NumGates(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }
int NumActivations(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 2 : 3; }

// One activation of the recurrence as runtime/kernels/rnn.cc applies it, with its parameters.
struct Activation {
  enum Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  };
  Kind kind = kTanh;
  float alpha = 0;
  float beta = 0;
};

// ONNX's activation names (case-insensitive, as the kernel reads them), taking alpha/beta from
// the lists at *ai / *bi when the function has them, its defaults otherwise.
bool ParseActivation(const std::string& name, const std::vector<float>& alphas,
                     const std::vector<float>& betas, size_t* ai, size_t* bi, Activation* out) {
  struct Spec {
    const char* name;
    Activation::Kind kind;
    bool has_alpha, has_beta;
    float alpha, beta;
  };
  static constexpr Spec kSpecs[] = {
      {"relu", Activation::kRelu, false, false, 0, 0},
      {"tanh", Activation::kTanh, false, false, 0, 0},
      {"sigmoid", Activation::kSigmoid, false, false, 0, 0},
      {"affine", Activation::kAffine, true, true, 1, 0},
      {"leakyrelu", Activation::kLeakyRelu, true, false, 0.01f, 0},
      {"thresholdedrelu", Activation::kThresholdedRelu, true, false, 1, 0},
      {"scaledtanh", Activation::kScaledTanh, true, true, 1, 1},
      {"hardsigmoid", Activation::kHardSigmoid, true, true, 0.2f, 0.5f},
      {"elu", Activation::kElu, true, false, 1, 0},
      {"softsign", Activation::kSoftsign, false, false, 0, 0},
      {"softplus", Activation::kSoftplus, false, false, 0, 0},
  };
  const std::string n = absl::AsciiStrToLower(name);
  for (const Spec& s : kSpecs) {
    if (n != s.name) continue;
    out->kind = s.kind;
    out->alpha = s.alpha;
    out->beta = s.beta;
    if (s.has_alpha && *ai < alphas.size()) out->alpha = alphas[(*ai)++];
    if (s.has_beta && *bi < betas.size()) out->beta = betas[(*bi)++];
    return true;
  }
  return false;
}

struct Options {
  bool cells[kNumCells] = {true, true, true};
  int64_t max_steps = kDefaultMaxRnnSteps;
};

// Everything about one recurrent node that the unrolling needs, checked before any edit.
struct Plan {
  NodeId node;
  Cell cell = Cell::kRnn;
  // Names of the new nodes and values start with it: the node's name, or "<Op>#<id>".
  std::string prefix;
  v1::DataType dtype = v1::DT_FLOAT32;
  int64_t seq = 0;
  int64_t hidden = 0;
  int dirs = 1;
  bool reverse_only = false;
  int64_t layout = 0;
  float clip = 0;  // 0: none
  bool linear_before_reset = false;
  bool input_forget = false;
  std::vector<Activation> activations;  // NumActivations(cell) per direction
};

const v1::Attribute* FindAttr(const Node& n, const char* name) {
  auto it = n.attributes.find(name);
  return it == n.attributes.end() ? nullptr : &it->second;
}

bool Present(const Node& n, int i) {
  return i < static_cast<int>(n.inputs.size()) && n.inputs[i].valid();
}

bool Used(const Graph& g, ValueId v) {
  return v.valid() && (!g.value(v).uses.empty() || g.value(v).graph_output_count > 0);
}

// The plan for `id`, nullopt with `*skip` saying why when the node is left as it is (a
// sequence length or hidden size not known statically, an element type without a kernel for
// the primitives), or INVALID_ARGUMENT naming the node for what cannot be unrolled faithfully.
absl::StatusOr<std::optional<Plan>> MakePlan(const Graph& g, NodeId id, Cell cell,
                                             const Options& options, std::string* skip) {
  const Node& n = g.node(id);
  const std::string label = g.NodeLabel(id);
  auto invalid = [&](auto&&... args) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": ", args...));
  };
  Plan p;
  p.node = id;
  p.cell = cell;
  p.prefix = n.name.empty() ? absl::StrCat(CellName(cell), "#", id.value()) : std::string(n.name);
  if (!Present(n, 0) || !Present(n, 1) || !Present(n, 2)) return invalid("X, W and R are required");
  const TensorType& x = g.value(n.inputs[0]).type;
  p.dtype = x.dtype;
  if (p.dtype != v1::DT_FLOAT32 && p.dtype != v1::DT_FLOAT64) {
    *skip = absl::StrCat("element type ", DataTypeName(p.dtype));
    return std::nullopt;
  }
  if (const v1::Attribute* a = FindAttr(n, "layout")) p.layout = a->i();
  if (p.layout != 0 && p.layout != 1) return invalid("attribute 'layout' must be 0 or 1");
  if (!x.shape || x.shape->size() != 3) {
    *skip = "X is not known to be 3-D";
    return std::nullopt;
  }
  const Dim& seq = (*x.shape)[p.layout == 0 ? 0 : 1];
  if (!seq.is_known()) {
    *skip = absl::StrCat("sequence length ", seq.ToString(), " not static");
    return std::nullopt;
  }
  p.seq = seq.size();
  if (p.seq == 0) {
    *skip = "empty sequence";
    return std::nullopt;
  }
  if (p.seq > options.max_steps) {
    return invalid("sequence length ", p.seq, " is over the ", options.max_steps,
                   " steps decompose_rnn may unroll (option max_steps)");
  }
  std::string direction = "forward";
  if (const v1::Attribute* a = FindAttr(n, "direction")) direction = a->s();
  if (direction == "bidirectional") {
    p.dirs = 2;
  } else if (direction == "reverse") {
    p.reverse_only = true;
  } else if (direction != "forward") {
    return invalid("attribute 'direction' is '", direction, "'");
  }
  const int64_t gates = NumGates(cell);
  const std::optional<Dims>& r = g.value(n.inputs[2]).type.shape;
  if (const v1::Attribute* a = FindAttr(n, "hidden_size")) {
    p.hidden = a->i();
  } else if (r && r->size() == 3 && (*r)[2].is_known()) {
    p.hidden = (*r)[2].size();
  } else {
    *skip = "hidden size not static";
    return std::nullopt;
  }
  if (p.hidden <= 0) return invalid("hidden size ", p.hidden, " is not positive");
  if (r && r->size() == 3) {
    const int64_t want[3] = {p.dirs, gates * p.hidden, p.hidden};
    for (int i = 0; i < 3; ++i) {
      if ((*r)[i].is_known() && (*r)[i].size() != want[i]) {
        return invalid("R is ", ShapeToString(r), ", [", want[0], ",", want[1], ",", want[2],
                       "] expected");
      }
    }
  }
  if (const v1::Attribute* a = FindAttr(n, "clip")) {
    p.clip = a->f();
    if (!(p.clip > 0)) return invalid("attribute 'clip' must be positive");
  }
  if (const v1::Attribute* a = FindAttr(n, "linear_before_reset")) {
    p.linear_before_reset = a->i() != 0;
  }
  if (const v1::Attribute* a = FindAttr(n, "input_forget")) p.input_forget = a->i() != 0;

  // sequence_lens changes nothing only when every entry is the full length; per-entry lengths
  // would need masking the unrolled steps, which is not done.
  if (Present(n, 4)) {
    const v1::Tensor* lens = ConstantTensorOf(g, n.inputs[4]);
    if (lens == nullptr) {
      return invalid("sequence_lens is not a constant; only sequence_lens equal to the sequence "
                     "length (", p.seq, ") everywhere can be unrolled");
    }
    absl::StatusOr<std::vector<int64_t>> v = TensorToInts(*lens);
    if (!v.ok()) return invalid("sequence_lens: ", v.status().message());
    for (size_t i = 0; i < v->size(); ++i) {
      if ((*v)[i] != p.seq) {
        return invalid("sequence_lens[", i, "] = ", (*v)[i], " differs from the sequence length ",
                       p.seq, "; only full-length sequences can be unrolled");
      }
    }
  }

  // Activations: defaults, a list for one direction used for both, alpha/beta consumed in
  // order (the kernel's reading).
  const int per_dir = NumActivations(cell);
  std::vector<std::string> names;
  std::vector<float> alphas, betas;
  if (const v1::Attribute* a = FindAttr(n, "activations")) {
    names.assign(a->strings().values().begin(), a->strings().values().end());
  }
  if (const v1::Attribute* a = FindAttr(n, "activation_alpha")) {
    alphas.assign(a->floats().values().begin(), a->floats().values().end());
  }
  if (const v1::Attribute* a = FindAttr(n, "activation_beta")) {
    betas.assign(a->floats().values().begin(), a->floats().values().end());
  }
  if (names.empty()) {
    for (int d = 0; d < p.dirs; ++d) {
      if (cell != Cell::kRnn) names.push_back("Sigmoid");
      names.push_back("Tanh");
      if (cell == Cell::kLstm) names.push_back("Tanh");
    }
  } else if (static_cast<int>(names.size()) == per_dir && p.dirs == 2) {
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (static_cast<int>(names.size()) != per_dir * p.dirs) {
    return invalid("attribute 'activations' has ", names.size(), " entries, ", per_dir * p.dirs,
                   " expected");
  }
  size_t ai = 0, bi = 0;
  for (const std::string& name : names) {
    Activation act;
    if (!ParseActivation(name, alphas, betas, &ai, &bi, &act)) {
      return invalid("activation '", name, "' is not supported");
    }
    p.activations.push_back(act);
  }
  return p;
}

// Adds the nodes of one unrolled recurrent node, each typed and shaped as it is added.
class Unroller {
 public:
  Unroller(Graph& graph, const OpRegistry& ops, DimsValueTable* dims)
      : g_(graph), ops_(ops), dims_(dims), opset_(DefaultDomainOpset(graph)) {}

  // Replaces plan.node by its unrolled graph; returns how many nodes it added.
  absl::StatusOr<int64_t> Unroll(const Plan& plan);

 private:
  bool NewForms(int64_t since) const { return opset_ == 0 || opset_ >= since; }

  // Adds node "<prefix>/<name>" with `num_outputs` new values named like it, or producing
  // `into` (a detached output of the recurrent node) when valid.
  absl::StatusOr<std::vector<ValueId>> Emit(const std::string& name, const char* op_type,
                                            std::vector<ValueId> inputs, AttributeMap attrs,
                                            int num_outputs, ValueId into = ValueId());
  absl::StatusOr<ValueId> Emit1(const std::string& name, const char* op_type,
                                std::vector<ValueId> inputs, AttributeMap attrs = {},
                                ValueId into = ValueId()) {
    absl::StatusOr<std::vector<ValueId>> out =
        Emit(name, op_type, std::move(inputs), std::move(attrs), 1, into);
    if (!out.ok()) return out.status();
    return (*out)[0];
  }
  ValueId AddConstant(v1::Tensor tensor);
  // int64 [values.size()] constants and scalars of the plan's dtype, one per distinct value.
  ValueId Ints(const std::vector<int64_t>& values);
  ValueId Scalar(float value);

  absl::StatusOr<ValueId> Squeeze(const std::string& name, ValueId x, std::vector<int64_t> axes);
  absl::StatusOr<ValueId> Unsqueeze(const std::string& name, ValueId x, std::vector<int64_t> axes,
                                    ValueId into = ValueId());
  absl::StatusOr<std::vector<ValueId>> Split(const std::string& name, ValueId x, int64_t axis,
                                             const std::vector<int64_t>& sizes);
  // The `count` slices of x along `axis` with that axis removed.
  absl::StatusOr<std::vector<ValueId>> Unstack(const std::string& name, ValueId x, int64_t axis,
                                               int64_t count);
  // Inverse of Unstack: `parts` given `axes` (Unsqueeze) and joined along `axis`; into `into`.
  absl::StatusOr<ValueId> Stack(const std::string& name, const std::vector<ValueId>& parts,
                                std::vector<int64_t> axes, int64_t axis, ValueId into);
  // act(clip(x)), clipping unless `clip` is false (LSTM's output activation).
  absl::StatusOr<ValueId> Activate(const std::string& name, ValueId x, const Activation& act,
                                   bool clip);

  // One time step of direction d: the new hidden state (and cell state for LSTM).
  absl::Status Step(const std::string& at, int d, ValueId x, ValueId* h, ValueId* c);

  Graph& g_;
  const OpRegistry& ops_;
  DimsValueTable* dims_;
  const int64_t opset_;
  // Per node being unrolled:
  const Plan* plan_ = nullptr;
  std::string device_;
  int64_t added_ = 0;
  std::map<std::vector<int64_t>, ValueId> ints_;
  std::map<float, ValueId> scalars_;
  // Per direction: W^T [in, GH], R^T [H, GH] (GRU: split as [H, 2H] and [H, H]), the bias
  // added to the input projection, GRU's Rbh under linear_before_reset, LSTM's peepholes.
  struct Weights {
    ValueId wt, rt, rt_zr, rt_h, bias, rbh, p_i, p_o, p_f;
  };
  Weights w_[2];
};

absl::StatusOr<std::vector<ValueId>> Unroller::Emit(const std::string& name, const char* op_type,
                                                    std::vector<ValueId> inputs, AttributeMap attrs,
                                                    int num_outputs, ValueId into) {
  const OpDef* op = ops_.Find("", op_type);
  if (op == nullptr) {
    return absl::InternalError(absl::StrCat("decompose_rnn needs op '", op_type, "'"));
  }
  const std::string full = absl::StrCat(plan_->prefix, "/", name);
  std::vector<ValueId> outputs;
  outputs.reserve(num_outputs);
  if (into.valid()) {
    outputs.push_back(into);
  } else {
    for (int i = 0; i < num_outputs; ++i) {
      outputs.push_back(g_.AddUniqueValue(num_outputs == 1 ? full : absl::StrCat(full, "_", i)));
    }
  }
  absl::StatusOr<NodeId> id = g_.AddNode(full, op_type, "", inputs, outputs, std::move(attrs));
  if (!id.ok()) return id.status();
  g_.mutable_node(*id).device = device_;
  ++added_;
  dims_->resize(g_.num_value_slots());
  absl::Status s = InferNodeTypes(g_, *id, *op);
  if (s.ok()) s = InferNodeShapes(g_, *id, *op, dims_);
  if (!s.ok()) {
    return absl::InternalError(absl::StrCat("decompose_rnn: unrolling ",
                                            g_.NodeLabel(plan_->node), ": ", s.message()));
  }
  return outputs;
}

ValueId Unroller::AddConstant(v1::Tensor tensor) {
  const ValueId v = g_.AddUniqueValue(absl::StrCat(plan_->prefix, "/const"));
  TensorType type;
  type.dtype = tensor.dtype();
  type.shape = ShapeFromDimsList(tensor);
  g_.mutable_value(v).type = std::move(type);
  tensor.set_name(g_.value(v).name);
  g_.SetInitializer(v, std::move(tensor));
  dims_->resize(g_.num_value_slots());
  return v;
}

ValueId Unroller::Ints(const std::vector<int64_t>& values) {
  auto [it, fresh] = ints_.try_emplace(values);
  if (!fresh) return it->second;
  v1::Tensor t;
  t.set_dtype(v1::DT_INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  std::string raw(values.size() * sizeof(int64_t), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t.set_raw_data(std::move(raw));
  it->second = AddConstant(std::move(t));
  Dims dims;
  for (int64_t v : values) dims.push_back(Dim::Known(v));
  (*dims_)[it->second.value()] = std::move(dims);
  return it->second;
}

ValueId Unroller::Scalar(float value) {
  auto [it, fresh] = scalars_.try_emplace(value);
  if (!fresh) return it->second;
  v1::Tensor t;
  t.set_dtype(plan_->dtype);
  std::string raw;
  if (plan_->dtype == v1::DT_FLOAT64) {
    const double d = value;
    raw.assign(reinterpret_cast<const char*>(&d), sizeof(d));
  } else {
    raw.assign(reinterpret_cast<const char*>(&value), sizeof(value));
  }
  t.set_raw_data(std::move(raw));
  it->second = AddConstant(std::move(t));
  return it->second;
}

v1::Attribute IntsAttribute(const std::vector<int64_t>& values) {
  v1::Attribute a;
  for (int64_t v : values) a.mutable_ints()->add_values(v);
  return a;
}

v1::Attribute IntAttribute(int64_t value) {
  v1::Attribute a;
  a.set_i(value);
  return a;
}

v1::Attribute FloatAttribute(float value) {
  v1::Attribute a;
  a.set_f(value);
  return a;
}

absl::StatusOr<ValueId> Unroller::Squeeze(const std::string& name, ValueId x,
                                          std::vector<int64_t> axes) {
  if (NewForms(13)) return Emit1(name, "Squeeze", {x, Ints(axes)});
  return Emit1(name, "Squeeze", {x}, {{"axes", IntsAttribute(axes)}});
}

absl::StatusOr<ValueId> Unroller::Unsqueeze(const std::string& name, ValueId x,
                                            std::vector<int64_t> axes, ValueId into) {
  if (NewForms(13)) return Emit1(name, "Unsqueeze", {x, Ints(axes)}, {}, into);
  return Emit1(name, "Unsqueeze", {x}, {{"axes", IntsAttribute(axes)}}, into);
}

absl::StatusOr<std::vector<ValueId>> Unroller::Split(const std::string& name, ValueId x,
                                                     int64_t axis,
                                                     const std::vector<int64_t>& sizes) {
  const int n = static_cast<int>(sizes.size());
  if (NewForms(13)) return Emit(name, "Split", {x, Ints(sizes)}, {{"axis", IntAttribute(axis)}}, n);
  return Emit(name, "Split", {x}, {{"axis", IntAttribute(axis)}, {"split", IntsAttribute(sizes)}},
              n);
}

absl::StatusOr<std::vector<ValueId>> Unroller::Unstack(const std::string& name, ValueId x,
                                                       int64_t axis, int64_t count) {
  std::vector<ValueId> pieces = {x};
  if (count > 1) {
    absl::StatusOr<std::vector<ValueId>> s =
        Split(absl::StrCat(name, "/split"), x, axis, std::vector<int64_t>(count, 1));
    if (!s.ok()) return s.status();
    pieces = *std::move(s);
  }
  std::vector<ValueId> out;
  out.reserve(count);
  for (int64_t k = 0; k < count; ++k) {
    absl::StatusOr<ValueId> v =
        Squeeze(count > 1 ? absl::StrCat(name, "/", k) : name, pieces[k], {axis});
    if (!v.ok()) return v.status();
    out.push_back(*v);
  }
  return out;
}

absl::StatusOr<ValueId> Unroller::Stack(const std::string& name, const std::vector<ValueId>& parts,
                                        std::vector<int64_t> axes, int64_t axis, ValueId into) {
  if (parts.size() == 1) return Unsqueeze(name, parts[0], axes, into);
  std::vector<ValueId> expanded;
  expanded.reserve(parts.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    absl::StatusOr<ValueId> v = Unsqueeze(absl::StrCat(name, "/", k), parts[k], axes);
    if (!v.ok()) return v.status();
    expanded.push_back(*v);
  }
  return Emit1(name, "Concat", std::move(expanded), {{"axis", IntAttribute(axis)}}, into);
}

absl::StatusOr<ValueId> Unroller::Activate(const std::string& name, ValueId x,
                                           const Activation& act, bool clip) {
  if (clip && plan_->clip > 0) {
    absl::StatusOr<ValueId> c;
    if (NewForms(11)) {
      c = Emit1(name + "_clip", "Clip", {x, Scalar(-plan_->clip), Scalar(plan_->clip)});
    } else {
      c = Emit1(name + "_clip", "Clip", {x},
                {{"min", FloatAttribute(-plan_->clip)}, {"max", FloatAttribute(plan_->clip)}});
    }
    if (!c.ok()) return c.status();
    x = *c;
  }
  switch (act.kind) {
    case Activation::kRelu:
      return Emit1(name, "Relu", {x});
    case Activation::kTanh:
      return Emit1(name, "Tanh", {x});
    case Activation::kSigmoid:
      return Emit1(name, "Sigmoid", {x});
    case Activation::kAffine: {
      absl::StatusOr<ValueId> m = Emit1(name + "_scale", "Mul", {x, Scalar(act.alpha)});
      if (!m.ok()) return m.status();
      return Emit1(name, "Add", {*m, Scalar(act.beta)});
    }
    case Activation::kLeakyRelu:
      return Emit1(name, "LeakyRelu", {x}, {{"alpha", FloatAttribute(act.alpha)}});
    case Activation::kThresholdedRelu:
      return Emit1(name, "ThresholdedRelu", {x}, {{"alpha", FloatAttribute(act.alpha)}});
    case Activation::kScaledTanh: {
      absl::StatusOr<ValueId> m = Emit1(name + "_in", "Mul", {x, Scalar(act.beta)});
      if (!m.ok()) return m.status();
      absl::StatusOr<ValueId> t = Emit1(name + "_tanh", "Tanh", {*m});
      if (!t.ok()) return t.status();
      return Emit1(name, "Mul", {*t, Scalar(act.alpha)});
    }
    case Activation::kHardSigmoid:
      return Emit1(name, "HardSigmoid", {x},
                   {{"alpha", FloatAttribute(act.alpha)}, {"beta", FloatAttribute(act.beta)}});
    case Activation::kElu:
      return Emit1(name, "Elu", {x}, {{"alpha", FloatAttribute(act.alpha)}});
    case Activation::kSoftsign:
      return Emit1(name, "Softsign", {x});
    case Activation::kSoftplus:
      return Emit1(name, "Softplus", {x});
  }
  return absl::InternalError("unknown activation");
}

// Shorthands for the chains of Emit1 in Step: each returns on error.
#define GO_ASSIGN(lhs, expr)                              \
  do {                                                    \
    absl::StatusOr<ValueId> go_assign_value_ = (expr);    \
    if (!go_assign_value_.ok()) return go_assign_value_.status(); \
    lhs = *go_assign_value_;                              \
  } while (0)

absl::Status Unroller::Step(const std::string& at, int d, ValueId x, ValueId* h, ValueId* c) {
  const Plan& p = *plan_;
  const Weights& w = w_[d];
  const Activation* act = &p.activations[d * NumActivations(p.cell)];
  const int64_t H = p.hidden;
  auto nm = [&](const char* what) { return absl::StrCat(at, what); };
  ValueId gates;
  GO_ASSIGN(gates, Emit1(nm("x_proj"), "MatMul", {x, w.wt}));
  if (w.bias.valid()) GO_ASSIGN(gates, Emit1(nm("x_bias"), "Add", {gates, w.bias}));
  switch (p.cell) {
    case Cell::kRnn: {
      if (h->valid()) {
        ValueId hr;
        GO_ASSIGN(hr, Emit1(nm("h_proj"), "MatMul", {*h, w.rt}));
        GO_ASSIGN(gates, Emit1(nm("gates"), "Add", {gates, hr}));
      }
      GO_ASSIGN(*h, Activate(nm("h"), gates, act[0], true));
      return absl::OkStatus();
    }
    case Cell::kGru: {
      absl::StatusOr<std::vector<ValueId>> parts = Split(nm("x_split"), gates, 1, {2 * H, H});
      if (!parts.ok()) return parts.status();
      ValueId zr = (*parts)[0];
      ValueId cand = (*parts)[1];
      if (h->valid()) {
        ValueId hr;
        GO_ASSIGN(hr, Emit1(nm("h_proj_zr"), "MatMul", {*h, w.rt_zr}));
        GO_ASSIGN(zr, Emit1(nm("zr_pre"), "Add", {zr, hr}));
      }
      GO_ASSIGN(zr, Activate(nm("zr"), zr, act[0], true));
      absl::StatusOr<std::vector<ValueId>> z_r = Split(nm("zr_split"), zr, 1, {H, H});
      if (!z_r.ok()) return z_r.status();
      const ValueId z = (*z_r)[0];
      const ValueId r = (*z_r)[1];
      // The candidate: g(x Wh^T + Wbh + (r * h) Rh^T + Rbh), or with linear_before_reset
      // g(x Wh^T + Wbh + r * (h Rh^T + Rbh)); a zero h drops its terms.
      if (p.linear_before_reset) {
        ValueId inner;
        if (h->valid()) {
          GO_ASSIGN(inner, Emit1(nm("h_proj_h"), "MatMul", {*h, w.rt_h}));
          if (w.rbh.valid()) GO_ASSIGN(inner, Emit1(nm("h_proj_bias"), "Add", {inner, w.rbh}));
        } else {
          inner = w.rbh;
        }
        if (inner.valid()) {
          ValueId gated;
          GO_ASSIGN(gated, Emit1(nm("reset"), "Mul", {r, inner}));
          GO_ASSIGN(cand, Emit1(nm("cand_pre"), "Add", {cand, gated}));
        }
      } else if (h->valid()) {
        ValueId rh, proj;
        GO_ASSIGN(rh, Emit1(nm("reset"), "Mul", {r, *h}));
        GO_ASSIGN(proj, Emit1(nm("h_proj_h"), "MatMul", {rh, w.rt_h}));
        GO_ASSIGN(cand, Emit1(nm("cand_pre"), "Add", {cand, proj}));
      }
      GO_ASSIGN(cand, Activate(nm("cand"), cand, act[1], true));
      // h' = (1 - z) * cand + z * h.
      ValueId keep, next;
      GO_ASSIGN(keep, Emit1(nm("update"), "Sub", {Scalar(1.0f), z}));
      GO_ASSIGN(next, Emit1(nm("h_new"), "Mul", {keep, cand}));
      if (h->valid()) {
        ValueId old;
        GO_ASSIGN(old, Emit1(nm("h_kept"), "Mul", {z, *h}));
        GO_ASSIGN(next, Emit1(nm("h"), "Add", {next, old}));
      }
      *h = next;
      return absl::OkStatus();
    }
    case Cell::kLstm: {
      if (h->valid()) {
        ValueId hr;
        GO_ASSIGN(hr, Emit1(nm("h_proj"), "MatMul", {*h, w.rt}));
        GO_ASSIGN(gates, Emit1(nm("gates"), "Add", {gates, hr}));
      }
      // Gate order i, o, f, c; peepholes P = [Pi, Po, Pf].
      absl::StatusOr<std::vector<ValueId>> parts = Split(nm("gate_split"), gates, 1, {H, H, H, H});
      if (!parts.ok()) return parts.status();
      ValueId i = (*parts)[0], o = (*parts)[1], f = (*parts)[2], cand = (*parts)[3];
      if (w.p_i.valid() && c->valid()) {
        ValueId pi;
        GO_ASSIGN(pi, Emit1(nm("peep_i"), "Mul", {w.p_i, *c}));
        GO_ASSIGN(i, Emit1(nm("i_pre"), "Add", {i, pi}));
      }
      GO_ASSIGN(i, Activate(nm("i"), i, act[0], true));
      GO_ASSIGN(cand, Activate(nm("cand"), cand, act[1], true));
      ValueId next_c;
      GO_ASSIGN(next_c, Emit1(nm("c_in"), "Mul", {i, cand}));
      // The forget gate matters only where there is a previous cell state.
      if (c->valid()) {
        if (p.input_forget) {
          GO_ASSIGN(f, Emit1(nm("f"), "Sub", {Scalar(1.0f), i}));
        } else {
          if (w.p_f.valid()) {
            ValueId pf;
            GO_ASSIGN(pf, Emit1(nm("peep_f"), "Mul", {w.p_f, *c}));
            GO_ASSIGN(f, Emit1(nm("f_pre"), "Add", {f, pf}));
          }
          GO_ASSIGN(f, Activate(nm("f"), f, act[0], true));
        }
        ValueId kept;
        GO_ASSIGN(kept, Emit1(nm("c_kept"), "Mul", {f, *c}));
        GO_ASSIGN(next_c, Emit1(nm("c"), "Add", {kept, next_c}));
      }
      *c = next_c;
      if (w.p_o.valid()) {
        ValueId po;
        GO_ASSIGN(po, Emit1(nm("peep_o"), "Mul", {w.p_o, next_c}));
        GO_ASSIGN(o, Emit1(nm("o_pre"), "Add", {o, po}));
      }
      GO_ASSIGN(o, Activate(nm("o"), o, act[0], true));
      ValueId out;
      GO_ASSIGN(out, Activate(nm("c_act"), next_c, act[2], false));
      GO_ASSIGN(*h, Emit1(nm("h"), "Mul", {o, out}));
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown cell");
}

absl::StatusOr<int64_t> Unroller::Unroll(const Plan& plan) {
  plan_ = &plan;
  added_ = 0;
  ints_.clear();
  scalars_.clear();
  const Node& n = g_.node(plan.node);
  device_ = std::string(n.device);
  const std::vector<ValueId> in(n.inputs.begin(), n.inputs.end());
  auto input = [&](int i) { return i < static_cast<int>(in.size()) ? in[i] : ValueId(); };
  const int D = plan.dirs;
  const int64_t H = plan.hidden;
  const int64_t GH = NumGates(plan.cell) * H;
  const bool lstm = plan.cell == Cell::kLstm;
  // The outputs that something reads are detached to be produced by the new nodes; the
  // others die with the node.
  ValueId outs[3];
  for (int k = 0; k < static_cast<int>(n.outputs.size()) && k < 3; ++k) {
    if (Used(g_, n.outputs[k])) outs[k] = g_.DetachOutput(plan.node, k);
  }

  // Per-direction weights: W [D, GH, in] -> W_d^T [in, GH]; R likewise; B [D, 2GH] -> the sum
  // Wb + Rb (GRU under linear_before_reset keeps Rbh apart); P [D, 3H] -> Pi, Po, Pf.
  absl::StatusOr<std::vector<ValueId>> ws = Unstack("W", input(1), 0, D);
  if (!ws.ok()) return ws.status();
  absl::StatusOr<std::vector<ValueId>> rs = Unstack("R", input(2), 0, D);
  if (!rs.ok()) return rs.status();
  std::vector<ValueId> bs, ps, h0s, c0s;
  if (input(3).valid()) {
    absl::StatusOr<std::vector<ValueId>> s = Unstack("B", input(3), 0, D);
    if (!s.ok()) return s.status();
    bs = *std::move(s);
  }
  const int64_t state_axis = plan.layout == 0 ? 0 : 1;
  if (input(5).valid()) {
    absl::StatusOr<std::vector<ValueId>> s = Unstack("initial_h", input(5), state_axis, D);
    if (!s.ok()) return s.status();
    h0s = *std::move(s);
  }
  if (lstm && input(6).valid()) {
    absl::StatusOr<std::vector<ValueId>> s = Unstack("initial_c", input(6), state_axis, D);
    if (!s.ok()) return s.status();
    c0s = *std::move(s);
  }
  if (lstm && input(7).valid()) {
    absl::StatusOr<std::vector<ValueId>> s = Unstack("P", input(7), 0, D);
    if (!s.ok()) return s.status();
    ps = *std::move(s);
  }
  for (int d = 0; d < D; ++d) {
    Weights& w = w_[d];
    w = Weights{};
    const std::string dn = D == 2 ? absl::StrCat("d", d, "/") : "";
    AttributeMap perm = {{"perm", IntsAttribute({1, 0})}};
    GO_ASSIGN(w.wt, Emit1(dn + "W_t", "Transpose", {(*ws)[d]}, perm));
    GO_ASSIGN(w.rt, Emit1(dn + "R_t", "Transpose", {(*rs)[d]}, perm));
    if (plan.cell == Cell::kGru) {
      absl::StatusOr<std::vector<ValueId>> s = Split(dn + "R_t_split", w.rt, 1, {2 * H, H});
      if (!s.ok()) return s.status();
      w.rt_zr = (*s)[0];
      w.rt_h = (*s)[1];
    }
    if (!bs.empty()) {
      absl::StatusOr<std::vector<ValueId>> s = Split(dn + "B_split", bs[d], 0, {GH, GH});
      if (!s.ok()) return s.status();
      const ValueId wb = (*s)[0], rb = (*s)[1];
      if (plan.cell == Cell::kGru && plan.linear_before_reset) {
        absl::StatusOr<std::vector<ValueId>> wparts = Split(dn + "Wb_split", wb, 0, {2 * H, H});
        if (!wparts.ok()) return wparts.status();
        absl::StatusOr<std::vector<ValueId>> rparts = Split(dn + "Rb_split", rb, 0, {2 * H, H});
        if (!rparts.ok()) return rparts.status();
        ValueId zr;
        GO_ASSIGN(zr, Emit1(dn + "bias_zr", "Add", {(*wparts)[0], (*rparts)[0]}));
        GO_ASSIGN(w.bias, Emit1(dn + "bias", "Concat", {zr, (*wparts)[1]},
                                {{"axis", IntAttribute(0)}}));
        w.rbh = (*rparts)[1];
      } else {
        GO_ASSIGN(w.bias, Emit1(dn + "bias", "Add", {wb, rb}));
      }
    }
    if (!ps.empty()) {
      absl::StatusOr<std::vector<ValueId>> s = Split(dn + "P_split", ps[d], 0, {H, H, H});
      if (!s.ok()) return s.status();
      w.p_i = (*s)[0];
      w.p_o = (*s)[1];
      w.p_f = (*s)[2];
    }
  }

  // The time steps of X, shared by the directions. One Split rather than a Gather per step:
  // the gradient is then one Concat, where per-step Gathers would sum seq full-size scatters.
  absl::StatusOr<std::vector<ValueId>> xs =
      Unstack("X", input(0), plan.layout == 0 ? 0 : 1, plan.seq);
  if (!xs.ok()) return xs.status();

  // hs[d][t]: direction d's hidden state after time step t.
  std::vector<std::vector<ValueId>> hs(D, std::vector<ValueId>(plan.seq));
  ValueId last_h[2], last_c[2];
  for (int d = 0; d < D; ++d) {
    const bool reverse = plan.reverse_only || d == 1;
    ValueId h = h0s.empty() ? ValueId() : h0s[d];
    ValueId c = c0s.empty() ? ValueId() : c0s[d];
    for (int64_t s = 0; s < plan.seq; ++s) {
      const int64_t t = reverse ? plan.seq - 1 - s : s;
      const std::string at = absl::StrCat("t", t, "/", D == 2 ? absl::StrCat("d", d, "/") : "");
      if (absl::Status st = Step(at, d, (*xs)[t], &h, &c); !st.ok()) return st;
      hs[d][t] = h;
    }
    last_h[d] = h;
    last_c[d] = c;
  }

  // Y = [seq, D, batch, H] (layout 1: [batch, seq, D, H]); Y_h, Y_c = [D, batch, H] (layout 1:
  // [batch, D, H]).
  const int64_t seq_axis = plan.layout == 0 ? 0 : 1;
  const int64_t dir_axis = plan.layout == 0 ? 1 : 2;
  if (outs[0].valid()) {
    const std::vector<int64_t> axes = plan.layout == 0 ? std::vector<int64_t>{0, 1}
                                                       : std::vector<int64_t>{1, 2};
    if (D == 1) {
      absl::StatusOr<ValueId> y = Stack("Y", hs[0], axes, seq_axis, outs[0]);
      if (!y.ok()) return y.status();
    } else {
      ValueId per_dir[2];
      for (int d = 0; d < D; ++d) {
        GO_ASSIGN(per_dir[d], Stack(absl::StrCat("Y/d", d), hs[d], axes, seq_axis, ValueId()));
      }
      absl::StatusOr<ValueId> y = Emit1("Y", "Concat", {per_dir[0], per_dir[1]},
                                        {{"axis", IntAttribute(dir_axis)}}, outs[0]);
      if (!y.ok()) return y.status();
    }
  }
  const ValueId* finals[2] = {last_h, last_c};
  const char* final_names[2] = {"Y_h", "Y_c"};
  for (int k = 1; k <= 2; ++k) {
    if (!outs[k].valid()) continue;
    std::vector<ValueId> parts(finals[k - 1], finals[k - 1] + D);
    absl::StatusOr<ValueId> v = Stack(final_names[k - 1], parts, {state_axis}, state_axis, outs[k]);
    if (!v.ok()) return v.status();
  }
  g_.RemoveNode(plan.node);
  return added_;
}

#undef GO_ASSIGN

class DecomposeRnnPass : public Pass {
 public:
  explicit DecomposeRnnPass(Options options) : options_(options) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    std::vector<OpKindId> kinds;
    for (Cell c : kCells) {
      if (options_.cells[static_cast<int>(c)]) kinds.push_back(graph.FindOpKind("", CellName(c)));
    }
    const std::vector<NodeId> nodes = graph.LiveNodesOfKinds(kinds);
    // Every node is checked before the first edit, so that a refusal leaves the graph whole.
    std::vector<Plan> plans;
    std::vector<std::string> skipped;
    for (NodeId id : nodes) {
      const Node& n = graph.node(id);
      if (!IsDefaultDomain(n.domain)) continue;
      Cell cell = Cell::kRnn;
      for (Cell c : kCells) {
        if (n.op_type == CellName(c)) cell = c;
      }
      std::string skip;
      absl::StatusOr<std::optional<Plan>> plan = MakePlan(graph, id, cell, options_, &skip);
      if (!plan.ok()) return plan.status();
      if (*plan) {
        plans.push_back(**std::move(plan));
      } else {
        skipped.push_back(absl::StrCat(graph.NodeLabel(id), " (", skip, ")"));
      }
    }
    DimsValueTable dims = InitialDimsValues(graph);
    Unroller unroller(graph, *context.ops, &dims);
    int64_t count[kNumCells] = {0, 0, 0};
    int64_t added[kNumCells] = {0, 0, 0};
    int64_t steps[kNumCells] = {0, 0, 0};
    for (const Plan& plan : plans) {
      if (absl::Status s = context.CheckStop(graph.NodeLabel(plan.node)); !s.ok()) return s;
      absl::StatusOr<int64_t> n = unroller.Unroll(plan);
      if (!n.ok()) return n.status();
      const int k = static_cast<int>(plan.cell);
      ++count[k];
      added[k] += *n;
      steps[k] += plan.seq * plan.dirs;
    }
    std::vector<std::string> parts;
    for (Cell c : kCells) {
      const int k = static_cast<int>(c);
      if (count[k] == 0) continue;
      parts.push_back(absl::StrCat(count[k], " ", CellName(c), " node", count[k] == 1 ? "" : "s",
                                   " (", steps[k], " steps) into ", added[k], " nodes"));
    }
    if (!parts.empty()) context.Note(absl::StrCat("unrolled ", absl::StrJoin(parts, ", ")));
    if (!skipped.empty()) {
      context.Note(absl::StrCat("left ", skipped.size(), " recurrent node",
                                skipped.size() == 1 ? "" : "s", " as they are: ",
                                absl::StrJoin(skipped, ", ")));
    }
    if (plans.empty() && skipped.empty()) context.Note("no recurrent node to unroll");
    return !plans.empty();
  }

 private:
  Options options_;
};

absl::StatusOr<Options> ParseOptions(const PassOptions& options) {
  Options o;
  if (auto it = options.find("ops"); it != options.end()) {
    for (bool& b : o.cells) b = false;
    bool any = false;
    for (absl::string_view part : absl::StrSplit(it->second, absl::ByAnyChar(";,"))) {
      part = absl::StripAsciiWhitespace(part);
      if (part.empty()) continue;
      bool known = false;
      for (Cell c : kCells) {
        if (part == CellName(c)) {
          o.cells[static_cast<int>(c)] = true;
          known = true;
        }
      }
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat("option 'ops': '", part, "' is not LSTM, GRU or RNN"));
      }
      any = true;
    }
    if (!any) return absl::InvalidArgumentError("option 'ops' names no op");
  }
  if (auto it = options.find("max_steps"); it != options.end()) {
    if (!absl::SimpleAtoi(it->second, &o.max_steps) || o.max_steps <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("option 'max_steps': '", it->second, "' is not a positive count"));
    }
  }
  return o;
}

}  // namespace

// Replaces ONNX RNN, GRU and LSTM nodes whose sequence length is static by their unrolled
// computation in differentiable primitives (Split/Squeeze of the time steps and weights,
// Transpose, MatMul, Add, Mul, Sub, the activations, Clip, Unsqueeze/Concat to rebuild Y, Y_h
// and Y_c), computing what runtime/kernels/rnn.cc computes: every direction, activation (with
// alpha/beta), clip, layout, GRU's linear_before_reset, LSTM's peepholes and input_forget,
// absent B, initial_h and initial_c (zero states drop their terms instead of materializing
// zeros, so a symbolic batch needs no shape arithmetic). The gradient pass then differentiates
// recurrent ops through these primitives.
//
// Nodes and values are named "<node>/t<k>/..." ("<node>/t<k>/d<dir>/..." when bidirectional),
// k the time index; Squeeze, Unsqueeze, Split and Clip take the graph's opset's forms. Work
// and added nodes are linear in the unrolled steps. A node whose sequence length, hidden size
// or rank is not static, or of another element type than float32/float64, is left as it is
// (the report names it). INVALID_ARGUMENT naming the node for a sequence longer than
// max_steps, and for sequence_lens that is not a constant equal to the sequence length
// everywhere (per-entry lengths would need masking).
PassInfo DecomposeRnnPassInfo() {
  PassInfo info;
  info.name = "decompose_rnn";
  info.description =
      "Unrolls RNN, GRU and LSTM nodes with a static sequence length into differentiable "
      "primitives (MatMul, Add, Mul, the activations, Split/Squeeze/Unsqueeze/Concat), so "
      "that the gradient pass can differentiate them.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.provides = {};
  info.preserves = {Analysis::kTypes, Analysis::kShapes};
  info.options = {
      {"ops", "which recurrent ops to unroll: LSTM, GRU, RNN separated by ';' (default all)"},
      {"max_steps", "longest sequence to unroll; longer ones are refused"},
  };
  info.budget_options["max_steps"] = {kDefaultMaxRnnSteps, nullptr};
  info.min_opt_level = 0;
  info.factory = [](const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    absl::StatusOr<Options> o = ParseOptions(options);
    if (!o.ok()) return o.status();
    return std::unique_ptr<Pass>(std::make_unique<DecomposeRnnPass>(*o));
  };
  return info;
}

}  // namespace graphopt
