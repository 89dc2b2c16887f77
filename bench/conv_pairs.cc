// Pairs of consecutive oneDNN convolutions from mobilenet_v2's inverted-residual blocks
// (batch 1, NHWC, float32), alone: what the second layer of a pair costs depending on how its
// input and output were left in the caches, and whether running a pair by bands of rows would
// keep the intermediate in the core's cache. The experiments behind docs/performance.md's
// MobileNet analysis of 2026-12-06.
//
//   conv_pairs bands    [--threads N] [--reps R]  1x1 expansion + 3x3 depthwise: whole images
//                                                 against bands of output rows, with 0-32 MiB
//                                                 swept between runs
//   conv_pairs chain    [--threads N] [--reps R]  the depthwise step after the expansion that
//                                                 writes its input, after rewrites split by rows
//                                                 or channels, and hot
//   conv_pairs project  [--threads N] [--reps R]  the 1x1 projection after the depthwise step
//                                                 that writes its input, hot, and with its
//                                                 output and weights flushed first
//   conv_pairs fused_dw [--threads N] [--reps R]  oneDNN's own 1x1 + depthwise fusion
//                                                 (append_dw_k3s{1,2}p1) against the two apart,
//                                                 with 0-32 MiB swept between runs; each shape
//                                                 in a child process
//
// Every layer has a Clip(0, 6) post-op but the projections. Prints medians of R runs.
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "bench/bench_util.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Pair {
  int size;     // the expansion's input height = width
  int cin;      // channels in
  int mid;      // channels of the intermediate (expansion out = depthwise in/out)
  int stride;   // the depthwise step's
  int rows;     // bands: output rows per band
};

// Every expansion + depthwise pair of mobilenet_v2 (distinct shapes).
const Pair kExpansions[] = {
    {112, 16, 96, 2, 4}, {56, 24, 144, 1, 8}, {56, 24, 144, 2, 4}, {28, 32, 192, 1, 7},
    {28, 32, 192, 2, 7}, {14, 64, 384, 1, 7}, {14, 96, 576, 1, 7}, {14, 96, 576, 2, 7},
    {7, 160, 960, 1, 7},
};

// Depthwise (size, channels, stride) + projection to `out` channels.
struct Projection {
  int size, channels, stride, out;
};
const Projection kProjections[] = {
    {112, 32, 1, 16}, {112, 96, 2, 24}, {56, 144, 1, 24}, {56, 144, 2, 32},
    {28, 192, 1, 32}, {14, 576, 1, 96}, {7, 960, 1, 320},
};

double Now() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Conv {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
};

// A k x k convolution (depthwise when `dw`) of an ih x iw NHWC image with explicit padding;
// its post-ops are `extra` when given, else Clip(0, 6) when `clip`.
Conv MakeConv(const dnnl::engine& engine, int ih, int iw, int cin, int cout, int k, int stride,
              int pad_t, int pad_b, int pad_lr, bool dw, bool clip,
              const dnnl::post_ops* extra = nullptr) {
  const int oh = (ih + pad_t + pad_b - k) / stride + 1;
  const int ow = (iw + 2 * pad_lr - k) / stride + 1;
  const dnnl::memory::desc src({1, cin, ih, iw}, dt::f32, tag::nhwc);
  const dnnl::memory::desc dst({1, cout, oh, ow}, dt::f32, tag::nhwc);
  const dnnl::memory::desc wei = dw ? dnnl::memory::desc({cout, 1, 1, k, k}, dt::f32, tag::any)
                                    : dnnl::memory::desc({cout, cin, k, k}, dt::f32, tag::any);
  const dnnl::memory::desc bias({cout}, dt::f32, tag::x);
  dnnl::post_ops ops = extra != nullptr ? *extra : dnnl::post_ops();
  if (clip && extra == nullptr) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  // With `extra` post-ops (the fused depthwise step), the runtime's scratchpad mode.
  if (extra != nullptr) attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                       dnnl::algorithm::convolution_direct, src, wei, bias, dst,
                                       {stride, stride}, {pad_t, pad_lr}, {pad_b, pad_lr});
  dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  return {pd, dnnl::convolution_forward(pd)};
}

