#include "passes/gradient_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace testing {
namespace {

double Get(const runtime::Tensor& t, int64_t i) {
  if (t.dtype() == v1::DT_FLOAT64) return t.data<double>()[i];
  return t.data<float>()[i];
}

void Set(runtime::Tensor& t, int64_t i, double v) {
  if (t.dtype() == v1::DT_FLOAT64) {
    t.data<double>()[i] = v;
  } else {
    t.data<float>()[i] = static_cast<float>(v);
  }
}

bool IsFloat(v1::DataType d) { return d == v1::DT_FLOAT32 || d == v1::DT_FLOAT64; }

absl::StatusOr<runtime::Tensor> Copy(const runtime::Tensor& t) {
  absl::StatusOr<runtime::Tensor> c = runtime::Tensor::Allocate(t.dtype(), t.shape());
  if (!c.ok()) return c.status();
  if (t.byte_size() > 0) std::memcpy(c->raw_data(), t.raw_data(), t.byte_size());
  return c;
}

// L = sum_k sum(out_k * r_k) in double.
double Objective(const std::vector<runtime::Tensor>& outs,
                 const std::vector<runtime::Tensor>& weights) {
  double total = 0;
  for (size_t k = 0; k < weights.size(); ++k) {
    if (!weights[k].defined()) continue;
    for (int64_t i = 0; i < outs[k].num_elements(); ++i) total += Get(outs[k], i) * Get(weights[k], i);
  }
  return total;
}

}  // namespace

runtime::Tensor RandomTensor(v1::DataType dtype, const std::vector<int64_t>& dims, uint32_t seed,
                             double lo, double hi) {
  runtime::Shape shape(dims.begin(), dims.end());
  runtime::Tensor t = *runtime::Tensor::Allocate(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) Set(t, i, dist(rng));
  return t;
}

absl::Status CheckGradients(const PassTestEnv& env, const std::string& text,
                            const std::vector<std::pair<std::string, runtime::Tensor>>& inputs,
                            const GradientCheckOptions& options) {
  absl::StatusOr<v1::Graph> forward = env.Run(text, {"infer_type", "infer_shape"});
  if (!forward.ok()) return forward.status();
  std::vector<std::string> wrt = options.wrt;
  if (wrt.empty()) {
    for (const v1::ValueInfo& in : forward->inputs()) {
      for (const auto& [name, tensor] : inputs) {
        if (name == in.name() && IsFloat(tensor.dtype())) wrt.push_back(name);
      }
    }
  }
  if (wrt.empty()) return absl::InvalidArgumentError("no floating-point input to check");
  TestRuntime runtime;
  absl::StatusOr<std::vector<runtime::Tensor>> base = runtime.Run(*forward, inputs);
  if (!base.ok()) return base.status();

  PassSpec spec{"gradient", {{"wrt", absl::StrJoin(wrt, ";")}}};
  for (const auto& [key, value] : options.gradient_options) spec.options[key] = value;
  absl::StatusOr<v1::Graph> backward = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}}, spec});
  if (!backward.ok()) return backward.status();

  // The output gradients r_k, fed to the inputs "<output>_grad" the pass added.
  std::vector<runtime::Tensor> weights(base->size());
  std::vector<std::pair<std::string, runtime::Tensor>> feed = inputs;
  for (int k = 0; k < forward->outputs_size(); ++k) {
    const runtime::Tensor& out = (*base)[k];
    if (!IsFloat(out.dtype())) continue;
    std::vector<int64_t> dims(out.shape().begin(), out.shape().end());
    weights[k] = RandomTensor(out.dtype(), dims, options.seed + 101 * k);
    const std::string seed_name = absl::StrCat(forward->outputs(k).name(), "_grad");
    bool found = false;
    for (const v1::ValueInfo& in : backward->inputs()) found |= in.name() == seed_name;
    if (!found) return absl::InternalError(absl::StrCat("the pass added no input '", seed_name, "'"));
    absl::StatusOr<runtime::Tensor> w = Copy(weights[k]);
    if (!w.ok()) return w.status();
    feed.push_back({seed_name, std::move(*w)});
  }
  absl::StatusOr<std::vector<runtime::Tensor>> grads = runtime.Run(*backward, feed);
  if (!grads.ok()) return grads.status();

  for (const std::string& name : wrt) {
    int out_index = -1;
    for (int k = 0; k < backward->outputs_size(); ++k) {
      if (backward->outputs(k).name() == absl::StrCat(name, "_grad")) out_index = k;
    }
    if (out_index < 0) return absl::InternalError(absl::StrCat("no output '", name, "_grad'"));
    const runtime::Tensor& analytic = (*grads)[out_index];
    int input_index = -1;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].first == name) input_index = static_cast<int>(i);
    }
    if (input_index < 0) return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not an input"));
    const runtime::Tensor& x = inputs[input_index].second;
    if (analytic.shape() != x.shape()) {
      return absl::InternalError(absl::StrCat("gradient of '", name, "' has shape [",
                                              absl::StrJoin(analytic.shape(), ","), "], input [",
                                              absl::StrJoin(x.shape(), ","), "]"));
    }
    const int64_t n = x.num_elements();
    const int64_t step = std::max<int64_t>(1, n / std::max(1, options.max_elements));
    for (int64_t e = 0; e < n; e += step) {
      std::vector<std::pair<std::string, runtime::Tensor>> probe;
      for (const auto& [in_name, t] : inputs) {
        absl::StatusOr<runtime::Tensor> c = Copy(t);
        if (!c.ok()) return c.status();
        probe.push_back({in_name, std::move(*c)});
      }
      const double x0 = Get(x, e);
      const double h = options.eps * std::max(1.0, std::fabs(x0));
      Set(probe[input_index].second, e, x0 + h);
      absl::StatusOr<std::vector<runtime::Tensor>> up = runtime.Run(*forward, probe);
      if (!up.ok()) return up.status();
      // An output may share its input's buffer (Reshape, Identity): the second run gets a
      // copy of the input, so that writing x0 - h leaves the first run's outputs as they were.
      absl::StatusOr<runtime::Tensor> lowered = Copy(probe[input_index].second);
      if (!lowered.ok()) return lowered.status();
      probe[input_index].second = *std::move(lowered);
      Set(probe[input_index].second, e, x0 - h);
      absl::StatusOr<std::vector<runtime::Tensor>> down = runtime.Run(*forward, probe);
      if (!down.ok()) return down.status();
      const double numeric = (Objective(*up, weights) - Objective(*down, weights)) / (2 * h);
      const double got = Get(analytic, e);
      if (!(std::fabs(got - numeric) <= options.atol + options.rtol * std::fabs(numeric))) {
        return absl::InternalError(absl::StrCat("d/d", name, "[", e, "]: gradient pass ", got,
                                                ", finite differences ", numeric));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace testing
}  // namespace graphopt
