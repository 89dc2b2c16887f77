#include "util/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"

namespace graphopt {
namespace {

// fetch_add on std::atomic<double> is C++20; a compare-exchange loop does the same.
void AtomicAdd(std::atomic<double>& a, double v) {
  double old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, old + v, std::memory_order_relaxed)) {
  }
}

bool ValidName(absl::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void CheckOptions(const FamilyOptions& o) {
  ABSL_RAW_CHECK(ValidName(o.name, true), "bad metric name");
  for (const std::string& l : o.labels) {
    ABSL_RAW_CHECK(ValidName(l, false) && l.rfind("__", 0) != 0 && l != "le",
                   "bad label name");
  }
  ABSL_RAW_CHECK(o.max_series >= 1, "max_series must be at least 1");
}

// `{a="x",b="y"}` (with `extra` appended, for le=), or "" without labels.
std::string LabelText(const std::vector<std::string>& names, const std::vector<std::string>& values,
                      absl::string_view extra = "") {
  if (names.empty() && extra.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    absl::StrAppend(&out, names[i], "=\"", EscapeLabelValue(values[i]), "\"");
  }
  if (!extra.empty()) {
    if (!names.empty()) out += ',';
    out.append(extra.data(), extra.size());
  }
  out += '}';
  return out;
}

void RenderHeader(const FamilyOptions& o, const char* type, std::string& out) {
  absl::StrAppend(&out, "# HELP ", o.name, " ", EscapeHelp(o.help), "\n# TYPE ", o.name, " ",
                  type, "\n");
}

}  // namespace

std::string EscapeLabelValue(absl::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string EscapeHelp(absl::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  // The shortest of 15..17 significant digits that reads back as the same double.
  char buf[32];
  for (int precision = 15; precision < 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) return buf;
  }
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

void Counter::Increment(double v) {
  if (!(v >= 0)) return;
  AtomicAdd(value_, v);
}

void Gauge::Add(double v) { AtomicAdd(value_, v); }

Histogram::Histogram(const std::vector<double>* bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds->size() + 1]) {
  for (size_t i = 0; i <= bounds_->size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  if (std::isnan(v)) return;
  // The first bound >= v: Prometheus buckets are "less than or equal".
  const size_t i = std::lower_bound(bounds_->begin(), bounds_->end(), v) - bounds_->begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  AtomicAdd(sum_, v);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.cumulative.resize(bounds_->size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_->size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = total;
  }
  // Read without a lock while observations go on: the count is the +Inf bucket, so the
  // rendered histogram is always self-consistent; the sum may lead or lag by an observation.
  s.count = total;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> b;
  b.reserve(count);
  double v = start;
  for (int i = 0; i < count; ++i, v *= factor) b.push_back(v);
  return b;
}

std::vector<double> LatencyBuckets() {
  // 100 us, 250 us, 500 us, 1 ms, ... 100 s: a 1-2.5-5 ladder, 19 buckets.
  std::vector<double> b;
  for (double decade = 1e-4; decade < 200; decade *= 10) {
    for (double m : {1.0, 2.5, 5.0}) {
      if (decade * m <= 100 + 1e-9) b.push_back(decade * m);
    }
  }
  return b;
}

std::vector<std::string> FamilyBase::BoundedKey(const std::vector<std::string>& values,
                                                size_t series) const {
  const size_t max = static_cast<size_t>(options_.max_series);
  if (series < max) return values;
  std::vector<std::string> key = values;
  const auto& names = options_.labels;
  if (!options_.overflow_label.empty() && series < 2 * max) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == options_.overflow_label) key[i] = kOverflowLabelValue;
    }
    return key;
  }
  for (std::string& v : key) v = kOverflowLabelValue;
  return key;
}

template <typename T>
std::unique_ptr<T> Family<T>::Make() const {
  if constexpr (std::is_same_v<T, Histogram>) {
    return std::make_unique<Histogram>(&bounds_);
  } else {
    return std::make_unique<T>();
  }
}

template <typename T>
T* Family<T>::WithLabels(const std::vector<std::string>& values) {
  ABSL_RAW_CHECK(values.size() == options_.labels.size(), "wrong number of label values");
  absl::MutexLock lock(&mu_);
  auto it = series_.find(values);
  if (it != series_.end()) return it->second.get();
  std::vector<std::string> key = BoundedKey(values, series_.size());
  auto [slot, inserted] = series_.try_emplace(std::move(key));
  if (inserted) slot->second = Make();
  return slot->second.get();
}

template <typename T>
int Family<T>::series() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(series_.size());
}

template <>
void Family<Counter>::Render(std::string& out) const {
  RenderHeader(options_, "counter", out);
  absl::MutexLock lock(&mu_);
  for (const auto& [values, c] : series_) {
    absl::StrAppend(&out, options_.name, LabelText(options_.labels, values), " ",
                    FormatSampleValue(c->value()), "\n");
  }
}

template <>
void Family<Gauge>::Render(std::string& out) const {
  RenderHeader(options_, "gauge", out);
  absl::MutexLock lock(&mu_);
  for (const auto& [values, g] : series_) {
    absl::StrAppend(&out, options_.name, LabelText(options_.labels, values), " ",
                    FormatSampleValue(g->value()), "\n");
  }
}

