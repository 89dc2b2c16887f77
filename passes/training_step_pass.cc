// The training_step pass: turns a graph with gradient outputs (the gradient pass's "<w>_grad")
// into one training step. It appends each parameter's optimizer update, adds the optimizer's
// state (momentum buffers, Adam's moments, Adagrad's sums, the step count) as initializers, and
// records state updates (Graph::state_updates), so that a worker holding the plan's state
// (worker.proto, LoadPlanRequest.session) trains by executing the plan repeatedly.
//
// The updates follow torch.optim's definitions, so that a step here equals a step there:
//   sgd:      w -= lr * (g + wd*w)
//   momentum: ONNX Momentum (standard: alpha=momentum, beta=1; or nesterov) with T the steps
//             taken before this one: v = momentum*v + g (v = g on the first step), w -= lr*v,
//             torch.optim.SGD(momentum=m, dampening=0); for float64 parameters the same update
//             from primitive ops, since ONNX Momentum's alpha is a float32 attribute
//   adagrad:  ONNX Adagrad with T the steps taken before: torch.optim.Adagrad
//   adam:     torch.optim.Adam, built from primitive ops: ONNX Adam adds epsilon to sqrt(v)
//             before the bias correction (torch adds it after), a difference of up to
//             epsilon/sqrt(v) in each update, which a torch comparison cannot accept.
// Every state tensor (parameters included) becomes a graph input with its initializer as
// default: a value a caller can feed is never a constant to the other passes (constant_fold,
// fold_batchnorm), so the state cannot be folded into the plan.

#include "passes/training_step_pass.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/types.h"

namespace graphopt {
namespace {

constexpr char kOnnxTrainingDomain[] = "ai.onnx.preview.training";

enum class Optimizer { kSgd, kMomentum, kAdam, kAdagrad };

struct Options {
  Optimizer optimizer = Optimizer::kSgd;
  double lr = 0.01;
  double momentum = 0.9;
  bool nesterov = false;
  double beta1 = 0.9;
  double beta2 = 0.999;
  // Negative: the optimizer's torch default (adam 1e-8, adagrad 1e-10).
  double epsilon = -1;
  double weight_decay = 0;
  double lr_decay = 0;
  std::vector<std::string> params;
  std::string suffix = "_grad";
  bool keep_gradients = false;
};

absl::StatusOr<double> ParseNumber(const PassOptions& options, const std::string& key,
                                   double default_value) {
  auto it = options.find(key);
  if (it == options.end()) return default_value;
  double v;
  if (!absl::SimpleAtod(it->second, &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("training_step: option ", key, "='", it->second, "' is not a number"));
  }
  return v;
}

absl::StatusOr<Options> ParseOptions(const PassOptions& options) {
  Options o;
  if (auto it = options.find("optimizer"); it != options.end()) {
    if (it->second == "sgd") {
      o.optimizer = Optimizer::kSgd;
    } else if (it->second == "momentum") {
      o.optimizer = Optimizer::kMomentum;
    } else if (it->second == "adam") {
      o.optimizer = Optimizer::kAdam;
    } else if (it->second == "adagrad") {
      o.optimizer = Optimizer::kAdagrad;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "training_step: optimizer '", it->second, "' (sgd, momentum, adam or adagrad)"));
    }
  }
  struct Number {
    const char* key;
    double* out;
  };
  for (Number n : {Number{"lr", &o.lr}, Number{"momentum", &o.momentum},
                   Number{"beta1", &o.beta1}, Number{"beta2", &o.beta2},
                   Number{"epsilon", &o.epsilon}, Number{"weight_decay", &o.weight_decay},
                   Number{"lr_decay", &o.lr_decay}}) {
    absl::StatusOr<double> v = ParseNumber(options, n.key, *n.out);
    if (!v.ok()) return v.status();
    *n.out = *v;
  }
  if (o.epsilon < 0) o.epsilon = o.optimizer == Optimizer::kAdagrad ? 1e-10 : 1e-8;
  for (const char* key : {"nesterov", "keep_gradients"}) {
    auto it = options.find(key);
    if (it == options.end()) continue;
    bool v;
    if (!absl::SimpleAtob(it->second, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("training_step: option ", key, "='", it->second, "' is not 0 or 1"));
    }
    (std::string(key) == "nesterov" ? o.nesterov : o.keep_gradients) = v;
  }
  if (auto it = options.find("params"); it != options.end()) {
    for (absl::string_view part : absl::StrSplit(it->second, absl::ByAnyChar(";,"))) {
      part = absl::StripAsciiWhitespace(part);
      if (!part.empty()) o.params.emplace_back(part);
    }
  }
  if (auto it = options.find("suffix"); it != options.end()) o.suffix = it->second;
  return o;
}

