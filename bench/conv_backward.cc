// A convolution's backward kernels against its forward one, through the runtime's executor
// (the kernels a training graph runs): Conv, ConvGradData (the data gradient) and
// ConvGradWeight (the weight gradient) of representative resnet50 layers at batch 8, float32,
// NCHW tensors as ONNX graphs hold them.
//
//   conv_backward [--rounds R] [--threads 1,2]
//
// Each of the three ops is warmed up, then the three run interleaved, R rounds; the figures
// are the medians of wall time per op, and the ratios of the backward medians to the forward
// one (the target: each backward at most ~3x the forward).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
#include "graph/proto_convert.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

namespace {

using graphopt::runtime::Executor;
using graphopt::runtime::KernelRegistry;
using graphopt::runtime::Shape;
using graphopt::runtime::Tensor;

struct Layer {
  const char* name;
  int64_t c, size, m, k, stride, pad;
};

// torchvision resnet50 (v1.5), batch 8.
const Layer kLayers[] = {
    {"stem 7x7/2, 3->64, 224", 3, 224, 64, 7, 2, 3},
    {"3x3, 64->64, 56", 64, 56, 64, 3, 1, 1},
    {"1x1, 64->256, 56", 64, 56, 256, 1, 1, 0},
    {"1x1/2, 256->512, 56 (downsample)", 256, 56, 512, 1, 2, 0},
    {"3x3, 256->256, 14", 256, 14, 256, 3, 1, 1},
};
constexpr int64_t kBatch = 8;

Tensor Filled(const Shape& shape, float seed) {
  Tensor t = *Tensor::Allocate(graphopt::v1::DT_FLOAT32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = seed * static_cast<float>((i * 7919) % 1000 - 500) / 500.0f;
  return t;
}

Tensor Ints(const Shape& shape) {
  Tensor t = *Tensor::Allocate(graphopt::v1::DT_INT64, {static_cast<int64_t>(shape.size())});
  for (size_t i = 0; i < shape.size(); ++i) t.data<int64_t>()[i] = shape[i];
  return t;
}

// An executor of one node `op` (domain `domain`) reading `num_inputs` graph inputs.
std::unique_ptr<Executor> OneNode(const KernelRegistry& registry, const std::string& domain,
                                  const std::string& op, int num_inputs, const Layer& l,
                                  int threads) {
  graphopt::v1::Graph proto;
  graphopt::v1::Node* node = proto.add_nodes();
  node->set_name("n");
  node->set_op_type(op);
  node->set_domain(domain);
  for (int i = 0; i < num_inputs; ++i) {
    const std::string name = absl::StrCat("in", i);
    node->add_inputs(name);
    proto.add_inputs()->set_name(name);
  }
  node->add_outputs("out");
  proto.add_outputs()->set_name("out");
  auto ints = [&](const char* name, int64_t v) {
    graphopt::v1::Attribute* a = node->add_attributes();
    a->set_name(name);
    a->mutable_ints()->add_values(v);
    a->mutable_ints()->add_values(v);
  };
  ints("strides", l.stride);
  graphopt::v1::Attribute* pads = node->add_attributes();
  pads->set_name("pads");
  for (int i = 0; i < 4; ++i) pads->mutable_ints()->add_values(l.pad);
  absl::StatusOr<graphopt::Graph> graph = graphopt::GraphFromProto(std::move(proto));
  if (!graph.ok()) {
    std::fprintf(stderr, "%s\n", graph.status().ToString().c_str());
    std::exit(1);
  }
  graphopt::runtime::ExecutorOptions options;
  options.num_threads = threads;
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::Create(*std::move(graph), registry, options);
  if (!ex.ok()) {
    std::fprintf(stderr, "%s\n", ex.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(ex);
}

double TimeRun(const Executor& ex, const std::vector<Tensor>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<graphopt::runtime::RunResult> r = ex.RunPositional(inputs);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    std::exit(1);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  std::vector<int> thread_counts = {1, 2};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) {
      rounds = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--threads") == 0) {
      thread_counts.clear();
      for (absl::string_view t : absl::StrSplit(argv[i + 1], ',')) {
        int n = 0;
        if (absl::SimpleAtoi(t, &n) && n > 0) thread_counts.push_back(n);
      }
    } else {
      std::fprintf(stderr, "usage: conv_backward [--rounds R] [--threads 1,2]\n");
      return 2;
    }
  }
  KernelRegistry registry;
  if (absl::Status s = graphopt::runtime::RegisterCpuKernels(registry); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("%-34s %3s %10s %10s %10s %7s %7s\n", "layer (batch 8, float32)", "thr",
              "fwd ms", "data ms", "weight ms", "data/f", "wgt/f");
  for (int threads : thread_counts) {
    for (const Layer& l : kLayers) {
      const int64_t out = (l.size + 2 * l.pad - l.k) / l.stride + 1;
      const Shape xs = {kBatch, l.c, l.size, l.size}, ws = {l.m, l.c, l.k, l.k};
      const Shape ys = {kBatch, l.m, out, out};
      const Tensor x = Filled(xs, 1.0f), w = Filled(ws, 0.1f), dy = Filled(ys, 0.5f);
      const auto fwd = OneNode(registry, "", "Conv", 2, l, threads);
      const auto data = OneNode(registry, "graphopt", "ConvGradData", 3, l, threads);
      const auto weight = OneNode(registry, "graphopt", "ConvGradWeight", 3, l, threads);
      const std::vector<Tensor> fwd_in = {x, w}, data_in = {dy, w, Ints(xs)},
                                weight_in = {x, dy, Ints(ws)};
      for (int i = 0; i < 2; ++i) {
        TimeRun(*fwd, fwd_in);
        TimeRun(*data, data_in);
        TimeRun(*weight, weight_in);
      }
      std::vector<double> tf, td, tw;
      for (int r = 0; r < rounds; ++r) {
        tf.push_back(TimeRun(*fwd, fwd_in));
        td.push_back(TimeRun(*data, data_in));
        tw.push_back(TimeRun(*weight, weight_in));
      }
      const double f = graphopt::bench::Median(tf), d = graphopt::bench::Median(td),
                   g = graphopt::bench::Median(tw);
      std::printf("%-34s %3d %10.2f %10.2f %10.2f %7.2f %7.2f\n", l.name, threads, f * 1e3,
                  d * 1e3, g * 1e3, d / f, g / f);
      std::fflush(stdout);
    }
  }
  return 0;
}