// A memory object for `md` filled with small repeating values.
dnnl::memory Filled(const dnnl::memory::desc& md, const dnnl::engine& engine) {
  dnnl::memory m(md, engine);
  float* p = static_cast<float*>(m.get_data_handle());
  const size_t n = md.get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % 7) * 0.01f;
  return m;
}

// Runs `c` on (src, weights, bias, dst) and waits for it: its time in ms.
double Execute(const Conv& c, dnnl::stream& stream, const dnnl::memory& src,
               const dnnl::memory& weights, const dnnl::memory& bias, const dnnl::memory& dst) {
  const double t0 = Now();
  c.prim.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_BIAS, bias},
                          {DNNL_ARG_DST, dst}});
  stream.wait();
  return Now() - t0;
}

using graphopt::bench::Sweeper;

void Bands(const dnnl::engine& engine, dnnl::stream& stream, int reps) {
  std::printf("expansion + depthwise, whole images against bands of rows (ratio < 1: bands "
              "faster); MiB swept between runs\n");
  Sweeper sweeper;
  for (const Pair& p : kExpansions) {
    const int h = p.size, w = p.size, oh = (h + 2 - 3) / p.stride + 1;
    Conv ex = MakeConv(engine, h, w, p.cin, p.mid, 1, 1, 0, 0, 0, false, true);
    Conv dw = MakeConv(engine, h, w, p.mid, p.mid, 3, p.stride, 1, 1, 1, true, true);
    dnnl::memory x = Filled(ex.pd.src_desc(), engine);
    dnnl::memory ew = Filled(ex.pd.weights_desc(), engine), eb = Filled(ex.pd.bias_desc(), engine);
    dnnl::memory dww = Filled(dw.pd.weights_desc(), engine), dwb = Filled(dw.pd.bias_desc(), engine);
    dnnl::memory e(ex.pd.dst_desc(), engine), y(dw.pd.dst_desc(), engine);
    const size_t row = static_cast<size_t>(w) * p.mid;  // floats per intermediate row
    std::vector<float> band((static_cast<size_t>(p.rows) * p.stride + 2) * row);
    std::vector<float> banded_y(y.get_desc().get_size() / sizeof(float));
    // The same weights in another primitive's layout.
    auto in_layout = [&](dnnl::memory& from, const dnnl::memory::desc& md) {
      if (from.get_desc() == md) return from;
      dnnl::memory to(md, engine);
      dnnl::reorder(from, to).execute(stream, from, to);
      stream.wait();
      return to;
    };
    // Band primitives by input rows (expansion) and by (rows, pad top, pad bottom) (depthwise);
    // each band shape gets its own weight copy (brgconv_1x1 picks its layout by height).
    std::map<int, std::pair<Conv, dnnl::memory>> ex_bands;
    std::map<std::tuple<int, int, int>, std::pair<Conv, dnnl::memory>> dw_bands;
    auto ex_band = [&](int rows) -> std::pair<Conv, dnnl::memory>& {
      auto it = ex_bands.find(rows);
      if (it == ex_bands.end()) {
        Conv c = MakeConv(engine, rows, w, p.cin, p.mid, 1, 1, 0, 0, 0, false, true);
        dnnl::memory wt = in_layout(ew, c.pd.weights_desc());
        it = ex_bands.emplace(rows, std::make_pair(std::move(c), wt)).first;
      }
      return it->second;
    };
    auto dw_band = [&](int rows, int pt, int pb) -> std::pair<Conv, dnnl::memory>& {
      const auto key = std::make_tuple(rows, pt, pb);
      auto it = dw_bands.find(key);
      if (it == dw_bands.end()) {
        Conv c = MakeConv(engine, rows, w, p.mid, p.mid, 3, p.stride, pt, pb, 1, true, true);
        dnnl::memory wt = in_layout(dww, c.pd.weights_desc());
        it = dw_bands.emplace(key, std::make_pair(std::move(c), wt)).first;
      }
      return it->second;
    };
    auto whole = [&] {
      Execute(ex, stream, x, ew, eb, e);
      Execute(dw, stream, e, dww, dwb, y);
    };
    const float* xs = static_cast<const float*>(x.get_data_handle());
    auto bands = [&] {
      int have_lo = 0, have_hi = 0;  // intermediate rows [have_lo, have_hi) are in `band`
      for (int o0 = 0; o0 < oh; o0 += p.rows) {
        const int o1 = std::min(oh, o0 + p.rows);
        const int lo = std::max(0, o0 * p.stride - 1);
        const int hi = std::min(h, (o1 - 1) * p.stride + 2);  // rows [lo, hi) are needed
        const int keep = std::max(0, have_hi - lo);           // of them, already computed
        if (keep > 0 && lo > have_lo) {
          std::memmove(band.data(), band.data() + (lo - have_lo) * row, keep * row * sizeof(float));
        }
        if (hi > lo + keep) {
          auto& [c, wt] = ex_band(hi - lo - keep);
          dnnl::memory src(c.pd.src_desc(), engine,
                           const_cast<float*>(xs) + static_cast<size_t>(lo + keep) * w * p.cin);
          dnnl::memory dst(c.pd.dst_desc(), engine, band.data() + keep * row);
          c.prim.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wt},
                                  {DNNL_ARG_BIAS, eb}, {DNNL_ARG_DST, dst}});
        }
        have_lo = lo;
        have_hi = hi;
        const int pad_t = o0 == 0 ? 1 : 0;
        const int pad_b = (o1 - 1) * p.stride + 2 - hi;
        auto& [c, wt] = dw_band(hi - lo, pad_t, pad_b);
        dnnl::memory src(c.pd.src_desc(), engine, band.data());
        dnnl::memory dst(c.pd.dst_desc(), engine,
                         banded_y.data() + static_cast<size_t>(o0) * oh * p.mid);
        c.prim.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wt},
                                {DNNL_ARG_BIAS, dwb}, {DNNL_ARG_DST, dst}});
      }
      stream.wait();
    };
    whole();
    bands();
    const float* ref = static_cast<const float*>(y.get_data_handle());
    double max_diff = 0;
    for (size_t i = 0; i < banded_y.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(banded_y[i] - ref[i])));
    }
    std::printf("%3d %4d -> %4d s%d, %d rows a band (max |diff| %.2g):", h, p.cin, p.mid,
                p.stride, p.rows, max_diff);
    for (int mib : {0, 2, 4, 8, 16, 32}) {
      std::vector<double> a, b;
      for (int r = 0; r < reps; ++r) {
        sweeper.Sweep(mib);
        double t0 = Now();
        whole();
        a.push_back(Now() - t0);
        sweeper.Sweep(mib);
        t0 = Now();
        bands();
        b.push_back(Now() - t0);
      }
      const double ma = graphopt::bench::Median(a), mb = graphopt::bench::Median(b);
      std::printf("  %d MiB %.3f/%.3f=%.2f", mib, ma, mb, mb / ma);
    }
    std::printf("\n");
  }
}