v1::Tensor ScalarTensor(const std::string& name, v1::DataType dtype, const void* bytes,
                        size_t size) {
  v1::Tensor t;
  t.set_name(name);
  t.set_dtype(dtype);
  t.set_raw_data(std::string(static_cast<const char*>(bytes), size));
  return t;
}

// Parameters a step trains: float32, or float64 (for checks against references in double).
bool IsTrainableType(v1::DataType dtype) {
  return dtype == v1::DT_FLOAT32 || dtype == v1::DT_FLOAT64;
}

// Appends nodes and values to the graph, each value typed as it is made.
class StepBuilder {
 public:
  // `dtype`: the parameters' element type (float32 or float64), which the step's scalars take.
  StepBuilder(Graph& graph, v1::DataType dtype) : graph_(graph), dtype_(dtype) {}
  v1::DataType dtype() const { return dtype_; }

  static TensorType Scalar(v1::DataType dtype) { return TensorType{dtype, Dims{}}; }

  // A new initializer named after `base`; a graph input when `input` (state, or the lr).
  ValueId Initializer(absl::string_view base, v1::Tensor tensor, const TensorType& type,
                      bool input) {
    const ValueId v = graph_.AddUniqueValue(base);
    tensor.set_name(graph_.value(v).name);
    graph_.SetInitializer(v, std::move(tensor));
    graph_.mutable_value(v).type = type;
    if (input) graph_.AddGraphInput(v);
    return v;
  }
  // A scalar of the parameters' type.
  ValueId FloatConstant(double value) {
    if (dtype_ == v1::DT_FLOAT64) return DoubleConstant(value);
    const float f = static_cast<float>(value);
    return Initializer("training.c", ScalarTensor("", v1::DT_FLOAT32, &f, sizeof(f)),
                       Scalar(v1::DT_FLOAT32), false);
  }
  ValueId DoubleConstant(double value) {
    return Initializer("training.c", ScalarTensor("", v1::DT_FLOAT64, &value, sizeof(value)),
                       Scalar(v1::DT_FLOAT64), false);
  }
  // Zeros of `like`'s type: a new state tensor.
  ValueId ZerosLike(absl::string_view base, ValueId like) {
    // A copy: Initializer adds a value, which may move the graph's values.
    const TensorType type = graph_.value(like).type;
    const v1::Tensor* init = graph_.initializer_of(like);
    v1::Tensor t;
    t.set_dtype(type.dtype);
    t.mutable_dims()->CopyFrom(init->dims());
    int64_t n = 1;
    for (int64_t d : init->dims()) n *= d;
    t.mutable_raw_data()->assign(static_cast<size_t>(n) * DataTypeSize(type.dtype), '\0');
    return Initializer(base, std::move(t), type, true);
  }

  absl::StatusOr<std::vector<ValueId>> Emit(absl::string_view name, absl::string_view op,
                                            absl::Span<const ValueId> inputs,
                                            const std::vector<std::pair<std::string, TensorType>>&
                                                outputs,
                                            AttributeMap attributes = {},
                                            absl::string_view domain = "") {
    std::vector<ValueId> outs;
    outs.reserve(outputs.size());
    for (const auto& [base, type] : outputs) {
      outs.push_back(graph_.AddUniqueValue(base));
      graph_.mutable_value(outs.back()).type = type;
    }
    absl::StatusOr<NodeId> id = graph_.AddNode(std::string(name), std::string(op),
                                               std::string(domain), inputs, outs,
                                               std::move(attributes));
    if (!id.ok()) return id.status();
    ++nodes_;
    return outs;
  }
  // One output typed `type`, named after `base`.
  absl::StatusOr<ValueId> Emit1(absl::string_view base, absl::string_view op,
                                absl::Span<const ValueId> inputs, const TensorType& type,
                                AttributeMap attributes = {}) {
    absl::StatusOr<std::vector<ValueId>> outs =
        Emit(absl::StrCat("training_step/", base), op, inputs, {{std::string(base), type}},
             std::move(attributes));
    if (!outs.ok()) return outs.status();
    return (*outs)[0];
  }

