#include "util/metrics.h"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(MetricsTest, CounterExposition) {
  MetricsRegistry registry;
  CounterFamily* rpcs = registry.AddCounter(
      {"graphopt_rpc_requests_total", "RPCs served.", {"method", "code"}});
  rpcs->WithLabels({"Optimize", "OK"})->Increment();
  rpcs->WithLabels({"Optimize", "OK"})->Increment(2);
  rpcs->WithLabels({"Run", "INTERNAL"})->Increment();
  rpcs->WithLabels({"Run", "INTERNAL"})->Increment(-5);  // ignored: counters only go up
  EXPECT_EQ(registry.Render(),
            "# HELP graphopt_rpc_requests_total RPCs served.\n"
            "# TYPE graphopt_rpc_requests_total counter\n"
            "graphopt_rpc_requests_total{method=\"Optimize\",code=\"OK\"} 3\n"
            "graphopt_rpc_requests_total{method=\"Run\",code=\"INTERNAL\"} 1\n");
}

TEST(MetricsTest, EscapesLabelValuesAndHelp) {
  MetricsRegistry registry;
  GaugeFamily* g = registry.AddGauge({"g", "line one\nback\\slash \"quoted\"", {"tenant"}});
  g->WithLabels({"a\"b\\c\nd"})->Set(1.5);
  EXPECT_EQ(registry.Render(),
            "# HELP g line one\\nback\\\\slash \"quoted\"\n"
            "# TYPE g gauge\n"
            "g{tenant=\"a\\\"b\\\\c\\nd\"} 1.5\n");
}

TEST(MetricsTest, SampleValues) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(-3), "-3");
  EXPECT_EQ(FormatSampleValue(0.25), "0.25");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatSampleValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatSampleValue(1e20), "1e+20");
  EXPECT_EQ(FormatSampleValue(0.1), "0.1");
}

