#include "passes/runtime_test_util.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt {
namespace testing {

v1::Tensor FloatTensorProto(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values) {
  v1::Tensor t;
  t.set_name(name);
  t.set_dtype(v1::DT_FLOAT32);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                             values.size() * sizeof(float)));
  return t;
}

v1::Tensor Int64TensorProto(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values) {
  v1::Tensor t;
  t.set_name(name);
  t.set_dtype(v1::DT_INT64);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                             values.size() * sizeof(int64_t)));
  return t;
}

std::string WithInitializers(const std::string& text,
                             const std::vector<v1::Tensor>& initializers) {
  v1::Graph graph;
  // Test setup: a malformed graph text is a bug in the test.
  if (!google::protobuf::TextFormat::ParseFromString(text, &graph)) std::abort();
  for (const v1::Tensor& t : initializers) *graph.add_initializers() = t;
  std::string out;
  google::protobuf::TextFormat::PrintToString(graph, &out);
  return out;
}

std::vector<float> SeededFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(count);
  for (float& v : out) v = dist(rng);
  return out;
}

runtime::Tensor FloatTensor(const std::vector<int64_t>& dims, const std::vector<float>& values) {
  return runtime::Tensor::FromVector<float>(v1::DT_FLOAT32, values,
                                            runtime::Shape(dims.begin(), dims.end()));
}

TestRuntime::TestRuntime() {
  if (!runtime::RegisterCpuKernels(kernels_).ok()) std::abort();
}

absl::StatusOr<std::vector<runtime::Tensor>> TestRuntime::Run(
    const v1::Graph& graph,
    const std::vector<std::pair<std::string, runtime::Tensor>>& inputs) const {
  absl::StatusOr<Graph> ir = GraphFromProto(graph);
  if (!ir.ok()) return ir.status();
  absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::Create(*std::move(ir), kernels_, runtime::ExecutorOptions{});
  if (!executor.ok()) return executor.status();
  absl::StatusOr<runtime::RunResult> result = (*executor)->Run(inputs);
  if (!result.ok()) return result.status();
  return std::move(result->outputs);
}

std::string CompareOutputs(const std::vector<runtime::Tensor>& got,
                           const std::vector<runtime::Tensor>& want, bool bit_exact,
                           double rtol) {
  if (got.size() != want.size()) {
    return absl::StrCat(got.size(), " outputs, expected ", want.size());
  }
  for (size_t k = 0; k < got.size(); ++k) {
    const runtime::Tensor& g = got[k];
    const runtime::Tensor& w = want[k];
    if (g.dtype() != w.dtype() || g.shape() != w.shape()) {
      return absl::StrCat("output ", k, ": ", g.DebugString(), ", expected ", w.DebugString());
    }
    if (g.dtype() == v1::DT_STRING) {
      for (int64_t i = 0; i < g.num_elements(); ++i) {
        if (g.strings()[i] != w.strings()[i]) return absl::StrCat("output ", k, "[", i, "]");
      }
      continue;
    }
    const bool approximate = !bit_exact && IsFloatingPoint(g.dtype());
    if (!approximate) {
      if (g.byte_size() > 0 && std::memcmp(g.raw_data(), w.raw_data(), g.byte_size()) != 0) {
        for (int64_t i = 0; i < g.num_elements(); ++i) {
          const size_t width = g.element_size();
          if (std::memcmp(static_cast<const char*>(g.raw_data()) + i * width,
                          static_cast<const char*>(w.raw_data()) + i * width, width) != 0) {
            return absl::StrCat("output ", k, "[", i, "]: ", g.ElementAsDouble(i),
                                " differs in its bits from ", w.ElementAsDouble(i));
          }
        }
      }
      continue;
    }
    for (int64_t i = 0; i < g.num_elements(); ++i) {
      const double a = g.ElementAsDouble(i), b = w.ElementAsDouble(i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (!(std::fabs(a - b) <= 1e-5 + rtol * std::fabs(b))) {
        return absl::StrCat("output ", k, "[", i, "]: ", a, ", expected ", b, " (rtol ", rtol,
                            ")");
      }
    }
  }
  return "";
}

absl::StatusOr<v1::Graph> OptimizeAndCompare(
    const PassTestEnv& env, const std::string& text, const std::vector<PassSpec>& passes,
    const std::vector<std::pair<std::string, runtime::Tensor>>& inputs, bool bit_exact,
    double rtol, PipelineResult* result) {
  absl::StatusOr<v1::Graph> optimized = env.RunSpecs(text, passes, result);
  if (!optimized.ok()) return optimized.status();
  absl::StatusOr<Graph> original = env.Parse(text);
  if (!original.ok()) return original.status();
  TestRuntime runtime;
  absl::StatusOr<std::vector<runtime::Tensor>> want =
      runtime.Run(GraphToProto(*std::move(original)), inputs);
  if (!want.ok()) {
    return absl::Status(want.status().code(),
                        absl::StrCat("the original does not run: ", want.status().message()));
  }
  absl::StatusOr<std::vector<runtime::Tensor>> got = runtime.Run(*optimized, inputs);
  if (!got.ok()) {
    return absl::Status(got.status().code(),
                        absl::StrCat("the optimized graph does not run: ", got.status().message()));
  }
  if (std::string diff = CompareOutputs(*got, *want, bit_exact, rtol); !diff.empty()) {
    return absl::InternalError(absl::StrCat("outputs differ: ", diff));
  }
  return optimized;
}

}  // namespace testing
}  // namespace graphopt
