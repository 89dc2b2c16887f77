#include "service/quota.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "service/tenant.h"

namespace graphopt {
namespace {

// Tenants the limiter keeps state for before it forgets idle ones (callers of a dev server
// name any tenant they like; the map must not grow with them).
constexpr size_t kMaxTrackedTenants = 4096;

absl::Status SetKey(TenantQuota& q, absl::string_view key, absl::string_view value,
                    const std::string& where) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", key, "=", value, ": ", what));
  };
  double number = 0;
  if (!absl::SimpleAtod(value, &number) || !(number >= 0) || number > 1e15) {
    return bad("not a number in 0..1e15");
  }
  if (key == "max_concurrent" || key == "max_ops") {
    if (number != static_cast<double>(static_cast<int64_t>(number)) || number > 1e9) {
      return bad("not a whole number up to 1e9");
    }
    (key == "max_concurrent" ? q.max_concurrent : q.max_ops) = static_cast<int>(number);
  } else if (key == "requests_per_s") {
    q.requests_per_s = number;
  } else if (key == "burst") {
    q.burst = number;
  } else if (key == "blob_mb") {
    q.blob_bytes = static_cast<int64_t>(number * (1 << 20));
  } else if (key == "op_store_mb") {
    q.op_store_bytes = static_cast<int64_t>(number * (1 << 20));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": unknown key '", key,
        "' (keys: max_concurrent, requests_per_s, burst, blob_mb, op_store_mb, max_ops)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<QuotaTable> QuotaTable::Parse(absl::string_view text, TenantQuota defaults) {
  // Two passes: the `*` line changes the defaults every named tenant starts from, wherever it is.
  struct Line {
    int number;
    std::string tenant;
    std::vector<std::string> settings;
  };
  std::vector<Line> lines;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    raw = raw.substr(0, raw.find('#'));
    std::vector<std::string> words = absl::StrSplit(raw, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty()) continue;
    Line line{number, words[0], {words.begin() + 1, words.end()}};
    if (line.settings.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number, ": tenant '", line.tenant, "' has no key=value settings"));
    }
    if (line.tenant != "*") {
      if (absl::Status s = ValidateTenantName(line.tenant); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("line ", number, ": ", s.message()));
      }
    }
    lines.push_back(std::move(line));
  }
  auto apply = [](TenantQuota& q, const Line& line) -> absl::Status {
    for (const std::string& setting : line.settings) {
      const size_t eq = setting.find('=');
      const std::string where = absl::StrCat("line ", line.number, " (", line.tenant, ")");
      if (eq == std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": '", setting, "' is not key=value"));
      }
      if (absl::Status s = SetKey(q, setting.substr(0, eq), setting.substr(eq + 1), where);
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  };
  bool star_seen = false;
  for (const Line& line : lines) {
    if (line.tenant != "*") continue;
    if (star_seen) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line.number, ": '*' given twice"));
    }
    star_seen = true;
    if (absl::Status s = apply(defaults, line); !s.ok()) return s;
  }
  QuotaTable table(defaults);
  for (const Line& line : lines) {
    if (line.tenant == "*") continue;
    auto [it, inserted] = table.tenants_.try_emplace(line.tenant, defaults);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line.number, ": tenant '", line.tenant, "' is given twice"));
    }
    if (absl::Status s = apply(it->second, line); !s.ok()) return s;
  }
  return table;
}

const TenantQuota& QuotaTable::For(absl::string_view tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? defaults_ : it->second;
}

TenantLimiter::Admission& TenantLimiter::Admission::operator=(Admission&& other) noexcept {
  if (this != &other) {
    Release();
    limiter_ = std::exchange(other.limiter_, nullptr);
    tenant_ = std::move(other.tenant_);
  }
  return *this;
}

void TenantLimiter::Admission::Release() {
  if (limiter_ != nullptr) std::exchange(limiter_, nullptr)->Release(tenant_);
}

absl::StatusOr<TenantLimiter::Admission> TenantLimiter::Admit(absl::string_view tenant,
                                                              bool concurrent,
                                                              absl::Duration* retry_after) {
  const TenantQuota quota = quotas_->For(tenant);
  const int replicas = quotas_->replicas();
  // With replicas, the figures are this replica's share: say so, or the limit looks wrong.
  const std::string share =
      replicas > 1 ? absl::StrCat(" on this replica (its share over ", replicas, " replicas)")
                   : "";
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  if (tenants_.size() >= std::max(kMaxTrackedTenants, next_sweep_) && !tenants_.contains(tenant)) {
    // Forget tenants with nothing in flight whose bucket has refilled: their state is the
    // initial one.
    for (auto it = tenants_.begin(); it != tenants_.end();) {
      const State& s = it->second;
      const double refill =
          s.tokens + absl::ToDoubleSeconds(now - s.refilled) * quota.requests_per_s;
      if (s.in_flight == 0 && refill >= quota.burst) {
        tenants_.erase(it++);
      } else {
        ++it;
      }
    }
    next_sweep_ = 2 * tenants_.size();
  }
  State& s = tenants_[tenant];
  const double burst = std::max(1.0, quota.burst);
  if (s.tokens < 0) {
    s.tokens = burst;
    s.refilled = now;
  }
  s.tokens = std::min(burst, s.tokens + absl::ToDoubleSeconds(now - s.refilled) * quota.requests_per_s);
  s.refilled = now;
  if (s.tokens < 1) {
    const double wait_s =
        quota.requests_per_s > 0 ? (1 - s.tokens) / quota.requests_per_s : 60;
    if (retry_after != nullptr) *retry_after = absl::Seconds(std::min(wait_s, 60.0));
    return absl::ResourceExhaustedError(absl::StrCat(
        "tenant '", tenant, "': quota requests_per_s=", quota.requests_per_s, " (burst ",
        quota.burst, ")", share, " used up; retry in ", static_cast<int64_t>(wait_s * 1000 + 1), " ms"));
  }
  if (concurrent && s.in_flight >= quota.max_concurrent) {
    if (retry_after != nullptr) *retry_after = absl::Milliseconds(100);
    return absl::ResourceExhaustedError(absl::StrCat(
        "tenant '", tenant, "': quota max_concurrent=", quota.max_concurrent, share, " reached: ",
        s.in_flight, " calls in progress"));
  }
  s.tokens -= 1;
  Admission admission;
  if (concurrent) {
    ++s.in_flight;
    admission.limiter_ = this;
    admission.tenant_ = std::string(tenant);
  }
  return admission;
}

int TenantLimiter::TrackedTenants() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(tenants_.size());
}

int TenantLimiter::InFlight(absl::string_view tenant) const {
  absl::MutexLock lock(&mu_);
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second.in_flight;
}

std::vector<std::pair<std::string, int>> TenantLimiter::InFlightByTenant() const {
  std::vector<std::pair<std::string, int>> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [tenant, state] : tenants_) {
      if (state.in_flight > 0) out.emplace_back(tenant, state.in_flight);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void TenantLimiter::Release(const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  auto it = tenants_.find(tenant);
  if (it != tenants_.end() && it->second.in_flight > 0) --it->second.in_flight;
}

}  // namespace graphopt