TEST(MetricsTest, HistogramBucketsAreCumulativeAndLessOrEqual) {
  MetricsRegistry registry;
  HistogramFamily* h =
      registry.AddHistogram({"lat_seconds", "Latency.", {"pass"}}, {0.25, 1, 10});
  Histogram* fold = h->WithLabels({"fold"});
  for (double v : {0.125, 0.25, 0.5, 1.0, 20.0}) fold->Observe(v);
  EXPECT_EQ(registry.Render(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{pass=\"fold\",le=\"0.25\"} 2\n"
            "lat_seconds_bucket{pass=\"fold\",le=\"1\"} 4\n"
            "lat_seconds_bucket{pass=\"fold\",le=\"10\"} 4\n"
            "lat_seconds_bucket{pass=\"fold\",le=\"+Inf\"} 5\n"
            "lat_seconds_sum{pass=\"fold\"} 21.875\n"
            "lat_seconds_count{pass=\"fold\"} 5\n");
}

TEST(MetricsTest, HistogramWithoutLabels) {
  MetricsRegistry registry;
  registry.AddHistogram({"h", "H.", {}}, {1})->Get()->Observe(2);
  EXPECT_TRUE(absl::StrContains(registry.Render(), "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 1\n"
                                                   "h_sum 2\nh_count 1\n"));
}

TEST(MetricsTest, LatencyBucketsIncrease) {
  const std::vector<double> b = LatencyBuckets();
  ASSERT_GE(b.size(), 10u);
  EXPECT_DOUBLE_EQ(b.front(), 1e-4);
  EXPECT_DOUBLE_EQ(b.back(), 100);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
}

TEST(MetricsTest, DeterministicOrderWhateverTheInsertionOrder) {
  auto render = [](bool reversed) {
    MetricsRegistry registry;
    std::vector<std::string> names = {"b_total", "a_total", "c"};
    if (reversed) std::reverse(names.begin(), names.end());
    for (const std::string& n : names) {
      CounterFamily* f = registry.AddCounter({n, "x", {"k"}});
      std::vector<std::string> keys = {"z", "m", "a"};
      if (reversed) std::reverse(keys.begin(), keys.end());
      for (const std::string& k : keys) f->WithLabels({k})->Increment();
    }
    registry.AddCollector([reversed](CollectedGauges& out) {
      out.Declare({"bb_depth", "Depth.", {"queue"}});
      out.Set("bb_depth", {reversed ? "x" : "y"}, 1);
      out.Set("bb_depth", {reversed ? "y" : "x"}, 2);
    });
    return registry.Render();
  };
  const std::string a = render(false);
  EXPECT_NE(render(false), "");
  EXPECT_LT(a.find("a_total"), a.find("b_total"));
  EXPECT_LT(a.find("b_total"), a.find("bb_depth"));
  EXPECT_LT(a.find("bb_depth"), a.find("\nc{"));
  EXPECT_LT(a.find("a_total{k=\"a\"}"), a.find("a_total{k=\"m\"}"));
}

TEST(MetricsTest, SameFamilyTwiceIsTheSameFamily) {
  MetricsRegistry registry;
  CounterFamily* a = registry.AddCounter({"x_total", "x", {"k"}});
  EXPECT_EQ(a, registry.AddCounter({"x_total", "x", {"k"}}));
}

TEST(MetricsTest, TenantCardinalityIsBounded) {
  MetricsRegistry registry;
  CounterFamily* f = registry.AddCounter(
      {"rejections_total", "R.", {"tenant", "reason"}, /*max_series=*/3, "tenant"});
  for (int i = 0; i < 100000; ++i) {
    f->WithLabels({"tenant" + std::to_string(i), i % 2 ? "rate" : "concurrency"})->Increment();
  }
  // 3 real tenants, then "other" per reason, then (past twice the bound) all-"other".
  EXPECT_LE(f->series(), 6);
  const std::string text = registry.Render();
  EXPECT_TRUE(absl::StrContains(text, "tenant=\"tenant0\""));
  EXPECT_TRUE(absl::StrContains(text, "{tenant=\"other\",reason=\"rate\"}"));
  EXPECT_FALSE(absl::StrContains(text, "tenant99999"));
  // Known series keep counting past the bound.
  f->WithLabels({"tenant0", "concurrency"})->Increment();
  EXPECT_TRUE(absl::StrContains(registry.Render(),
                                "{tenant=\"tenant0\",reason=\"concurrency\"} 2\n"));
}

TEST(MetricsTest, CollectedGaugesSumOverflow) {
  MetricsRegistry registry;
  registry.AddCollector([](CollectedGauges& out) {
    out.Declare({"use", "U.", {"tenant"}, /*max_series=*/2, "tenant"});
    for (int i = 0; i < 10; ++i) out.Set("use", {"t" + std::to_string(i)}, 1);
  });
  const std::string text = registry.Render();
  EXPECT_TRUE(absl::StrContains(text, "use{tenant=\"t0\"} 1\n"));
  EXPECT_TRUE(absl::StrContains(text, "use{tenant=\"other\"} 8\n"));
}

TEST(MetricsTest, CollectedCounters) {
  MetricsRegistry registry;
  registry.AddCollector([](CollectedGauges& out) {
    out.Declare({"hits_total", "Hits.", {}}, /*counter=*/true);
    out.Set("hits_total", {}, 7);
  });
  EXPECT_EQ(registry.Render(), "# HELP hits_total Hits.\n# TYPE hits_total counter\nhits_total 7\n");
}

TEST(MetricsTest, RemovedCollectorIsNotCalled) {
  MetricsRegistry registry;
  int calls = 0;
  const int id = registry.AddCollector([&calls](CollectedGauges&) { ++calls; });
  registry.Render();
  registry.RemoveCollector(id);
  registry.Render();
  EXPECT_EQ(calls, 1);
}

TEST(MetricsTest, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry registry;
  CounterFamily* c = registry.AddCounter({"c_total", "C.", {"t"}});
  HistogramFamily* h = registry.AddHistogram({"h", "H.", {}}, {0.5});
  GaugeFamily* g = registry.AddGauge({"g", "G.", {}});
  constexpr int kThreads = 8;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        c->WithLabels({std::to_string(i % 4)})->Increment();
        h->Get()->Observe(t % 2 ? 1.0 : 0.25);
        g->Get()->Add(1);
        g->Get()->Add(-1);
        if (i % 1000 == 0) registry.Render();  // scrapes while updates go on
      }
    });
  }
  for (std::thread& t : threads) t.join();
  double total = 0;
  for (int k = 0; k < 4; ++k) total += c->WithLabels({std::to_string(k)})->value();
  EXPECT_EQ(total, kThreads * kEach);
  const Histogram::Snapshot s = h->Get()->snapshot();
  EXPECT_EQ(s.count, static_cast<uint64_t>(kThreads * kEach));
  EXPECT_EQ(s.cumulative[0], static_cast<uint64_t>(kThreads / 2 * kEach));
  EXPECT_DOUBLE_EQ(s.sum, kThreads / 2 * kEach * 1.25);
  EXPECT_EQ(g->Get()->value(), 0);
}

}  // namespace
}  // namespace graphopt