// Rewrites `n` floats of an NHWC tensor of `channels` on the current OpenMP threads.
void Rewrite(float* x, size_t n, int channels, bool by_channels) {
#pragma omp parallel
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (by_channels) {
      const int c0 = channels * t / nt, c1 = channels * (t + 1) / nt;
      for (size_t q = 0; q < n / channels; ++q) {
        for (int c = c0; c < c1; ++c) x[q * channels + c] *= 1.0000001f;
      }
    } else {
      for (size_t i = n * t / nt; i < n * (t + 1) / nt; ++i) x[i] *= 1.0000001f;
    }
  }
}

void Chain(const dnnl::engine& engine, dnnl::stream& stream, int reps) {
  std::printf("the depthwise step (ms) after the expansion that writes its input, after a "
              "rewrite split by rows / by channels, and hot\n");
  for (const Pair& p : kExpansions) {
    Conv ex = MakeConv(engine, p.size, p.size, p.cin, p.mid, 1, 1, 0, 0, 0, false, true);
    Conv dw = MakeConv(engine, p.size, p.size, p.mid, p.mid, 3, p.stride, 1, 1, 1, true, true);
    dnnl::memory x = Filled(ex.pd.src_desc(), engine);
    dnnl::memory ew = Filled(ex.pd.weights_desc(), engine), eb = Filled(ex.pd.bias_desc(), engine);
    dnnl::memory dww = Filled(dw.pd.weights_desc(), engine), dwb = Filled(dw.pd.bias_desc(), engine);
    dnnl::memory e = Filled(ex.pd.dst_desc(), engine), y(dw.pd.dst_desc(), engine);
    float* ep = static_cast<float*>(e.get_data_handle());
    const size_t en = ex.pd.dst_desc().get_size() / sizeof(float);
    auto time_dw = [&] { return Execute(dw, stream, e, dww, dwb, y); };
    std::vector<double> after_ex, after_rows, after_channels, hot, ex_ms;
    for (int r = 0; r < reps; ++r) {
      ex_ms.push_back(Execute(ex, stream, x, ew, eb, e));
      after_ex.push_back(time_dw());
      Rewrite(ep, en, p.mid, false);
      after_rows.push_back(time_dw());
      Rewrite(ep, en, p.mid, true);
      after_channels.push_back(time_dw());
      hot.push_back(time_dw());
    }
    using graphopt::bench::Median;
    std::printf("%3d %4d -> %4d s%d: expansion %.3f | depthwise after it %.3f, after rows %.3f, "
                "after channels %.3f, hot %.3f\n",
                p.size, p.cin, p.mid, p.stride, Median(ex_ms), Median(after_ex),
                Median(after_rows), Median(after_channels), Median(hot));
  }
}

