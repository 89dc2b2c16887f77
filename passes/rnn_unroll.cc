#include "passes/rnn_unroll.h"

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/gradient.h"
#include "graph/opset.h"

namespace graphopt {
namespace rnn_unroll {
namespace {

bool Used(const Graph& g, ValueId v) {
  return v.valid() && (!g.value(v).uses.empty() || g.value(v).graph_output_count > 0);
}

}  // namespace

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

absl::StatusOr<ValueId> Unroller::Squeeze(const std::string& name, ValueId x,
                                          std::vector<int64_t> axes) {
  if (NewForms(13)) return Emit1(name, "Squeeze", {x, Ints(axes)});
  return Emit1(name, "Squeeze", {x}, {{"axes", IntsAttr(axes)}});
}

absl::StatusOr<ValueId> Unroller::Unsqueeze(const std::string& name, ValueId x,
                                            std::vector<int64_t> axes, ValueId into) {
  if (NewForms(13)) return Emit1(name, "Unsqueeze", {x, Ints(axes)}, {}, into);
  return Emit1(name, "Unsqueeze", {x}, {{"axes", IntsAttr(axes)}}, into);
}

absl::StatusOr<std::vector<ValueId>> Unroller::Split(const std::string& name, ValueId x,
                                                     int64_t axis,
                                                     const std::vector<int64_t>& sizes) {
  const int n = static_cast<int>(sizes.size());
  if (NewForms(13)) return Emit(name, "Split", {x, Ints(sizes)}, {{"axis", IntAttr(axis)}}, n);
  return Emit(name, "Split", {x}, {{"axis", IntAttr(axis)}, {"split", IntsAttr(sizes)}},
              n);
}

absl::StatusOr<std::vector<ValueId>> Unroller::Unstack(
    const std::string& name, ValueId x, int64_t axis, int64_t count,
    const std::vector<std::string>& piece_names) {
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
    const std::string piece = !piece_names.empty() ? piece_names[k]
                              : count > 1           ? absl::StrCat(name, "/", k)
                                                    : name;
    absl::StatusOr<ValueId> v = Squeeze(piece, pieces[k], {axis});
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
  return Emit1(name, "Concat", std::move(expanded), {{"axis", IntAttr(axis)}}, into);
}

absl::StatusOr<ValueId> Unroller::Activate(const std::string& name, ValueId x,
                                           const Activation& act, bool clip) {
  if (clip && plan_->clip > 0) {
    absl::StatusOr<ValueId> c;
    if (NewForms(11)) {
      c = Emit1(name + "_clip", "Clip", {x, Scalar(-plan_->clip), Scalar(plan_->clip)});
    } else {
      c = Emit1(name + "_clip", "Clip", {x},
                {{"min", FloatAttr(-plan_->clip)}, {"max", FloatAttr(plan_->clip)}});
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
      return Emit1(name, "LeakyRelu", {x}, {{"alpha", FloatAttr(act.alpha)}});
    case Activation::kThresholdedRelu:
      return Emit1(name, "ThresholdedRelu", {x}, {{"alpha", FloatAttr(act.alpha)}});
    case Activation::kScaledTanh: {
      absl::StatusOr<ValueId> m = Emit1(name + "_in", "Mul", {x, Scalar(act.beta)});
      if (!m.ok()) return m.status();
      absl::StatusOr<ValueId> t = Emit1(name + "_tanh", "Tanh", {*m});
      if (!t.ok()) return t.status();
      return Emit1(name, "Mul", {*t, Scalar(act.alpha)});
    }
    case Activation::kHardSigmoid:
      return Emit1(name, "HardSigmoid", {x},
                   {{"alpha", FloatAttr(act.alpha)}, {"beta", FloatAttr(act.beta)}});
    case Activation::kElu:
      return Emit1(name, "Elu", {x}, {{"alpha", FloatAttr(act.alpha)}});
    case Activation::kSoftsign:
      return Emit1(name, "Softsign", {x});
    case Activation::kSoftplus:
      return Emit1(name, "Softplus", {x});
  }
  return absl::InternalError("unknown activation");
}

// Shorthands for the chains of Emit1 in Step: each returns on error.
#define GO_ASSIGN(lhs, expr)                                    \
  do {                                                          \
    absl::StatusOr<ValueId> go_assign_value_ = (expr);          \
    if (!go_assign_value_.ok()) return go_assign_value_.status(); \
    lhs = *go_assign_value_;                                    \
  } while (0)

absl::Status Unroller::Step(const std::string& at, int d, ValueId x, ValueId* h, ValueId* c) {
  const Plan& p = *plan_;
  const Weights& w = w_[d];
  const Activation* act = &p.activations[d * NumActivations(p.cell)];
  const int64_t H = p.hidden;
  auto nm = [&](const char* what) { return absl::StrCat(at, what); };
  ValueId gates = x;
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
    AttributeMap perm = {{"perm", IntsAttr({1, 0})}};
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
                                {{"axis", IntAttr(0)}}));
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

  // The input projections of every step at once, X W^T + b over [seq, batch, in] (layout 1:
  // [batch, seq, in]) as the kernel computes them, then cut into steps: one Split rather than
  // a Gather per step, so that the gradient is one Concat where per-step Gathers would sum seq
  // full-size scatters, and one MatMul whose weight gradient is one product.
  const int64_t seq_axis = plan.layout == 0 ? 0 : 1;
  std::vector<std::vector<ValueId>> xs(D);
  for (int d = 0; d < D; ++d) {
    const std::string dn = D == 2 ? absl::StrCat("d", d, "/") : "";
    ValueId proj;
    GO_ASSIGN(proj, Emit1(dn + "x_proj", "MatMul", {input(0), w_[d].wt}));
    if (w_[d].bias.valid()) GO_ASSIGN(proj, Emit1(dn + "x_bias", "Add", {proj, w_[d].bias}));
    std::vector<std::string> names;
    names.reserve(plan.seq);
    for (int64_t t = 0; t < plan.seq; ++t) names.push_back(absl::StrCat("t", t, "/", dn, "x"));
    absl::StatusOr<std::vector<ValueId>> steps =
        Unstack(dn + "x_proj", proj, seq_axis, plan.seq, names);
    if (!steps.ok()) return steps.status();
    xs[d] = *std::move(steps);
  }

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
      if (absl::Status st = Step(at, d, xs[d][t], &h, &c); !st.ok()) return st;
      hs[d][t] = h;
    }
    last_h[d] = h;
    last_c[d] = c;
  }

  // Y = [seq, D, batch, H] (layout 1: [batch, seq, D, H]); Y_h, Y_c = [D, batch, H] (layout 1:
  // [batch, D, H]).
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
                                        {{"axis", IntAttr(dir_axis)}}, outs[0]);
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

}  // namespace rnn_unroll
}  // namespace graphopt
