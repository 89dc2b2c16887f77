#include "util/cpu_quota.h"

#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace graphopt {
namespace {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// "QUOTA PERIOD" (v2 cpu.max; QUOTA may be "max").
std::optional<double> ParseCpuMax(absl::string_view text) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  if (parts.size() != 2 || parts[0] == "max") return std::nullopt;
  double quota = 0, period = 0;
  if (!absl::SimpleAtod(parts[0], &quota) || !absl::SimpleAtod(parts[1], &period) ||
      quota <= 0 || period <= 0) {
    return std::nullopt;
  }
  return quota / period;
}

// v1: cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us.
std::optional<double> ReadV1Quota(const std::string& dir) {
  std::optional<std::string> quota_text = ReadSmallFile(dir + "/cpu.cfs_quota_us");
  std::optional<std::string> period_text = ReadSmallFile(dir + "/cpu.cfs_period_us");
  if (!quota_text || !period_text) return std::nullopt;
  double quota = 0, period = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(*quota_text), &quota) ||
      !absl::SimpleAtod(absl::StripAsciiWhitespace(*period_text), &period) || quota <= 0 ||
      period <= 0) {
    return std::nullopt;
  }
  return quota / period;
}

// The cgroup path and its ancestors up to "/": "/a/b" -> "/a/b", "/a", "".
std::vector<std::string> PathAndAncestors(absl::string_view path) {
  std::vector<std::string> out;
  std::string p(absl::StripSuffix(absl::StripAsciiWhitespace(path), "/"));
  while (true) {
    out.push_back(p);
    if (p.empty()) break;
    const size_t slash = p.rfind('/');
    p = slash == std::string::npos ? "" : p.substr(0, slash);
  }
  return out;
}

// The smallest quota along `path` under the hierarchy mounted at `mount`. A path that does not
// exist there (a container that sees its own cgroup as the mount's root, without a cgroup
// namespace) falls through to the ancestors, and so to the mount's root.
template <typename ReadQuota>
std::optional<double> MinAlongPath(const std::string& mount, absl::string_view path,
                                   const char* file, ReadQuota read, std::string* source) {
  std::optional<double> best;
  for (const std::string& p : PathAndAncestors(path)) {
    const std::string dir = mount + p;
    std::optional<double> q = read(dir);
    if (q && (!best || *q < *best)) {
      best = q;
      if (source != nullptr) *source = absl::StrCat(dir, "/", file);
    }
  }
  return best;
}

}  // namespace

std::optional<double> CgroupCpuQuota(absl::string_view root, absl::string_view proc_self_cgroup,
                                     std::string* source) {
  const std::string base = absl::StrCat(absl::StripSuffix(root, "/"), "/sys/fs/cgroup");
  std::optional<double> best;
  auto consider = [&](std::optional<double> q, const std::string& from) {
    if (q && (!best || *q < *best)) {
      best = q;
      if (source != nullptr) *source = from;
    }
  };
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n', absl::SkipEmpty())) {
    // "ID:CONTROLLERS:PATH"; the path may itself hold ':'.
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    const absl::string_view controllers = f[1], path = f[2];
    std::string from;
    if (f[0] == "0" && controllers.empty()) {
      // cgroup v2: the unified hierarchy.
      std::optional<double> q = MinAlongPath(
          base, path, "cpu.max",
          [](const std::string& dir) -> std::optional<double> {
            std::optional<std::string> text = ReadSmallFile(dir + "/cpu.max");
            return text ? ParseCpuMax(*text) : std::nullopt;
          },
          &from);
      consider(q, from);
      continue;
    }
    bool has_cpu = false;
    for (absl::string_view c : absl::StrSplit(controllers, ',')) has_cpu |= c == "cpu";
    if (!has_cpu) continue;
    // cgroup v1: the cpu controller's mount, named after the controllers it carries.
    for (const std::string& mount :
         {absl::StrCat(base, "/", controllers), base + "/cpu,cpuacct", base + "/cpu"}) {
      if (!IsDirectory(mount)) continue;
      consider(MinAlongPath(mount, path, "cpu.cfs_quota_us", ReadV1Quota, &from), from);
      break;
    }
  }
  return best;
}

CpuLimits ReadCpuLimits(absl::string_view root) {
  CpuLimits limits;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    limits.affinity_cpus = std::max(1, CPU_COUNT(&set));
  } else {
    limits.affinity_cpus = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }
  limits.cpus = limits.affinity_cpus;
  limits.source = "affinity";
  const std::string proc = absl::StrCat(absl::StripSuffix(root, "/"), "/proc/self/cgroup");
  if (std::optional<std::string> cgroup = ReadSmallFile(proc)) {
    std::string source;
    limits.quota_cpus = CgroupCpuQuota(root, *cgroup, &source);
    if (limits.quota_cpus) {
      // A quota of 1.5 CPUs still runs two threads 75% of each period: round up.
      const int quota = std::max(1, static_cast<int>(std::ceil(*limits.quota_cpus - 1e-9)));
      if (quota < limits.cpus) {
        limits.cpus = quota;
        limits.source = source;
      }
    }
  }
  return limits;
}

int CapThreads(int requested, const CpuLimits& limits) {
  return std::max(1, std::min(requested, limits.cpus));
}

}  // namespace graphopt
