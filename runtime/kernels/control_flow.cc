// Control flow: If, Loop and Scan. Bodies are executors built once at plan time; each
// iteration runs the body with the enclosing graph's lookup, so bodies (and bodies nested in
// bodies) read enclosing values by name. Iteration is a plain loop, never recursion.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {
namespace {

// Copies n elements from src (starting at element src_off) to dst (at dst_off); same dtype.
void CopyElements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t n) {
  if (n <= 0) return;
  if (src.dtype() == v1::DT_STRING) {
    const std::string* s = src.strings() + src_off;
    std::string* d = dst.strings() + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  const size_t es = src.element_size();
  std::memcpy(static_cast<char*>(dst.raw_data()) + dst_off * es,
              static_cast<const char*>(src.raw_data()) + src_off * es, static_cast<size_t>(n) * es);
}

Shape ShapeWithout(const Shape& s, int axis) {
  Shape out;
  for (int i = 0; i < static_cast<int>(s.size()); ++i) {
    if (i != axis) out.push_back(s[i]);
  }
  return out;
}

// The options of a body's run: the stop token and memory budget of the run around it.
RunOptions BodyRun(const KernelContext& ctx) {
  RunOptions run;
  run.stop = ctx.stop();
  run.memory = ctx.memory();
  return run;
}

// Slice `index` of `t` along `axis`, the axis removed (a copy charged to the run's budget).
absl::StatusOr<Tensor> SliceAlong(const KernelContext& ctx, const Tensor& t, int axis,
                                  int64_t index) {
  Shape shape = ShapeWithout(t.shape(), axis);
  absl::StatusOr<Tensor> out = ctx.AllocateTemp(t.dtype(), shape, "scan slice");
  if (!out.ok()) return out.status();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= t.dim(i);
  for (int i = axis + 1; i < t.rank(); ++i) inner *= t.dim(i);
  const int64_t len = t.dim(axis);
  for (int64_t o = 0; o < outer; ++o) {
    CopyElements(t, (o * len + index) * inner, *out, o * inner, inner);
  }
  if (out->dtype() == v1::DT_STRING) {
    if (absl::Status s = out->SettleStrings([&] { return ctx.info().label() + " scan slice"; });
        !s.ok()) {
      return s;
    }
  }
  return out;
}

// Stacks `parts` (all of one dtype and shape) along a new `axis`; parts[i] lands at position
// i. INVALID_ARGUMENT naming `what` when shapes or dtypes differ. With no parts, the result has
// `empty_type`'s dtype and (when fully known) shape with 0 inserted at `axis`.
absl::StatusOr<Tensor> Stack(const std::vector<Tensor>& parts, int64_t axis_attr,
                             const TensorType& empty_type, const KernelContext& ctx,
                             const std::string& what) {
  const KernelInfo& info = ctx.info();
  if (parts.empty()) {
    Shape shape;
    if (empty_type.shape.has_value()) {
      for (const Dim& d : *empty_type.shape) shape.push_back(d.is_known() ? d.size() : 0);
    }
    const int axis = static_cast<int>(
        axis_attr < 0 ? axis_attr + static_cast<int64_t>(shape.size()) + 1 : axis_attr);
    if (axis < 0 || axis > static_cast<int>(shape.size())) {
      return info.Invalid(absl::StrCat(what, ": axis ", axis_attr, " is out of range"));
    }
    shape.insert(shape.begin() + axis, 0);
    const v1::DataType dtype =
        empty_type.dtype == v1::DT_UNDEFINED ? v1::DT_FLOAT32 : empty_type.dtype;
    return ctx.AllocateTemp(dtype, shape, what);
  }
  const Tensor& first = parts[0];
  absl::StatusOr<int> axis = NormalizeAxis(axis_attr, first.rank() + 1, info);
  if (!axis.ok()) return axis.status();
  for (const Tensor& p : parts) {
    if (p.dtype() != first.dtype() || p.shape() != first.shape()) {
      return info.Invalid(absl::StrCat(what, ": iterations produced ", first.DebugString(),
                                       " and ", p.DebugString()));
    }
  }
  Shape shape = first.shape();
  const int64_t count = static_cast<int64_t>(parts.size());
  shape.insert(shape.begin() + *axis, count);
  absl::StatusOr<Tensor> out = ctx.AllocateTemp(first.dtype(), shape, what);
  if (!out.ok()) return out.status();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < *axis; ++i) outer *= first.dim(i);
  for (int i = *axis; i < first.rank(); ++i) inner *= first.dim(i);
  for (int64_t k = 0; k < count; ++k) {
    for (int64_t o = 0; o < outer; ++o) {
      CopyElements(parts[k], o * inner, *out, (o * count + k) * inner, inner);
    }
  }
  if (out->dtype() == v1::DT_STRING) {
    if (absl::Status s = out->SettleStrings([&] { return absl::StrCat(info.label(), " ", what); });
        !s.ok()) {
      return s;
    }
  }
  return out;
}