void Project(const dnnl::engine& engine, dnnl::stream& stream, int reps) {
  std::printf("the 1x1 projection (ms) right after the depthwise step that writes its input, "
              "hot, and with its output and weights flushed (64 MiB swept) first\n");
  Sweeper sweeper;
  for (const Projection& p : kProjections) {
    Conv dw = MakeConv(engine, p.size, p.size, p.channels, p.channels, 3, p.stride, 1, 1, 1, true,
                       true);
    const int oh = (p.size + 2 - 3) / p.stride + 1;
    Conv pw = MakeConv(engine, oh, oh, p.channels, p.out, 1, 1, 0, 0, 0, false, false);
    dnnl::memory x = Filled(dw.pd.src_desc(), engine);
    dnnl::memory dww = Filled(dw.pd.weights_desc(), engine), dwb = Filled(dw.pd.bias_desc(), engine);
    dnnl::memory e(dw.pd.dst_desc(), engine);
    dnnl::memory pww = Filled(pw.pd.weights_desc(), engine), pwb = Filled(pw.pd.bias_desc(), engine);
    dnnl::memory y = Filled(pw.pd.dst_desc(), engine);
    auto run_dw = [&] { Execute(dw, stream, x, dww, dwb, e); };
    auto time_pw = [&] { return Execute(pw, stream, e, pww, pwb, y); };
    std::vector<double> after, hot, cold;
    for (int r = 0; r < reps; ++r) {
      run_dw();
      after.push_back(time_pw());
      hot.push_back(time_pw());
      sweeper.Sweep(64);
      run_dw();
      cold.push_back(time_pw());
    }
    using graphopt::bench::Median;
    std::printf("%3d %4d -> %4d: after the depthwise step %.3f, hot %.3f, output and weights "
                "cold %.3f  (%s)\n",
                oh, p.channels, p.out, Median(after), Median(hot), Median(cold),
                pw.pd.impl_info_str());
  }
}

