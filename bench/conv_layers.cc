// oneDNN's convolutions alone, on the layer shapes of the corpus CNNs (batch 1, channels-last,
// float32, the primitives the runtime's NhwcConv asks for: direct algorithm, weights in the
// primitive's layout, ReLU or Clip as a post-op), so that a oneDNN version, a thread count or
// the way the layer's input was written can be compared without the rest of the runtime.
//
//   conv_layers [--set resnet50|mobilenet_v2_dw|mobilenet_v2_pw] [--threads N] [--reps R]
//               [--per-layer] [--producer none|rows|channels|reversed] [--blocked]
//               [--impl NAME] [--impls]
//
// --blocked runs the activations in oneDNN's nChw16c layout instead of NHWC (the first layer,
// of 3 channels, stays NHWC); --impl NAME takes that implementation (e.g. jit_1x1:avx512_core)
// where oneDNN offers it for a layer instead of its first choice; --impls first times every
// avx512 implementation of each layer on its own, hot (and graphopt's own pointwise rows where
// the runtime uses them instead).
//
// --producer rewrites every layer's input before each run on the same threads, split across
// them as a producing operator would have written it: `rows` (thread t the t-th contiguous
// share, i.e. image rows in NHWC), `channels` (thread t the t-th share of every pixel's
// channels) or `reversed` (rows, but thread t the share of thread N-1-t), so that the input
// sits in one core's cache or the other's. The layer's time excludes the rewrite.
//
// Prints the median of R runs of the whole set (and with --per-layer of each distinct shape).
// The source compiles against oneDNN 2.x and 3.x: bench/onednn_version_ab.sh builds it against
// a oneDNN 3 wheel from PyPI next to Debian's 2.6 and runs both interleaved.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/bench_util.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/kernels/fast_math.h"

namespace {

struct Layer {
  int size;    // input height = width
  int cin, cout;
  int kernel;  // square
  int stride;
  int count;   // how many layers of the network have this shape
  bool depthwise;
  float clip;  // > 0: Clip(0, clip) post-op (mobilenet's ReLU6), else ReLU
};

// torchvision resnet50 (v1.5: the stride on the 3x3), in network order.
const Layer kResnet50[] = {
    {224, 3, 64, 7, 2, 1, false, 0},     {56, 64, 64, 1, 1, 1, false, 0},
    {56, 64, 64, 3, 1, 3, false, 0},     {56, 64, 256, 1, 1, 4, false, 0},
    {56, 256, 64, 1, 1, 2, false, 0},    {56, 256, 128, 1, 1, 1, false, 0},
    {56, 128, 128, 3, 2, 1, false, 0},   {28, 128, 512, 1, 1, 4, false, 0},
    {56, 256, 512, 1, 2, 1, false, 0},   {28, 512, 128, 1, 1, 3, false, 0},
    {28, 128, 128, 3, 1, 3, false, 0},   {28, 512, 256, 1, 1, 1, false, 0},
    {28, 256, 256, 3, 2, 1, false, 0},   {14, 256, 1024, 1, 1, 6, false, 0},
    {28, 512, 1024, 1, 2, 1, false, 0},  {14, 1024, 256, 1, 1, 5, false, 0},
    {14, 256, 256, 3, 1, 5, false, 0},   {14, 1024, 512, 1, 1, 1, false, 0},
    {14, 512, 512, 3, 2, 1, false, 0},   {7, 512, 2048, 1, 1, 3, false, 0},
    {14, 1024, 2048, 1, 2, 1, false, 0}, {7, 2048, 512, 1, 1, 2, false, 0},
    {7, 512, 512, 3, 1, 2, false, 0},
};

// torchvision mobilenet_v2's depthwise 3x3 convolutions.
const Layer kMobilenetV2Depthwise[] = {
    {112, 32, 32, 3, 1, 1, true, 6},   {112, 96, 96, 3, 2, 1, true, 6},
    {56, 144, 144, 3, 1, 1, true, 6},  {56, 144, 144, 3, 2, 1, true, 6},
    {28, 192, 192, 3, 1, 2, true, 6},  {28, 192, 192, 3, 2, 1, true, 6},
    {14, 384, 384, 3, 1, 4, true, 6},  {14, 576, 576, 3, 1, 2, true, 6},
    {14, 576, 576, 3, 2, 1, true, 6},  {7, 960, 960, 3, 1, 3, true, 6},
};

// torchvision mobilenet_v2's pointwise (1x1) convolutions, expansions and projections (all with
// the Clip post-op here; in the network the projections have none).
const Layer kMobilenetV2Pointwise[] = {
    {112, 32, 16, 1, 1, 1, false, 6},  {112, 16, 96, 1, 1, 1, false, 6},
    {56, 96, 24, 1, 1, 1, false, 6},   {56, 24, 144, 1, 1, 2, false, 6},
    {56, 144, 24, 1, 1, 1, false, 6},  {28, 144, 32, 1, 1, 1, false, 6},
    {28, 32, 192, 1, 1, 3, false, 6},  {28, 192, 32, 1, 1, 2, false, 6},
    {14, 192, 64, 1, 1, 1, false, 6},  {14, 64, 384, 1, 1, 4, false, 6},
    {14, 384, 64, 1, 1, 3, false, 6},  {14, 384, 96, 1, 1, 1, false, 6},
    {14, 96, 576, 1, 1, 3, false, 6},  {14, 576, 96, 1, 1, 2, false, 6},
    {7, 576, 160, 1, 1, 1, false, 6},  {7, 160, 960, 1, 1, 3, false, 6},
    {7, 960, 160, 1, 1, 2, false, 6},  {7, 960, 320, 1, 1, 1, false, 6},
    {7, 320, 1280, 1, 1, 1, false, 6},
};

enum class Producer { kNone, kRows, kChannels, kReversed };

struct Instance {
  const Layer* layer;
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
  std::vector<float> src;  // the layer's input, NHWC
  std::string impl;
  std::vector<double> ms;
};

void Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--set resnet50|mobilenet_v2_dw|mobilenet_v2_pw] [--threads N] [--reps R] "
               "[--per-layer] [--producer none|rows|channels|reversed] [--blocked] "
               "[--impl NAME] [--impls]\n",
               argv0);
  std::exit(2);
}