bool TruthOf(const Tensor& t) {
  if (t.dtype() == v1::DT_BOOL) return t.data<bool>()[0];
  return t.ElementAsDouble(0) != 0;
}

// --- If -------------------------------------------------------------------------------------

class IfKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    auto k = std::unique_ptr<IfKernel>(new IfKernel());
    absl::StatusOr<std::unique_ptr<Executor>> then_branch =
        info.CreateSubgraphExecutor("then_branch");
    if (!then_branch.ok()) return then_branch.status();
    absl::StatusOr<std::unique_ptr<Executor>> else_branch =
        info.CreateSubgraphExecutor("else_branch");
    if (!else_branch.ok()) return else_branch.status();
    k->then_ = *std::move(then_branch);
    k->else_ = *std::move(else_branch);
    for (const Executor* e : {k->then_.get(), k->else_.get()}) {
      if (static_cast<int>(e->graph().outputs().size()) != info.num_outputs()) {
        return info.Invalid(absl::StrCat("a branch has ", e->graph().outputs().size(),
                                         " outputs, the node ", info.num_outputs()));
      }
      if (!e->required_inputs().empty()) {
        return info.Invalid("a branch must not declare inputs");
      }
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<const Tensor*> cond = RequireInput(ctx, 0);
    if (!cond.ok()) return cond.status();
    if ((*cond)->num_elements() != 1 || (*cond)->dtype() == v1::DT_STRING) {
      return ctx.Invalid(absl::StrCat("cond must hold one boolean, got ", (*cond)->DebugString()));
    }
    const Executor& branch = TruthOf(**cond) ? *then_ : *else_;
    absl::StatusOr<RunResult> r = branch.RunPositional({}, BodyRun(ctx), ctx.outer_lookup());
    if (!r.ok()) return r.status();
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, std::move(r->outputs[i]));
    return absl::OkStatus();
  }

 private:
  IfKernel() = default;
  std::unique_ptr<Executor> then_, else_;
};

// --- Loop -----------------------------------------------------------------------------------

class LoopKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    auto k = std::unique_ptr<LoopKernel>(new LoopKernel());
    absl::StatusOr<std::unique_ptr<Executor>> body = info.CreateSubgraphExecutor("body");
    if (!body.ok()) return body.status();
    k->body_ = *std::move(body);
    const Graph& g = k->body_->graph();
    k->num_carried_ = info.num_inputs() - 2;
    if (k->num_carried_ < 0) return info.Invalid("Loop needs inputs M and cond (may be empty)");
    const int body_outputs = static_cast<int>(g.outputs().size());
    k->num_scans_ = body_outputs - 1 - k->num_carried_;
    if (static_cast<int>(g.inputs().size()) != k->num_carried_ + 2 || k->num_scans_ < 0 ||
        info.num_outputs() > k->num_carried_ + k->num_scans_) {
      return info.Invalid(absl::StrCat("body has ", g.inputs().size(), " inputs and ",
                                       body_outputs, " outputs; the node ", info.num_inputs(),
                                       " inputs and ", info.num_outputs(), " outputs"));
    }
    for (int i = 0; i < k->num_scans_; ++i) {
      k->scan_types_.push_back(g.value(g.outputs()[1 + k->num_carried_ + i]).type);
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    int64_t max_trips = -1;  // -1: no limit
    if (const Tensor* m = ctx.input(0)) {
      if (m->num_elements() != 1 || !IsInteger(m->dtype())) {
        return ctx.Invalid(absl::StrCat("M must be one integer, got ", m->DebugString()));
      }
      max_trips = std::max<int64_t>(0, m->ElementAsInt64(0));
    }
    bool cond = true;
    // Without a cond input the body's cond output is ignored (a plain for loop).
    const bool has_cond = ctx.input(1) != nullptr;
    if (const Tensor* c = ctx.input(1)) {
      if (c->num_elements() != 1 || c->dtype() == v1::DT_STRING) {
        return ctx.Invalid(absl::StrCat("cond must hold one boolean, got ", c->DebugString()));
      }
      cond = TruthOf(*c);
    }
    std::vector<Tensor> feed(2 + num_carried_);
    for (int i = 0; i < num_carried_; ++i) {
      const Tensor* v = ctx.input(2 + i);
      if (v == nullptr) return ctx.Invalid(absl::StrCat("loop-carried input ", 2 + i, " is missing"));
      feed[2 + i] = *v;
    }
    std::vector<std::vector<Tensor>> scans(num_scans_);
    const RunOptions body_run = BodyRun(ctx);
    // The tensors collected for the scan outputs (their elements are charged by the body's
    // runs; the Tensor objects, and the vectors' doubling, here).
    MemoryReservation collected(ctx.memory());
    for (int64_t i = 0; cond && (max_trips < 0 || i < max_trips); ++i) {
      if (ctx.ShouldStop()) {
        return ctx.StopStatus(absl::StrCat(ctx.info().label(), " iteration ", i));
      }
      const int64_t collected_bytes = 2 * num_scans_ * static_cast<int64_t>(sizeof(Tensor));
      if (!collected.TryAdd(collected_bytes)) {
        return collected.budget()->ExhaustedError(
            collected_bytes, absl::StrCat(ctx.info().label(), " iteration ", i, ": scan outputs"));
      }
      feed[0] = Tensor::FromVector<int64_t>(v1::DT_INT64, {i}, {});
      feed[1] = Tensor::FromVector<bool>(v1::DT_BOOL, {cond}, {});
      absl::StatusOr<RunResult> r = body_->RunPositional(feed, body_run, ctx.outer_lookup());
      if (!r.ok()) return r.status();
      const Tensor& c = r->outputs[0];
      if (c.num_elements() != 1 || c.dtype() == v1::DT_STRING) {
        return ctx.Invalid(absl::StrCat("body's cond output must hold one boolean, got ",
                                        c.DebugString()));
      }
      if (has_cond) cond = TruthOf(c);
      for (int k = 0; k < num_carried_; ++k) feed[2 + k] = std::move(r->outputs[1 + k]);
      for (int k = 0; k < num_scans_; ++k) {
        scans[k].push_back(std::move(r->outputs[1 + num_carried_ + k]));
      }
    }
    for (int k = 0; k < num_carried_ && k < ctx.num_outputs(); ++k) {
      ctx.SetOutput(k, std::move(feed[2 + k]));
    }
    for (int k = 0; k < num_scans_ && num_carried_ + k < ctx.num_outputs(); ++k) {
      absl::StatusOr<Tensor> t = Stack(scans[k], 0, scan_types_[k], ctx,
                                       absl::StrCat("scan output ", k));
      if (!t.ok()) return t.status();
      ctx.SetOutput(num_carried_ + k, *std::move(t));
    }
    return absl::OkStatus();
  }

 private:
  LoopKernel() = default;
  std::unique_ptr<Executor> body_;
  int num_carried_ = 0;
  int num_scans_ = 0;
  std::vector<TensorType> scan_types_;
};