// One shape of oneDNN's fused 1x1 + depthwise convolution (in user scratchpad mode, as the
// runtime runs every primitive): its implementation, and its time against the two
// convolutions run one after the other, with 0-32 MiB swept between runs.
void FusedDwOne(const dnnl::engine& engine, dnnl::stream& stream, const Pair& p, int reps) {
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
  if (p.stride == 1) {
    ops.append_dw_k3s1p1(dt::f32, dt::f32, dt::f32, 0, {});
  } else {
    ops.append_dw_k3s2p1(dt::f32, dt::f32, dt::f32, 0, {});
  }
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
  Conv c = MakeConv(engine, p.size, p.size, p.cin, p.mid, 1, 1, 0, 0, 0, false, true, &ops);
  std::printf("%3d %4d -> %4d s%d: %s", p.size, p.cin, p.mid, p.stride, c.pd.impl_info_str());
  std::fflush(stdout);
  const int dw_arg = DNNL_ARG_ATTR_POST_OP_DW;
  dnnl::memory x = Filled(c.pd.src_desc(), engine);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, x},
      {DNNL_ARG_WEIGHTS, Filled(c.pd.weights_desc(), engine)},
      {DNNL_ARG_BIAS, Filled(c.pd.bias_desc(), engine)},
      {DNNL_ARG_DST, dnnl::memory(c.pd.dst_desc(), engine)},
      {dw_arg | DNNL_ARG_WEIGHTS,
       Filled(c.pd.query_md(dnnl::query::exec_arg_md, dw_arg | DNNL_ARG_WEIGHTS), engine)},
      {dw_arg | DNNL_ARG_BIAS,
       Filled(c.pd.query_md(dnnl::query::exec_arg_md, dw_arg | DNNL_ARG_BIAS), engine)},
  };
  if (c.pd.scratchpad_desc().get_size() > 0) {
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(c.pd.scratchpad_desc(), engine);
  }
  Conv ex = MakeConv(engine, p.size, p.size, p.cin, p.mid, 1, 1, 0, 0, 0, false, true);
  Conv dw = MakeConv(engine, p.size, p.size, p.mid, p.mid, 3, p.stride, 1, 1, 1, true, true);
  dnnl::memory e(ex.pd.dst_desc(), engine), y(dw.pd.dst_desc(), engine);
  const std::unordered_map<int, dnnl::memory> ex_args = {
      {DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, Filled(ex.pd.weights_desc(), engine)},
      {DNNL_ARG_BIAS, Filled(ex.pd.bias_desc(), engine)}, {DNNL_ARG_DST, e}};
  const std::unordered_map<int, dnnl::memory> dw_args = {
      {DNNL_ARG_SRC, e}, {DNNL_ARG_WEIGHTS, Filled(dw.pd.weights_desc(), engine)},
      {DNNL_ARG_BIAS, Filled(dw.pd.bias_desc(), engine)}, {DNNL_ARG_DST, y}};
  Sweeper sweeper;
  for (int mib : {0, 4, 8, 32}) {
    std::vector<double> fused, apart;
    for (int r = 0; r < reps; ++r) {
      sweeper.Sweep(mib);
      double t0 = Now();
      ex.prim.execute(stream, ex_args);
      dw.prim.execute(stream, dw_args);
      stream.wait();
      apart.push_back(Now() - t0);
      sweeper.Sweep(mib);
      t0 = Now();
      c.prim.execute(stream, args);
      stream.wait();
      fused.push_back(Now() - t0);
    }
    const double a = graphopt::bench::Median(apart), f = graphopt::bench::Median(fused);
    std::printf("  %d MiB %.3f/%.3f=%.2f", mib, a, f, f / a);
  }
  std::printf("\n");
}

void FusedDw(const dnnl::engine& engine, dnnl::stream& stream, int reps) {
  std::printf("oneDNN's fused 1x1 + depthwise (append_dw_k3s*p1) against the two apart "
              "(apart/fused=ratio, < 1: fused faster), each shape in a child process\n");
  for (const Pair& p : kExpansions) {
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
      FusedDwOne(engine, stream, p, reps);
      std::fflush(stdout);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) std::printf("  crashed (signal %d)\n", WTERMSIG(status));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s bands|chain|project|fused_dw [--threads N] [--reps R]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  int threads = 1, reps = 40;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) {
      threads = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--reps") == 0) {
      reps = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 1 || reps < 1) return 2;
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::printf("oneDNN %d.%d, %d thread(s), median of %d runs\n", DNNL_VERSION_MAJOR,
              DNNL_VERSION_MINOR, threads, reps);
  if (mode == "bands") {
    Bands(engine, stream, reps);
  } else if (mode == "chain") {
    Chain(engine, stream, reps);
  } else if (mode == "project") {
    Project(engine, stream, reps);
  } else if (mode == "fused_dw") {
    FusedDw(engine, stream, reps);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  return 0;
}
