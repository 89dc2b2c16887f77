// The nn family's backward kernels (ops/nn_grad_ops.h) against naive loops: float32 on oneDNN,
// float64 on the direct loops.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::HasSubstr;

// A 2-D convolution's geometry.
struct Conv2d {
  int n, c, h, w, m, kh, kw, group, sh, sw, dh, dw, pt, pl, pb, pr;
  int oh() const { return (h + pt + pb - ((kh - 1) * dh + 1)) / sh + 1; }
  int ow() const { return (w + pl + pr - ((kw - 1) * dw + 1)) / sw + 1; }
  std::vector<std::string> Attrs() const {
    return {absl::StrCat("name: \"group\" i: ", group),
            absl::StrCat("name: \"strides\" ints { values: [", sh, ", ", sw, "] }"),
            absl::StrCat("name: \"dilations\" ints { values: [", dh, ", ", dw, "] }"),
            absl::StrCat("name: \"pads\" ints { values: [", pt, ", ", pl, ", ", pb, ", ", pr,
                         "] }")};
  }
  // Calls fn(x index, w index, y index) for every tap of the forward convolution.
  template <typename F>
  void ForEachTap(F fn) const {
    const int cg = c / group, mg = m / group;
    for (int ni = 0; ni < n; ++ni) {
      for (int mi = 0; mi < m; ++mi) {
        const int g = mi / mg;
        for (int oy = 0; oy < oh(); ++oy) {
          for (int ox = 0; ox < ow(); ++ox) {
            for (int ci = 0; ci < cg; ++ci) {
              for (int ky = 0; ky < kh; ++ky) {
                for (int kx = 0; kx < kw; ++kx) {
                  const int iy = oy * sh - pt + ky * dh, ix = ox * sw - pl + kx * dw;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  fn(((ni * c + g * cg + ci) * h + iy) * w + ix, ((mi * cg + ci) * kh + ky) * kw + kx,
                     ((ni * m + mi) * oh() + oy) * ow() + ox);
                }
              }
            }
          }
        }
      }
    }
  }
};

const std::vector<Conv2d>& Cases() {
  static const auto* cases = new std::vector<Conv2d>{
      {2, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   // padded 3x3
      {1, 4, 9, 8, 6, 3, 2, 2, 2, 1, 1, 2, 0, 1, 2, 0},   // group 2, strides, dilation
      {2, 8, 7, 7, 8, 3, 3, 8, 2, 2, 1, 1, 1, 1, 1, 1},   // depthwise, stride 2
      {1, 16, 8, 8, 32, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},  // strided 1x1 (unused rows)
      {2, 3, 15, 15, 8, 7, 7, 1, 2, 2, 1, 1, 3, 3, 3, 3},  // a stem
  };
  return *cases;
}

Tensor F64(const std::vector<float>& v, Shape shape) {
  std::vector<double> d(v.begin(), v.end());
  return Tensor::FromVector<double>(v1::DT_FLOAT64, d, std::move(shape));
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double tol,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << what << " at " << i;
  }
}

TEST(NnGradKernelsTest, ConvGradDataMatchesNaive) {
  for (const Conv2d& k : Cases()) {
    const std::vector<float> dy = Random(k.n * k.m * k.oh() * k.ow(), 1);
    const std::vector<float> w = Random(k.m * (k.c / k.group) * k.kh * k.kw, 2);
    std::vector<double> want(k.n * k.c * k.h * k.w, 0.0);
    k.ForEachTap([&](int xi, int wi, int yi) { want[xi] += double(dy[yi]) * w[wi]; });
    const Shape ys = {k.n, k.m, k.oh(), k.ow()}, wsh = {k.m, k.c / k.group, k.kh, k.kw};
    const Tensor xs = I64({k.n, k.c, k.h, k.w}, {4});
    for (bool f64 : {false, true}) {
      const std::string what = absl::StrCat(f64 ? "float64" : "float32", " case c=", k.c,
                                            " m=", k.m, " k=", k.kh, " group=", k.group);
      absl::StatusOr<std::vector<Tensor>> r = RunDomainNode(
          "graphopt", "ConvGradData", k.Attrs(),
          {f64 ? F64(dy, ys) : F32(dy, ys), f64 ? F64(w, wsh) : F32(w, wsh), xs}, 1, 0, 2);
      ASSERT_TRUE(r.ok()) << what << ": " << r.status();
      ExpectNear(ToFloats((*r)[0]), want, 1e-4, what);
    }
  }
}

TEST(NnGradKernelsTest, ConvGradWeightMatchesNaive) {
  for (const Conv2d& k : Cases()) {
    const std::vector<float> x = Random(k.n * k.c * k.h * k.w, 3);
    const std::vector<float> dy = Random(k.n * k.m * k.oh() * k.ow(), 4);
    std::vector<double> want(k.m * (k.c / k.group) * k.kh * k.kw, 0.0);
    k.ForEachTap([&](int xi, int wi, int yi) { want[wi] += double(x[xi]) * dy[yi]; });
    const Shape xsh = {k.n, k.c, k.h, k.w}, ys = {k.n, k.m, k.oh(), k.ow()};
    const Tensor ws = I64({k.m, k.c / k.group, k.kh, k.kw}, {4});
    for (bool f64 : {false, true}) {
      const std::string what = absl::StrCat(f64 ? "float64" : "float32", " case c=", k.c,
                                            " m=", k.m, " k=", k.kh, " group=", k.group);
      absl::StatusOr<std::vector<Tensor>> r = RunDomainNode(
          "graphopt", "ConvGradWeight", k.Attrs(),
          {f64 ? F64(x, xsh) : F32(x, xsh), f64 ? F64(dy, ys) : F32(dy, ys), ws}, 1, 0, 2);
      ASSERT_TRUE(r.ok()) << what << ": " << r.status();
      ExpectNear(ToFloats((*r)[0]), want, 1e-4, what);
    }
  }
}