// --- Scan -----------------------------------------------------------------------------------

// Opset 8 (a leading sequence_lens input and a batch axis on everything) and opset 9+ (no
// batch; axes and directions per scan input and output).
class ScanKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    auto k = std::unique_ptr<ScanKernel>(new ScanKernel());
    k->batched_ = info.opset() > 0 && info.opset() < 9;
    absl::StatusOr<std::unique_ptr<Executor>> body = info.CreateSubgraphExecutor("body");
    if (!body.ok()) return body.status();
    k->body_ = *std::move(body);
    absl::StatusOr<int64_t> m = info.RequireInt("num_scan_inputs");
    if (!m.ok()) return m.status();
    k->num_scan_inputs_ = static_cast<int>(*m);
    const int first = k->batched_ ? 1 : 0;
    k->num_states_ = info.num_inputs() - first - k->num_scan_inputs_;
    const Graph& g = k->body_->graph();
    k->num_scan_outputs_ = static_cast<int>(g.outputs().size()) - k->num_states_;
    if (k->num_scan_inputs_ < 1 || k->num_states_ < 0 || k->num_scan_outputs_ < 0 ||
        static_cast<int>(g.inputs().size()) != k->num_states_ + k->num_scan_inputs_ ||
        info.num_outputs() > k->num_states_ + k->num_scan_outputs_) {
      return info.Invalid(absl::StrCat("num_scan_inputs ", *m, " does not fit the node's ",
                                       info.num_inputs(), " inputs and the body's ",
                                       g.inputs().size(), " inputs and ", g.outputs().size(),
                                       " outputs"));
    }
    if (k->batched_) {
      k->in_dirs_ = info.GetInts("directions", std::vector<int64_t>(k->num_scan_inputs_, 0));
      k->in_axes_.assign(k->num_scan_inputs_, 0);
      k->out_axes_.assign(k->num_scan_outputs_, 0);
      k->out_dirs_.assign(k->num_scan_outputs_, 0);
    } else {
      k->in_axes_ = info.GetInts("scan_input_axes", std::vector<int64_t>(k->num_scan_inputs_, 0));
      k->in_dirs_ =
          info.GetInts("scan_input_directions", std::vector<int64_t>(k->num_scan_inputs_, 0));
      k->out_axes_ =
          info.GetInts("scan_output_axes", std::vector<int64_t>(k->num_scan_outputs_, 0));
      k->out_dirs_ =
          info.GetInts("scan_output_directions", std::vector<int64_t>(k->num_scan_outputs_, 0));
    }
    if (static_cast<int>(k->in_axes_.size()) != k->num_scan_inputs_ ||
        static_cast<int>(k->in_dirs_.size()) != k->num_scan_inputs_ ||
        static_cast<int>(k->out_axes_.size()) != k->num_scan_outputs_ ||
        static_cast<int>(k->out_dirs_.size()) != k->num_scan_outputs_) {
      return info.Invalid("scan axes/directions attributes do not match the scan inputs/outputs");
    }
    for (int i = 0; i < k->num_scan_outputs_; ++i) {
      k->scan_types_.push_back(g.value(g.outputs()[k->num_states_ + i]).type);
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const int first = batched_ ? 1 : 0;
    std::vector<Tensor> states, scan_inputs;
    for (int i = 0; i < num_states_ + num_scan_inputs_; ++i) {
      const Tensor* t = ctx.input(first + i);
      if (t == nullptr) return ctx.Invalid(absl::StrCat("input ", first + i, " is missing"));
      (i < num_states_ ? states : scan_inputs).push_back(*t);
    }
    if (!batched_) {
      std::vector<Tensor> outs;
      absl::Status s = RunOne(ctx, states, scan_inputs, -1, &outs);
      if (!s.ok()) return s;
      for (int i = 0; i < ctx.num_outputs(); ++i) ctx.SetOutput(i, std::move(outs[i]));
      return absl::OkStatus();
    }
    // Opset 8: one run per batch entry, results stacked along axis 0.
    int64_t batch = -1;
    for (const Tensor& t : states) {
      if (t.rank() < 1) return ctx.Invalid("states need a batch axis (opset 8)");
      if (batch >= 0 && t.dim(0) != batch) return ctx.Invalid("batch sizes differ");
      batch = t.dim(0);
    }
    for (const Tensor& t : scan_inputs) {
      if (t.rank() < 2) return ctx.Invalid("scan inputs need batch and sequence axes (opset 8)");
      if (batch >= 0 && t.dim(0) != batch) return ctx.Invalid("batch sizes differ");
      batch = t.dim(0);
    }
    std::vector<int64_t> lens;
    if (const Tensor* sl = ctx.input(0)) {
      absl::StatusOr<std::vector<int64_t>> v = sl->ToInt64Vector();
      if (!v.ok() || static_cast<int64_t>(v->size()) != batch) {
        return ctx.Invalid("sequence_lens must hold one integer per batch entry");
      }
      lens = *v;
    }
    std::vector<std::vector<Tensor>> per_output(num_states_ + num_scan_outputs_);
    MemoryReservation collected(ctx.memory());
    for (int64_t b = 0; b < batch; ++b) {
      if (ctx.ShouldStop()) {
        return ctx.StopStatus(absl::StrCat(ctx.info().label(), " batch entry ", b));
      }
      const int64_t collected_bytes = 2 * static_cast<int64_t>(per_output.size() * sizeof(Tensor));
      if (!collected.TryAdd(collected_bytes)) {
        return collected.budget()->ExhaustedError(
            collected_bytes, absl::StrCat(ctx.info().label(), " batch entry ", b, ": outputs"));
      }
      std::vector<Tensor> s, x;
      for (const Tensor& t : states) {
        absl::StatusOr<Tensor> v = SliceAlong(ctx, t, 0, b);
        if (!v.ok()) return v.status();
        s.push_back(*std::move(v));
      }
      for (const Tensor& t : scan_inputs) {
        absl::StatusOr<Tensor> v = SliceAlong(ctx, t, 0, b);
        if (!v.ok()) return v.status();
        x.push_back(*std::move(v));
      }
      std::vector<Tensor> outs;
      absl::Status st = RunOne(ctx, s, x, lens.empty() ? -1 : lens[b], &outs);
      if (!st.ok()) return st;
      for (size_t i = 0; i < outs.size(); ++i) per_output[i].push_back(std::move(outs[i]));
    }
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      TensorType empty = i < num_states_ ? TensorType() : scan_types_[i - num_states_];
      absl::StatusOr<Tensor> t =
          Stack(per_output[i], 0, empty, ctx, absl::StrCat("output ", i));
      if (!t.ok()) return t.status();
      ctx.SetOutput(i, *std::move(t));
    }
    return absl::OkStatus();
  }

 private:
  ScanKernel() = default;

  // One scan over `scan_inputs` (no batch axis); `length` < 0: the whole sequence. In the
  // batched form shorter sequences leave the rest of each scan output zero.
  absl::Status RunOne(const KernelContext& ctx, std::vector<Tensor> states,
                      const std::vector<Tensor>& scan_inputs, int64_t length,
                      std::vector<Tensor>* outs) const {
    int64_t seq = -1;
    std::vector<int> axes(num_scan_inputs_);
    for (int i = 0; i < num_scan_inputs_; ++i) {
      absl::StatusOr<int> a = NormalizeAxis(in_axes_[i], scan_inputs[i].rank(), ctx.info());
      if (!a.ok()) return a.status();
      axes[i] = *a;
      const int64_t n = scan_inputs[i].dim(*a);
      if (seq >= 0 && n != seq) {
        return ctx.Invalid(absl::StrCat("scan inputs have sequence lengths ", seq, " and ", n));
      }
      seq = n;
    }
    const int64_t steps = length < 0 ? seq : std::min(seq, length);
    std::vector<Tensor> feed(num_states_ + num_scan_inputs_);
    for (int i = 0; i < num_states_; ++i) feed[i] = std::move(states[i]);
    std::vector<std::vector<Tensor>> scans(num_scan_outputs_);
    const RunOptions body_run = BodyRun(ctx);
    MemoryReservation collected(ctx.memory());
    for (int64_t t = 0; t < steps; ++t) {
      if (ctx.ShouldStop()) {
        return ctx.StopStatus(absl::StrCat(ctx.info().label(), " iteration ", t));
      }
      const int64_t collected_bytes =
          2 * num_scan_outputs_ * static_cast<int64_t>(sizeof(Tensor));
      if (!collected.TryAdd(collected_bytes)) {
        return collected.budget()->ExhaustedError(
            collected_bytes, absl::StrCat(ctx.info().label(), " iteration ", t, ": scan outputs"));
      }
      for (int i = 0; i < num_scan_inputs_; ++i) {
        const int64_t idx = in_dirs_[i] != 0 ? steps - 1 - t : t;
        absl::StatusOr<Tensor> slice = SliceAlong(ctx, scan_inputs[i], axes[i], idx);
        if (!slice.ok()) return slice.status();
        feed[num_states_ + i] = *std::move(slice);
      }
      absl::StatusOr<RunResult> r = body_->RunPositional(feed, body_run, ctx.outer_lookup());
      if (!r.ok()) return r.status();
      for (int i = 0; i < num_states_; ++i) feed[i] = std::move(r->outputs[i]);
      for (int k = 0; k < num_scan_outputs_; ++k) {
        scans[k].push_back(std::move(r->outputs[num_states_ + k]));
      }
    }
    outs->clear();
    for (int i = 0; i < num_states_; ++i) outs->push_back(std::move(feed[i]));
    for (int k = 0; k < num_scan_outputs_; ++k) {
      std::vector<Tensor>& parts = scans[k];
      if (out_dirs_[k] != 0) std::reverse(parts.begin(), parts.end());
      if (steps < seq && !parts.empty()) {  // pad short sequences with zeros (opset 8)
        absl::StatusOr<Tensor> zero =
            ctx.AllocateTemp(parts[0].dtype(), parts[0].shape(), "scan output padding");
        if (!zero.ok()) return zero.status();
        if (zero->dtype() != v1::DT_STRING && zero->byte_size() > 0) {
          std::memset(zero->raw_data(), 0, zero->byte_size());
        }
        while (static_cast<int64_t>(parts.size()) < seq) parts.push_back(*zero);
      }
      absl::StatusOr<Tensor> t = Stack(parts, out_axes_[k], scan_types_[k], ctx,
                                       absl::StrCat("scan output ", k));
      if (!t.ok()) return t.status();
      outs->push_back(*std::move(t));
    }
    return absl::OkStatus();
  }

  std::unique_ptr<Executor> body_;
  bool batched_ = false;
  int num_scan_inputs_ = 0;
  int num_states_ = 0;
  int num_scan_outputs_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
  std::vector<TensorType> scan_types_;
};

}  // namespace

absl::Status RegisterControlFlowKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("If", KernelFactory(IfKernel::Create)));
  s.Update(registry.Register("Loop", KernelFactory(LoopKernel::Create)));
  s.Update(registry.Register("Scan", KernelFactory(ScanKernel::Create)));
  return s;
}

}  // namespace graphopt::runtime