template <>
void Family<Histogram>::Render(std::string& out) const {
  RenderHeader(options_, "histogram", out);
  absl::MutexLock lock(&mu_);
  for (const auto& [values, h] : series_) {
    const Histogram::Snapshot s = h->snapshot();
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      const std::string le = absl::StrCat(
          "le=\"", i < bounds_.size() ? FormatSampleValue(bounds_[i]) : "+Inf", "\"");
      absl::StrAppend(&out, options_.name, "_bucket", LabelText(options_.labels, values, le), " ",
                      s.cumulative[i], "\n");
    }
    const std::string labels = LabelText(options_.labels, values);
    absl::StrAppend(&out, options_.name, "_sum", labels, " ", FormatSampleValue(s.sum), "\n",
                    options_.name, "_count", labels, " ", s.count, "\n");
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

template <typename T>
Family<T>* MetricsRegistry::Add(FamilyOptions options, std::vector<double> bounds,
                                const char* type) {
  CheckOptions(options);
  absl::MutexLock lock(&mu_);
  auto it = families_.find(options.name);
  if (it != families_.end()) {
    ABSL_RAW_CHECK(types_[options.name] == type &&
                       it->second->options().labels == options.labels,
                   "a metric family is made twice with different types or labels");
    return static_cast<Family<T>*>(it->second.get());
  }
  const std::string name = options.name;
  auto* family = new Family<T>(std::move(options), std::move(bounds));
  families_[name].reset(family);
  types_[name] = type;
  return family;
}

CounterFamily* MetricsRegistry::AddCounter(FamilyOptions options) {
  return Add<Counter>(std::move(options), {}, "counter");
}

GaugeFamily* MetricsRegistry::AddGauge(FamilyOptions options) {
  return Add<Gauge>(std::move(options), {}, "gauge");
}

HistogramFamily* MetricsRegistry::AddHistogram(FamilyOptions options, std::vector<double> bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    ABSL_RAW_CHECK(std::isfinite(bounds[i]) && (i == 0 || bounds[i] > bounds[i - 1]),
                   "histogram bounds must be finite and strictly increasing");
  }
  return Add<Histogram>(std::move(options), std::move(bounds), "histogram");
}

int MetricsRegistry::AddCollector(Collector collect) {
  absl::MutexLock lock(&mu_);
  const int id = next_collector_++;
  collectors_[id] = std::move(collect);
  return id;
}

void MetricsRegistry::RemoveCollector(int id) {
  absl::MutexLock lock(&mu_);
  collectors_.erase(id);
}

void CollectedGauges::Declare(const FamilyOptions& options, bool counter) {
  CheckOptions(options);
  auto [it, inserted] = families_.try_emplace(options.name);
  if (inserted) {
    it->second.options = options;
    it->second.counter = counter;
  }
}

void CollectedGauges::Set(absl::string_view family, const std::vector<std::string>& values,
                          double v) {
  auto it = families_.find(family);
  ABSL_RAW_CHECK(it != families_.end(), "CollectedGauges::Set on an undeclared family");
  Collected& c = it->second;
  ABSL_RAW_CHECK(values.size() == c.options.labels.size(), "wrong number of label values");
  auto found = c.values.find(values);
  if (found != c.values.end()) {
    found->second += v;
    return;
  }
  // Past the bound the values are summed into the overflow series: a gauge of use per tenant
  // then still adds up to the total.
  const size_t max = static_cast<size_t>(c.options.max_series);
  std::vector<std::string> key = values;
  if (c.values.size() >= max) {
    bool replaced = false;
    for (size_t i = 0; i < key.size(); ++i) {
      if (c.options.labels[i] == c.options.overflow_label) {
        key[i] = kOverflowLabelValue;
        replaced = true;
      }
    }
    if (!replaced || c.values.size() >= 2 * max) {
      for (std::string& k : key) k = kOverflowLabelValue;
    }
  }
  c.values[key] += v;
}

std::string MetricsRegistry::Render() const {
  // Collected families and registered ones, merged in name order. A collector's family that
  // shares a registered family's name is skipped: a registered family is authoritative.
  CollectedGauges collected;
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, collect] : collectors_) collect(collected);
  auto reg = families_.begin();
  auto col = collected.families_.begin();
  while (reg != families_.end() || col != collected.families_.end()) {
    const bool take_reg =
        col == collected.families_.end() || (reg != families_.end() && reg->first <= col->first);
    if (take_reg) {
      if (col != collected.families_.end() && col->first == reg->first) ++col;
      reg->second->Render(out);
      ++reg;
      continue;
    }
    const FamilyOptions& o = col->second.options;
    RenderHeader(o, col->second.counter ? "counter" : "gauge", out);
    for (const auto& [values, v] : col->second.values) {
      absl::StrAppend(&out, o.name, LabelText(o.labels, values), " ", FormatSampleValue(v), "\n");
    }
    ++col;
  }
  return out;
}

}  // namespace graphopt