TEST(NnGradKernelsTest, ConvGradShapesAreChecked) {
  const Conv2d k = Cases()[0];
  // dY of the wrong spatial size for X_shape.
  absl::StatusOr<std::vector<Tensor>> r = RunDomainNode(
      "graphopt", "ConvGradData", k.Attrs(),
      {F32(Random(2 * 4 * 5 * 5, 1), {2, 4, 5, 5}), F32(Random(4 * 3 * 9, 2), {4, 3, 3, 3}),
       I64({2, 3, 6, 5}, {4})});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("is not the shape"));
}

// A 2-D pool's taps: fn(output index, input index) per tap inside the input, with the count of
// taps inside the padded input.
struct Pool2d {
  int planes, h, w, k, s, p;
  int oh() const { return (h + 2 * p - k) / s + 1; }
  int ow() const { return (w + 2 * p - k) / s + 1; }
  std::vector<std::string> Attrs() const {
    return {absl::StrCat("name: \"kernel_shape\" ints { values: [", k, ", ", k, "] }"),
            absl::StrCat("name: \"strides\" ints { values: [", s, ", ", s, "] }"),
            absl::StrCat("name: \"pads\" ints { values: [", p, ", ", p, ", ", p, ", ", p, "] }")};
  }
};

TEST(NnGradKernelsTest, MaxPoolGradScattersToTheFirstMaximum) {
  const Pool2d p{3, 7, 6, 3, 2, 1};
  std::vector<float> x = Random(p.planes * p.h * p.w, 5);
  x[3] = x[4] = 5.0f;  // a tie inside one window: the first in window order takes it
  const std::vector<float> dy = Random(p.planes * p.oh() * p.ow(), 6);
  std::vector<double> want(x.size(), 0.0);
  for (int pl = 0; pl < p.planes; ++pl) {
    for (int oy = 0; oy < p.oh(); ++oy) {
      for (int ox = 0; ox < p.ow(); ++ox) {
        int arg = -1;
        for (int ky = 0; ky < p.k; ++ky) {
          for (int kx = 0; kx < p.k; ++kx) {
            const int iy = oy * p.s - p.p + ky, ix = ox * p.s - p.p + kx;
            if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
            const int i = (pl * p.h + iy) * p.w + ix;
            if (arg < 0 || x[i] > x[arg]) arg = i;
          }
        }
        want[arg] += dy[(pl * p.oh() + oy) * p.ow() + ox];
      }
    }
  }
  absl::StatusOr<std::vector<Tensor>> r =
      RunDomainNode("graphopt", "MaxPoolGrad", p.Attrs(),
                    {F32(dy, {1, p.planes, p.oh(), p.ow()}), F32(x, {1, p.planes, p.h, p.w})});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(ToFloats((*r)[0]), want, 1e-6, "MaxPoolGrad");
  // MaxPool's Indices point at the same elements.
  absl::StatusOr<std::vector<Tensor>> fwd =
      RunNode("MaxPool", p.Attrs(), {F32(x, {1, p.planes, p.h, p.w})}, 2);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  std::vector<double> scattered(x.size(), 0.0);
  const std::vector<int64_t> idx = ToInts((*fwd)[1]);
  for (size_t o = 0; o < idx.size(); ++o) scattered[idx[o]] += dy[o];
  ExpectNear(ToFloats((*r)[0]), scattered, 1e-6, "MaxPool Indices");
}

TEST(NnGradKernelsTest, AveragePoolGradSpreadsOverCountedTaps) {
  const Pool2d p{2, 6, 7, 3, 2, 1};
  const std::vector<float> dy = Random(p.planes * p.oh() * p.ow(), 7);
  for (int include = 0; include < 2; ++include) {
    std::vector<double> want(p.planes * p.h * p.w, 0.0);
    for (int pl = 0; pl < p.planes; ++pl) {
      for (int oy = 0; oy < p.oh(); ++oy) {
        for (int ox = 0; ox < p.ow(); ++ox) {
          std::vector<int> inside;
          for (int ky = 0; ky < p.k; ++ky) {
            for (int kx = 0; kx < p.k; ++kx) {
              const int iy = oy * p.s - p.p + ky, ix = ox * p.s - p.p + kx;
              if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w) inside.push_back((pl * p.h + iy) * p.w + ix);
            }
          }
          const double count = include ? p.k * p.k : inside.size();
          for (int i : inside) want[i] += dy[(pl * p.oh() + oy) * p.ow() + ox] / count;
        }
      }
    }
    std::vector<std::string> attrs = p.Attrs();
    attrs.push_back(absl::StrCat("name: \"count_include_pad\" i: ", include));
    absl::StatusOr<std::vector<Tensor>> r =
        RunDomainNode("graphopt", "AveragePoolGrad", attrs,
                      {F32(dy, {1, p.planes, p.oh(), p.ow()}), I64({1, p.planes, p.h, p.w}, {4})});
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectNear(ToFloats((*r)[0]), want, 1e-6, absl::StrCat("count_include_pad ", include));
  }
}

}  // namespace
}  // namespace graphopt::runtime
