#ifndef GRAPHOPT_UTIL_METRICS_H_
#define GRAPHOPT_UTIL_METRICS_H_

// Counters, gauges and histograms with labels, rendered in the Prometheus text exposition
// format 0.0.4. A MetricsRegistry is built by main and handed to whatever records metrics:
// there is no process-wide registry.
//
// Hot paths: a series (one label set of a family) is found once under the family's mutex and
// then updated with atomics only; callers that record often keep the series pointer, which
// stays valid as long as the registry.
//
// Label cardinality is bounded: a family holds at most `max_series` label sets. Past that, a
// new label set has its `overflow_label` (the unbounded one, e.g. "tenant") replaced by
// "other", and when even that would exceed twice the bound, every label is "other". So a
// client inventing tenant names costs a bounded number of series, never memory without end.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace graphopt {

// The label value that stands for every label set past a family's bound.
inline constexpr char kOverflowLabelValue[] = "other";

class Counter {
 public:
  // `v` must be >= 0 (a counter only goes up); negative values are ignored.
  void Increment(double v = 1);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, strictly increasing and finite (+Inf is implied).
  explicit Histogram(const std::vector<double>* bounds);
  void Observe(double v);

  struct Snapshot {
    // Cumulative counts, one per bound, then +Inf (== count).
    std::vector<uint64_t> cumulative;
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double>* const bounds_;
  // Non-cumulative counts per bucket, the last for values above every bound.
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0};
  std::atomic<uint64_t> count_{0};
};

// Bucket bounds: `count` bounds from `start`, each `factor` times the one before.
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// Seconds from 100 us to about 100 s: for RPC and pass latencies.
std::vector<double> LatencyBuckets();

struct FamilyOptions {
  std::string name;
  std::string help;
  std::vector<std::string> labels;
  // At most this many label sets (see the top of this file).
  int max_series = 1000;
  // The label replaced by "other" past max_series; empty: all of them.
  std::string overflow_label;
};

// What a family renders; internal to this file and its tests.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  const FamilyOptions& options() const { return options_; }
  virtual void Render(std::string& out) const = 0;

 protected:
  explicit FamilyBase(FamilyOptions options) : options_(std::move(options)) {}
  // The key of `values` after the cardinality bound. Requires mu_.
  std::vector<std::string> BoundedKey(const std::vector<std::string>& values, size_t series) const;
  const FamilyOptions options_;
};

// A family of series of type T (Counter, Gauge or Histogram), one per label set. Thread-safe.
template <typename T>
class Family final : public FamilyBase {
 public:
  // `values` in the order of FamilyOptions::labels; a wrong count is a programmer error
  // (CHECK). The pointer lives as long as the family.
  T* WithLabels(const std::vector<std::string>& values);
  // For a family without labels.
  T* Get() { return WithLabels({}); }
  void Render(std::string& out) const override;
  int series() const;

 private:
  friend class MetricsRegistry;
  Family(FamilyOptions options, std::vector<double> bounds)
      : FamilyBase(std::move(options)), bounds_(std::move(bounds)) {}
  std::unique_ptr<T> Make() const;

  const std::vector<double> bounds_;  // histograms only
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> series_ ABSL_GUARDED_BY(mu_);
};

template <>
void Family<Counter>::Render(std::string& out) const;
template <>
void Family<Gauge>::Render(std::string& out) const;
template <>
void Family<Histogram>::Render(std::string& out) const;
extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// Values computed when scraped (queue depths, workers up): what a collector writes.
class CollectedGauges {
 public:
  // A gauge family (with `counter`: a counter family, for totals another component keeps);
  // later calls with the same name add to it. Label sets past options.max_series are summed
  // into the overflow series.
  void Declare(const FamilyOptions& options, bool counter = false);
  void Set(absl::string_view family, const std::vector<std::string>& values, double v);

 private:
  friend class MetricsRegistry;
  struct Collected {
    FamilyOptions options;
    bool counter = false;
    std::map<std::vector<std::string>, double> values;
  };
  std::map<std::string, Collected, std::less<>> families_;
};

// The metrics of one process. Families are made once (at start-up, typically in main or in a
// component's constructor); making a family whose name exists returns the existing one when
// the type and labels match and is a programmer error (CHECK) otherwise.
class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  CounterFamily* AddCounter(FamilyOptions options);
  GaugeFamily* AddGauge(FamilyOptions options);
  HistogramFamily* AddHistogram(FamilyOptions options, std::vector<double> bounds);

  // `collect` runs on every scrape, on the scraping thread; it must be quick and thread-safe,
  // and everything it reads must outlive the registry or be removed first (RemoveCollector).
  using Collector = std::function<void(CollectedGauges&)>;
  int AddCollector(Collector collect);
  void RemoveCollector(int id);

  // The whole exposition, families sorted by name, series by label values: deterministic.
  std::string Render() const;

 private:
  template <typename T>
  Family<T>* Add(FamilyOptions options, std::vector<double> bounds, const char* type);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<FamilyBase>> families_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, const char*> types_ ABSL_GUARDED_BY(mu_);
  std::map<int, Collector> collectors_ ABSL_GUARDED_BY(mu_);
  int next_collector_ ABSL_GUARDED_BY(mu_) = 0;
};

// The Content-Type of Render()'s output.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Exposition escaping: a label value (\, " and newline) and a HELP text (\ and newline).
std::string EscapeLabelValue(absl::string_view v);
std::string EscapeHelp(absl::string_view v);
// A sample value: integers without a fraction, +Inf/-Inf/NaN as Prometheus spells them.
std::string FormatSampleValue(double v);

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_METRICS_H_