// Rewrites `x` (pixels x channels floats, NHWC) on `threads` threads, split as `p` says.
void Produce(Producer p, std::vector<float>& x, int channels, int threads) {
  if (p == Producer::kNone) return;
  const size_t pixels = x.size() / channels;
#pragma omp parallel num_threads(threads)
  {
    const int n = omp_get_num_threads();
    int t = omp_get_thread_num();
    if (p == Producer::kChannels) {
      const int c0 = channels * t / n, c1 = channels * (t + 1) / n;
      for (size_t q = 0; q < pixels; ++q) {
        for (int c = c0; c < c1; ++c) x[q * channels + c] *= 1.0000001f;
      }
    } else {
      if (p == Producer::kReversed) t = n - 1 - t;
      const size_t b = x.size() * t / n, e = x.size() * (t + 1) / n;
      for (size_t i = b; i < e; ++i) x[i] *= 1.0000001f;
    }
  }
}

// Times every avx512 implementation oneDNN offers for `l` (from `pd`, its first choice, on),
// alone and hot: 25 runs on the same buffers, the median printed per implementation.
void TimeEachImplementation(const Layer& l, dnnl::convolution_forward::primitive_desc pd,
                            const dnnl::engine& engine, dnnl::stream& stream) {
  std::vector<float> src_data(pd.src_desc().get_size() / sizeof(float), 0.5f);
  do {
    const std::string name = pd.impl_info_str();
    if (name.find("avx512") == std::string::npos && name.find("gemm") == std::string::npos) continue;
    dnnl::memory src(pd.src_desc(), engine, src_data.data());
    dnnl::memory dst(pd.dst_desc(), engine);
    dnnl::memory wei(pd.weights_desc(), engine);
    dnnl::memory bias(pd.bias_desc(), engine);
    std::memset(wei.get_data_handle(), 0, pd.weights_desc().get_size());
    std::memset(bias.get_data_handle(), 0, pd.bias_desc().get_size());
    dnnl::convolution_forward prim(pd);
    const std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}};
    std::vector<double> ms;
    for (int k = 0; k < 25; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      prim.execute(stream, args);
      stream.wait();
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("%4d %5d -> %5d k%d s%d  %-28s %8.3f ms\n", l.size, l.cin, l.cout, l.kernel,
                l.stride, name.c_str(), graphopt::bench::Median(ms));
  } while (pd.next_impl());
}