  int nodes() const { return nodes_; }

 private:
  Graph& graph_;
  v1::DataType dtype_;
  int nodes_ = 0;
};

v1::Attribute FloatAttribute(float f) {
  v1::Attribute a;
  a.set_f(f);
  return a;
}
v1::Attribute StringAttribute(const std::string& s) {
  v1::Attribute a;
  a.set_s(s);
  return a;
}

// Shorthands over StepBuilder that give up on the first error.
#define TS_ASSIGN(lhs, expr)              \
  auto lhs##_or = (expr);                 \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  const auto lhs = *lhs##_or

class TrainingStepPass : public Pass {
 public:
  explicit TrainingStepPass(Options options) : options_(std::move(options)) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<std::pair<ValueId, ValueId>>> params = FindParams(graph);
    if (!params.ok()) return params.status();
    StepBuilder b(graph, graph.value(params->front().first).type.dtype);
    step_ = b.Initializer(kTrainingStepName, Int64Scalar(0), StepBuilder::Scalar(v1::DT_INT64),
                          true);
    const float lr32 = static_cast<float>(options_.lr);
    const double lr64 = options_.lr;
    lr_ = b.Initializer(kTrainingLrName,
                        b.dtype() == v1::DT_FLOAT64
                            ? ScalarTensor("", v1::DT_FLOAT64, &lr64, sizeof(lr64))
                            : ScalarTensor("", v1::DT_FLOAT32, &lr32, sizeof(lr32)),
                        StepBuilder::Scalar(b.dtype()), true);
    const ValueId one = b.Initializer("training.one", Int64Scalar(1),
                                      StepBuilder::Scalar(v1::DT_INT64), false);
    TS_ASSIGN(step_next, b.Emit1(absl::StrCat(kTrainingStepName, ".next"), "Add", {step_, one},
                                 StepBuilder::Scalar(v1::DT_INT64)));
    updates_.emplace_back(step_, step_next);
    for (auto [w, g] : *params) {
      // The parameter is state: a graph input with its initializer as default.
      if (!graph.value(w).is_graph_input) graph.AddGraphInput(w);
    }
    absl::Status s;
    switch (options_.optimizer) {
      case Optimizer::kSgd:
        s = Sgd(graph, b, *params);
        break;
      case Optimizer::kMomentum:
        // ONNX Momentum carries alpha as a float32 attribute: a float64 step built on it would
        // train with 0.9f = 0.89999997615814, not the momentum asked for.
        s = b.dtype() == v1::DT_FLOAT64 ? Momentum(graph, b, *params)
                                        : OnnxOptimizer(graph, b, *params);
        break;
      case Optimizer::kAdagrad:
        s = OnnxOptimizer(graph, b, *params);
        break;
      case Optimizer::kAdam:
        s = Adam(graph, b, *params, step_next);
        break;
    }
    if (!s.ok()) return s;
    // State updates in a stable order: the parameters, then the optimizer's state, then the
    // step count.
    std::vector<std::pair<ValueId, ValueId>> ordered(updates_.begin() + 1, updates_.end());
    ordered.push_back(updates_[0]);
    // The gradient outputs give way to the parameters' updates (a step returns its loss, not
    // its gradients); the other updates follow the graph's outputs.
    for (size_t i = 0; i < ordered.size(); ++i) {
      const ValueId update = ordered[i].second;
      if (i < params->size() && !options_.keep_gradients) {
        graph.ReplaceGraphOutput((*params)[i].second, update);
      } else {
        graph.AddGraphOutput(update);
      }
      v1::StateUpdate u;
      u.set_state(graph.value(ordered[i].first).name);
      u.set_update(graph.value(update).name);
      graph.state_updates.push_back(std::move(u));
    }
    std::vector<std::string> names;
    for (const auto& [w, g] : *params) names.push_back(graph.value(w).name);
    context.Note(absl::StrCat(OptimizerName(), " step for ", params->size(), " parameters (",
                              absl::StrJoin(names.begin(),
                                            names.begin() + std::min<size_t>(names.size(), 8),
                                            ", "),
                              names.size() > 8 ? ", ..." : "", "): ", b.nodes(), " nodes, ",
                              ordered.size(), " state tensors"));
    return true;
  }

 private:
  static v1::Tensor Int64Scalar(int64_t v) {
    return ScalarTensor("", v1::DT_INT64, &v, sizeof(v));
  }

  const char* OptimizerName() const {
    switch (options_.optimizer) {
      case Optimizer::kSgd:
        return "sgd";
      case Optimizer::kMomentum:
        return options_.nesterov ? "nesterov momentum" : "momentum";
      case Optimizer::kAdam:
        return "adam";
      case Optimizer::kAdagrad:
        return "adagrad";
    }
    return "";
  }

  // (parameter, its gradient) pairs: the named params, or every float32 initializer with a
  // gradient output.
  absl::StatusOr<std::vector<std::pair<ValueId, ValueId>>> FindParams(const Graph& graph) const {
    if (!graph.state_updates.empty()) {
      return absl::FailedPreconditionError(
          "training_step: the graph already has state updates (it is a training step)");
    }
    absl::flat_hash_set<ValueId> outputs(graph.outputs().begin(), graph.outputs().end());
    auto grad_of = [&](ValueId w) -> ValueId {
      const ValueId g = graph.FindValue(absl::StrCat(graph.value(w).name, options_.suffix));
      return g.valid() && outputs.contains(g) ? g : ValueId();
    };
    std::vector<std::pair<ValueId, ValueId>> params;
    if (!options_.params.empty()) {
      absl::flat_hash_set<ValueId> seen;
      for (const std::string& name : options_.params) {
        const ValueId w = graph.FindValue(name);
        if (!w.valid() || graph.value(w).initializer < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("training_step: parameter '", name, "' is not an initializer"));
        }
        if (!IsTrainableType(graph.value(w).type.dtype)) {
          return absl::InvalidArgumentError(
              absl::StrCat("training_step: parameter '", name, "' is ",
                           DataTypeName(graph.value(w).type.dtype),
                           "; float32 or float64 expected"));
        }
        const ValueId g = grad_of(w);
        if (!g.valid()) {
          return absl::InvalidArgumentError(
              absl::StrCat("training_step: parameter '", name, "' has no gradient output '",
                           name, options_.suffix, "' (run the gradient pass with wrt first)"));
        }
        if (seen.insert(w).second) params.emplace_back(w, g);
      }
    } else {
      for (ValueId w : graph.InitializerValues()) {
        if (!IsTrainableType(graph.value(w).type.dtype)) continue;
        const ValueId g = grad_of(w);
        if (g.valid()) params.emplace_back(w, g);
      }
      if (params.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "training_step: no float32 or float64 initializer has a gradient output '<name>",
            options_.suffix, "' (run the gradient pass with wrt first)"));
      }
    }
    const v1::DataType dtype = graph.value(params.front().first).type.dtype;
    for (const auto& [w, g] : params) {
      if (graph.value(w).type.dtype != dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            "training_step: parameter '", graph.value(w).name, "' is ",
            DataTypeName(graph.value(w).type.dtype), ", parameter '",
            graph.value(params.front().first).name, "' ", DataTypeName(dtype),
            "; one step trains parameters of one type"));
      }
      if (graph.value(g).type.dtype != dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            "training_step: gradient '", graph.value(g).name, "' is ",
            DataTypeName(graph.value(g).type.dtype), "; ", DataTypeName(dtype), " expected"));
      }
    }
    return params;
  }

  // g + weight_decay * w, or g.
  absl::StatusOr<ValueId> Regularized(StepBuilder& b, const Graph& graph, ValueId w, ValueId g) {
    if (options_.weight_decay == 0) return g;
    const std::string name = graph.value(w).name;  // a copy: values are added below
    const TensorType type = graph.value(w).type;
    const ValueId wd = b.FloatConstant(options_.weight_decay);
    TS_ASSIGN(decay, b.Emit1(absl::StrCat(name, ".decay"), "Mul", {w, wd}, type));
    return b.Emit1(absl::StrCat(name, ".g"), "Add", {g, decay}, type);
  }

  absl::Status Sgd(Graph& graph, StepBuilder& b,
                   const std::vector<std::pair<ValueId, ValueId>>& params) {
    for (const auto& [w, g] : params) {
      const std::string name = graph.value(w).name;
      const TensorType type = graph.value(w).type;
      TS_ASSIGN(gr, Regularized(b, graph, w, g));
      TS_ASSIGN(delta, b.Emit1(absl::StrCat(name, ".delta"), "Mul", {lr_, gr}, type));
      TS_ASSIGN(next, b.Emit1(absl::StrCat(name, ".next"), "Sub", {w, delta}, type));
      updates_.emplace_back(w, next);
    }
    return absl::OkStatus();
  }

  // torch.optim.SGD(momentum, dampening=0) from primitive ops, every scalar in the parameters'
  // type: v = momentum*v + g (v starts at zero, so the first step gives v = g exactly as torch's
  // buffer does), w -= lr*v; nesterov: w -= lr*(g + momentum*v).
  absl::Status Momentum(Graph& graph, StepBuilder& b,
                        const std::vector<std::pair<ValueId, ValueId>>& params) {
    const ValueId mu = b.FloatConstant(options_.momentum);
    std::vector<std::pair<ValueId, ValueId>> buffers;
    for (const auto& [w, g] : params) {
      const std::string name = graph.value(w).name;
      const TensorType type = graph.value(w).type;
      auto n = [&](const char* what) { return absl::StrCat(name, ".", what); };
      const ValueId v = b.ZerosLike(n("momentum"), w);
      TS_ASSIGN(gr, Regularized(b, graph, w, g));
      TS_ASSIGN(v_old, b.Emit1(n("momentum_decayed"), "Mul", {mu, v}, type));
      TS_ASSIGN(v_next, b.Emit1(n("momentum.next"), "Add", {v_old, gr}, type));
      ValueId direction = v_next;
      if (options_.nesterov) {
        TS_ASSIGN(ahead, b.Emit1(n("momentum_ahead"), "Mul", {mu, v_next}, type));
        TS_ASSIGN(d, b.Emit1(n("direction"), "Add", {gr, ahead}, type));
        direction = d;
      }
      TS_ASSIGN(delta, b.Emit1(n("delta"), "Mul", {lr_, direction}, type));
      TS_ASSIGN(w_next, b.Emit1(n("next"), "Sub", {w, delta}, type));
      updates_.emplace_back(w, w_next);
      buffers.emplace_back(v, v_next);
    }
    updates_.insert(updates_.end(), buffers.begin(), buffers.end());
    return absl::OkStatus();
  }

  // One ONNX Momentum or Adagrad node over every parameter: R, T, X..., G..., S... give
  // X_new..., S_new... (S: the velocity or the sum of squares).
  absl::Status OnnxOptimizer(Graph& graph, StepBuilder& b,
                             const std::vector<std::pair<ValueId, ValueId>>& params) {
    const bool momentum = options_.optimizer == Optimizer::kMomentum;
    const char* state_suffix = momentum ? ".momentum" : ".adagrad_sum";
    std::vector<ValueId> inputs = {lr_, step_};
    std::vector<ValueId> states;
    for (const auto& [w, g] : params) inputs.push_back(w);
    for (const auto& [w, g] : params) inputs.push_back(g);
    for (const auto& [w, g] : params) {
      states.push_back(b.ZerosLike(absl::StrCat(graph.value(w).name, state_suffix), w));
      inputs.push_back(states.back());
    }
    std::vector<std::pair<std::string, TensorType>> outputs;
    for (const auto& [w, g] : params) {
      outputs.emplace_back(absl::StrCat(graph.value(w).name, ".next"), graph.value(w).type);
    }
    for (ValueId s : states) {
      outputs.emplace_back(absl::StrCat(graph.value(s).name, ".next"), graph.value(s).type);
    }
    AttributeMap attrs;
    attrs["norm_coefficient"] = FloatAttribute(static_cast<float>(options_.weight_decay));
    if (momentum) {
      attrs["alpha"] = FloatAttribute(static_cast<float>(options_.momentum));
      attrs["beta"] = FloatAttribute(1.0f);
      attrs["mode"] = StringAttribute(options_.nesterov ? "nesterov" : "standard");
    } else {
      attrs["decay_factor"] = FloatAttribute(static_cast<float>(options_.lr_decay));
      attrs["epsilon"] = FloatAttribute(static_cast<float>(options_.epsilon));
    }
    absl::StatusOr<std::vector<ValueId>> outs =
        b.Emit(absl::StrCat("training_step/", momentum ? "Momentum" : "Adagrad"),
               momentum ? "Momentum" : "Adagrad", inputs, outputs, std::move(attrs),
               kOnnxTrainingDomain);
    if (!outs.ok()) return outs.status();
    const size_t n = params.size();
    for (size_t i = 0; i < n; ++i) updates_.emplace_back(params[i].first, (*outs)[i]);
    for (size_t i = 0; i < n; ++i) updates_.emplace_back(states[i], (*outs)[n + i]);
    return absl::OkStatus();
  }

  // torch.optim.Adam with t = the step count after this step:
  //   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g
  //   w -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
  absl::Status Adam(Graph& graph, StepBuilder& b,
                    const std::vector<std::pair<ValueId, ValueId>>& params, ValueId step_next) {
    // The bias corrections in float64, as torch computes them (in Python floats): 1 - b2^t in
    // float32 loses a few digits to cancellation at small t.
    const TensorType scalar = StepBuilder::Scalar(b.dtype());
    const TensorType scalar64 = StepBuilder::Scalar(v1::DT_FLOAT64);
    auto cast = [](v1::DataType to) {
      AttributeMap attrs;
      attrs["to"].set_i(to);  // graphopt's DataType numbers are ONNX's
      return attrs;
    };
    TS_ASSIGN(t, b.Emit1("training.t", "Cast", {step_next}, scalar64, cast(v1::DT_FLOAT64)));
    TS_ASSIGN(lr64, b.Emit1("training.lr64", "Cast", {lr_}, scalar64, cast(v1::DT_FLOAT64)));
    const ValueId one = b.DoubleConstant(1.0);
    TS_ASSIGN(b1t, b.Emit1("training.beta1_t", "Pow", {b.DoubleConstant(options_.beta1), t},
                           scalar64));
    TS_ASSIGN(b2t, b.Emit1("training.beta2_t", "Pow", {b.DoubleConstant(options_.beta2), t},
                           scalar64));
    TS_ASSIGN(bc1, b.Emit1("training.bias_correction1", "Sub", {one, b1t}, scalar64));
    TS_ASSIGN(bc2, b.Emit1("training.bias_correction2", "Sub", {one, b2t}, scalar64));
    TS_ASSIGN(step_size64, b.Emit1("training.step_size64", "Div", {lr64, bc1}, scalar64));
    TS_ASSIGN(root_bc2, b.Emit1("training.sqrt_bias_correction2_64", "Sqrt", {bc2}, scalar64));
    TS_ASSIGN(step_size, b.Emit1("training.step_size", "Cast", {step_size64}, scalar,
                                 cast(b.dtype())));
    TS_ASSIGN(sqrt_bc2, b.Emit1("training.sqrt_bias_correction2", "Cast", {root_bc2}, scalar,
                                cast(b.dtype())));
    // torch keeps beta1, beta2 and eps as Python floats and computes 1 - beta in them.
    const ValueId b1 = b.FloatConstant(options_.beta1);
    const ValueId b2 = b.FloatConstant(options_.beta2);
    const ValueId c1 = b.FloatConstant(1 - options_.beta1);
    const ValueId c2 = b.FloatConstant(1 - options_.beta2);
    const ValueId eps = b.FloatConstant(options_.epsilon);
    std::vector<std::pair<ValueId, ValueId>> moments;
    for (const auto& [w, g] : params) {
      const std::string name = graph.value(w).name;
      const TensorType type = graph.value(w).type;
      const ValueId m = b.ZerosLike(absl::StrCat(name, ".adam_m"), w);
      const ValueId v = b.ZerosLike(absl::StrCat(name, ".adam_v"), w);
      auto n = [&](const char* what) { return absl::StrCat(name, ".", what); };
      TS_ASSIGN(gr, Regularized(b, graph, w, g));
      TS_ASSIGN(m_old, b.Emit1(n("m_decayed"), "Mul", {b1, m}, type));
      TS_ASSIGN(m_g, b.Emit1(n("m_g"), "Mul", {c1, gr}, type));
      TS_ASSIGN(m_next, b.Emit1(absl::StrCat(graph.value(m).name, ".next"), "Add", {m_old, m_g},
                                type));
      TS_ASSIGN(v_old, b.Emit1(n("v_decayed"), "Mul", {b2, v}, type));
      TS_ASSIGN(gg, b.Emit1(n("g_squared"), "Mul", {gr, gr}, type));
      TS_ASSIGN(v_g, b.Emit1(n("v_g"), "Mul", {c2, gg}, type));
      TS_ASSIGN(v_next, b.Emit1(absl::StrCat(graph.value(v).name, ".next"), "Add", {v_old, v_g},
                                type));
      TS_ASSIGN(root, b.Emit1(n("sqrt_v"), "Sqrt", {v_next}, type));
      TS_ASSIGN(corrected, b.Emit1(n("sqrt_v_corrected"), "Div", {root, sqrt_bc2}, type));
      TS_ASSIGN(denom, b.Emit1(n("denominator"), "Add", {corrected, eps}, type));
      TS_ASSIGN(ratio, b.Emit1(n("direction"), "Div", {m_next, denom}, type));
      TS_ASSIGN(delta, b.Emit1(n("delta"), "Mul", {step_size, ratio}, type));
      TS_ASSIGN(w_next, b.Emit1(n("next"), "Sub", {w, delta}, type));
      updates_.emplace_back(w, w_next);
      moments.emplace_back(m, m_next);
      moments.emplace_back(v, v_next);
    }
    updates_.insert(updates_.end(), moments.begin(), moments.end());
    return absl::OkStatus();
  }

  const Options options_;
  ValueId step_;
  ValueId lr_;
  // (state, its update): the step count first, then the parameters in order, then the rest.
  std::vector<std::pair<ValueId, ValueId>> updates_;
};

