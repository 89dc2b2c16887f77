#ifndef GRAPHOPT_UTIL_CPU_QUOTA_H_
#define GRAPHOPT_UTIL_CPU_QUOTA_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace graphopt {

// How many CPUs this process can use at once, and why.
//
// std::thread::hardware_concurrency() counts the host's CPUs, but a container under a CPU limit
// (Kubernetes' resources.limits.cpu: a CFS quota) or a process pinned with taskset/cpusets gets
// fewer. Kernel threads beyond what the process may run at once do not add speed; they make
// every fork-join wait for a thread the kernel has parked until the next quota period.
struct CpuLimits {
  int cpus = 1;             // min(affinity, ceil(quota)), at least 1
  int affinity_cpus = 1;    // CPUs in the affinity mask (sched_getaffinity)
  // The tightest CFS quota on the process's cgroup path, in CPUs (quota / period); nullopt
  // when there is none ("max", -1) or it cannot be read.
  std::optional<double> quota_cpus;
  // "affinity" or the cgroup file the quota came from (for start-up logs).
  std::string source;
};

// The limits of this process: its affinity mask and the CFS quota of its cgroup (v2 cpu.max,
// or v1 cpu.cfs_quota_us / cpu.cfs_period_us), read from `root` ("/" normally; a test passes a
// directory laid out like one). A quota that cannot be read leaves the affinity count.
CpuLimits ReadCpuLimits(absl::string_view root = "/");

// The CPU quota, in CPUs, that the cgroup files under `root` give a process whose
// /proc/self/cgroup is `proc_self_cgroup`: the smallest cpu.max (v2) or
// cpu.cfs_quota_us / cpu.cfs_period_us (v1) on its path from its own cgroup up to the root of
// the hierarchy, where a file exists. `source` gets the file that gave it.
std::optional<double> CgroupCpuQuota(absl::string_view root, absl::string_view proc_self_cgroup,
                                     std::string* source);

// At most `requested` threads, and at most limits.cpus.
int CapThreads(int requested, const CpuLimits& limits);

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_CPU_QUOTA_H_