// The post-op after each block, vectorised as the runtime's (AVX-512 only runs here).
__attribute__((target("arch=x86-64-v4"), optimize("O3"))) void ClipRows(float* y, int64_t n,
                                                                        float hi) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i], 0.0f), hi);
}

// Where the runtime takes its own pointwise rows instead of oneDNN (runtime/kernels/conv_nhwc.cc:
// 1x1, stride 1, a narrow width, AVX-512), those too, the same way: blocks of 96 pixels shared
// out among the threads, each block's Clip (or ReLU) right after it.
void TimeOwnPointwise(const Layer& l) {
  using graphopt::runtime::FastMathIsa;
  if (l.kernel != 1 || l.stride != 1 || l.depthwise ||
      !graphopt::runtime::PointwiseRowsWidthSupported(l.cout) ||
      graphopt::runtime::DetectedFastMathIsa() != FastMathIsa::kX86_64_V4) {
    return;
  }
  const int64_t pixels = int64_t{l.size} * l.size, block = 96;
  const int64_t blocks = (pixels + block - 1) / block;
  std::vector<float> x(pixels * l.cin, 0.5f), w(int64_t{l.cin} * l.cout, 0.01f), bias(l.cout, 0.0f),
      y(pixels * l.cout);
  const float hi = l.clip > 0 ? l.clip : 3.4e38f;
  std::vector<double> ms;
  for (int k = 0; k < 25; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t p0 = b * block, n = std::min(block, pixels - p0);
      float* out = y.data() + p0 * l.cout;
      graphopt::runtime::PointwiseRowsF32(n, l.cin, l.cout, x.data() + p0 * l.cin, w.data(),
                                          bias.data(), out);
      ClipRows(out, n * l.cout, hi);
    }
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("%4d %5d -> %5d k%d s%d  %-28s %8.3f ms\n", l.size, l.cin, l.cout, l.kernel,
              l.stride, "graphopt:pointwise_rows", graphopt::bench::Median(ms));
}

}  // namespace