#undef TS_ASSIGN

}  // namespace

PassInfo TrainingStepPassInfo() {
  PassInfo info;
  info.name = "training_step";
  info.description =
      "Appends the optimizer update of every parameter (an initializer with a gradient output "
      "'<name>_grad', from the gradient pass) and records the weights and the optimizer's "
      "state as the graph's state updates: one training step, for a worker session to run "
      "repeatedly.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.provides = {};
  info.preserves = {Analysis::kTypes, Analysis::kShapes};
  info.options = {
      {"optimizer", "sgd (default), momentum, adam or adagrad, as torch.optim defines them"},
      {"lr", "learning rate (default 0.01); the graph input 'training.lr' overrides it per run"},
      {"momentum", "momentum factor (default 0.9)"},
      {"nesterov", "1: Nesterov momentum"},
      {"beta1", "Adam's first-moment decay (default 0.9)"},
      {"beta2", "Adam's second-moment decay (default 0.999)"},
      {"epsilon", "Adam's (default 1e-8) or Adagrad's (default 1e-10) epsilon"},
      {"weight_decay", "L2 penalty added to the gradient (default 0)"},
      {"lr_decay", "Adagrad's learning-rate decay (default 0)"},
      {"params",
       "parameters to train, separated by ';' (default: every float32 or float64 initializer with a "
       "gradient output)"},
      {"suffix", "name suffix of the gradient outputs (default _grad)"},
      {"keep_gradients", "1: keep the gradients as graph outputs"},
  };
  info.min_opt_level = 0;
  info.factory = [](const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    absl::StatusOr<Options> o = ParseOptions(options);
    if (!o.ok()) return o.status();
    return std::unique_ptr<Pass>(std::make_unique<TrainingStepPass>(std::move(*o)));
  };
  return info;
}

}  // namespace graphopt