int main(int argc, char** argv) {
  std::string set = "resnet50";
  int threads = 1, reps = 30;
  bool per_layer = false;
  Producer producer = Producer::kNone;
  bool blocked = false, list_impls = false;
  std::string impl;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--set") == 0 && has_value) {
      set = argv[++i];
    } else if (std::strcmp(argv[i], "--threads") == 0 && has_value) {
      threads = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--reps") == 0 && has_value) {
      reps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--per-layer") == 0) {
      per_layer = true;
    } else if (std::strcmp(argv[i], "--blocked") == 0) {
      blocked = true;
    } else if (std::strcmp(argv[i], "--impl") == 0 && has_value) {
      impl = argv[++i];
    } else if (std::strcmp(argv[i], "--impls") == 0) {
      list_impls = true;
    } else if (std::strcmp(argv[i], "--producer") == 0 && has_value) {
      const std::string p = argv[++i];
      if (p == "none") producer = Producer::kNone;
      else if (p == "rows") producer = Producer::kRows;
      else if (p == "channels") producer = Producer::kChannels;
      else if (p == "reversed") producer = Producer::kReversed;
      else Usage(argv[0]);
    } else {
      Usage(argv[0]);
    }
  }
  if (threads < 1 || reps < 1) Usage(argv[0]);
  const Layer* begin;
  const Layer* end;
  if (set == "resnet50") {
    begin = std::begin(kResnet50);
    end = std::end(kResnet50);
  } else if (set == "mobilenet_v2_pw") {
    begin = std::begin(kMobilenetV2Pointwise);
    end = std::end(kMobilenetV2Pointwise);
  } else if (set == "mobilenet_v2_dw") {
    begin = std::begin(kMobilenetV2Depthwise);
    end = std::end(kMobilenetV2Depthwise);
  } else {
    Usage(argv[0]);
  }
  omp_set_num_threads(threads);

  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::vector<Instance> layers;
  for (const Layer* l = begin; l != end; ++l) {
    for (int r = 0; r < l->count; ++r) {
      const int pad = l->kernel / 2;
      const int out = (l->size + 2 * pad - l->kernel) / l->stride + 1;
      const dnnl::memory::dims src_dims{1, l->cin, l->size, l->size};
      const dnnl::memory::dims dst_dims{1, l->cout, out, out};
      const dnnl::memory::dims wei_dims =
          l->depthwise ? dnnl::memory::dims{l->cout, 1, 1, l->kernel, l->kernel}
                       : dnnl::memory::dims{l->cout, l->cin, l->kernel, l->kernel};
      const tag act = blocked ? tag::nChw16c : tag::nhwc;
      const dnnl::memory::desc src_md(src_dims, dt::f32, l->cin % 16 == 0 ? act : tag::nhwc);
      const dnnl::memory::desc dst_md(dst_dims, dt::f32, l->cin % 16 == 0 ? act : tag::nhwc);
      const dnnl::memory::desc wei_md(wei_dims, dt::f32, tag::any);
      const dnnl::memory::desc bias_md({l->cout}, dt::f32, tag::x);
      const dnnl::algorithm alg =
          l->clip > 0 ? dnnl::algorithm::eltwise_clip : dnnl::algorithm::eltwise_relu;
      const float beta = l->clip > 0 ? l->clip : 0.0f;
      dnnl::post_ops ops;
#if DNNL_VERSION_MAJOR >= 3
      ops.append_eltwise(alg, 0.0f, beta);
#else
      ops.append_eltwise(1.0f, alg, 0.0f, beta);
#endif
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      const dnnl::memory::dims strides{l->stride, l->stride}, pads{pad, pad};
#if DNNL_VERSION_MAJOR >= 3
      dnnl::convolution_forward::primitive_desc pd(
          engine, dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          src_md, wei_md, bias_md, dst_md, strides, pads, pads, attr);
#else
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           dnnl::algorithm::convolution_direct, src_md, wei_md,
                                           bias_md, dst_md, strides, pads, pads);
      dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
#endif
      if (!impl.empty()) {
        // The named implementation where oneDNN has it for this layer, else its first choice.
        for (auto next = pd; next;) {
          if (impl == next.impl_info_str()) {
            pd = next;
            break;
          }
          if (!next.next_impl()) break;
        }
      }
      if (list_impls && r == 0) {
        TimeEachImplementation(*l, pd, engine, stream);
        TimeOwnPointwise(*l);
      }
      Instance inst;
      inst.layer = l;
      inst.src.resize(src_md.get_size() / sizeof(float));
      for (size_t i = 0; i < inst.src.size(); ++i) inst.src[i] = static_cast<float>(i % 13) * 0.01f;
      dnnl::memory src(src_md, engine, inst.src.data());
      dnnl::memory dst(dst_md, engine);
      dnnl::memory wei(pd.weights_desc(), engine);
      dnnl::memory bias(bias_md, engine);
      for (dnnl::memory* m : {&wei, &bias}) {
        float* p = static_cast<float*>(m->get_data_handle());
        const size_t n = m->get_desc().get_size() / sizeof(float);
        for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % 7) * 0.01f;
      }
      inst.prim = dnnl::convolution_forward(pd);
      inst.args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias},
                   {DNNL_ARG_DST, dst}};
      inst.impl = pd.impl_info_str();
      layers.push_back(std::move(inst));
    }
  }

  constexpr int kWarmup = 5;
  std::vector<double> totals;
  for (int r = 0; r < kWarmup + reps; ++r) {
    double total = 0;
    for (Instance& inst : layers) {
      Produce(producer, inst.src, inst.layer->cin, threads);
      const auto t0 = std::chrono::steady_clock::now();
      inst.prim.execute(stream, inst.args);
      stream.wait();
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      total += ms;
      if (r >= kWarmup) inst.ms.push_back(ms);
    }
    if (r >= kWarmup) totals.push_back(total);
  }
  if (per_layer) {
    for (size_t i = 0; i < layers.size(); ++i) {
      if (i > 0 && layers[i].layer == layers[i - 1].layer) continue;
      const Layer& l = *layers[i].layer;
      std::printf("%4d %5d -> %5d k%d s%d %s  %8.3f ms  %s\n", l.size, l.cin, l.cout, l.kernel,
                  l.stride, l.depthwise ? "dw" : "  ", graphopt::bench::Median(layers[i].ms),
                  layers[i].impl.c_str());
    }
  }
  std::printf("oneDNN %d.%d, %s, %d thread(s): median of %d runs %.3f ms (%zu convolutions)\n",
              DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR, set.c_str(), threads, reps,
              graphopt::bench::Median(totals), layers.size());
  return 0;
}
