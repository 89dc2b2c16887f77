#include "util/cpu_quota.h"

#include <sched.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

// A directory laid out like "/" with the cgroup files a test writes.
class FakeRoot {
 public:
  FakeRoot() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") + "/cpu_quota_XXXXXX";
    root_ = mkdtemp(templ.data());
  }
  const std::string& root() const { return root_; }
  void Write(const std::string& relative, const std::string& text) {
    const std::string path = root_ + "/" + relative;
    for (size_t i = root_.size() + 1; i < path.size(); ++i) {
      if (path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
    }
    std::ofstream(path) << text;
  }

 private:
  std::string root_;
};

TEST(CgroupCpuQuotaTest, V2CpuMaxOfTheProcessCgroup) {
  FakeRoot fs;
  fs.Write("sys/fs/cgroup/kubepods/pod1/c1/cpu.max", "150000 100000\n");
  fs.Write("sys/fs/cgroup/kubepods/cpu.max", "max 100000\n");
  std::string source;
  std::optional<double> q = CgroupCpuQuota(fs.root(), "0::/kubepods/pod1/c1\n", &source);
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(*q, 1.5);
  EXPECT_EQ(source, fs.root() + "/sys/fs/cgroup/kubepods/pod1/c1/cpu.max");
}

TEST(CgroupCpuQuotaTest, V2TightestAncestorWins) {
  FakeRoot fs;
  fs.Write("sys/fs/cgroup/a/b/cpu.max", "400000 100000\n");
  fs.Write("sys/fs/cgroup/a/cpu.max", "100000 100000\n");
  std::optional<double> q = CgroupCpuQuota(fs.root(), "0::/a/b\n", nullptr);
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(*q, 1.0);
}

TEST(CgroupCpuQuotaTest, V2NamespacedContainerReadsTheMountRoot) {
  // Inside a container the process's own cgroup is the mount's root ("0::/"), or its path is
  // the host's and does not exist under the container's mount.
  FakeRoot fs;
  fs.Write("sys/fs/cgroup/cpu.max", "50000 100000\n");
  std::optional<double> q = CgroupCpuQuota(fs.root(), "0::/\n", nullptr);
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(*q, 0.5);
  q = CgroupCpuQuota(fs.root(), "0::/kubepods/burstable/podX/abc\n", nullptr);
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(*q, 0.5);
}

TEST(CgroupCpuQuotaTest, V2MaxIsNoQuota) {
  FakeRoot fs;
  fs.Write("sys/fs/cgroup/cpu.max", "max 100000\n");
  EXPECT_FALSE(CgroupCpuQuota(fs.root(), "0::/\n", nullptr).has_value());
}

TEST(CgroupCpuQuotaTest, V1CpuController) {
  FakeRoot fs;
  fs.Write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n");
  fs.Write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  fs.Write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  fs.Write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  std::string source;
  std::optional<double> q = CgroupCpuQuota(
      fs.root(), "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n", &source);
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(*q, 2.0);
  EXPECT_EQ(source, fs.root() + "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us");
}

TEST(CgroupCpuQuotaTest, V1UnlimitedAndMissingFilesAreNoQuota) {
  FakeRoot fs;
  fs.Write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  fs.Write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  EXPECT_FALSE(CgroupCpuQuota(fs.root(), "3:cpu,cpuacct:/\n", nullptr).has_value());
  EXPECT_FALSE(CgroupCpuQuota(fs.root(), "3:cpuset:/\n0::/\n", nullptr).has_value());
  EXPECT_FALSE(CgroupCpuQuota(fs.root(), "garbage\n", nullptr).has_value());
}

TEST(ReadCpuLimitsTest, QuotaCapsTheAffinityCountRoundingUp) {
  FakeRoot fs;
  fs.Write("proc/self/cgroup", "0::/pod\n");
  fs.Write("sys/fs/cgroup/pod/cpu.max", "1000 100000\n");  // 0.01 CPU: still one thread
  CpuLimits limits = ReadCpuLimits(fs.root());
  EXPECT_EQ(limits.cpus, 1);
  ASSERT_TRUE(limits.quota_cpus.has_value());
  EXPECT_NEAR(*limits.quota_cpus, 0.01, 1e-12);
  EXPECT_EQ(limits.source, fs.root() + "/sys/fs/cgroup/pod/cpu.max");
  EXPECT_EQ(CapThreads(8, limits), 1);
}

TEST(ReadCpuLimitsTest, NoQuotaLeavesTheAffinityCount) {
  FakeRoot fs;
  fs.Write("proc/self/cgroup", "0::/\n");
  CpuLimits limits = ReadCpuLimits(fs.root());
  EXPECT_FALSE(limits.quota_cpus.has_value());
  EXPECT_EQ(limits.cpus, limits.affinity_cpus);
  EXPECT_GE(limits.cpus, 1);
  EXPECT_EQ(limits.source, "affinity");
}

TEST(ReadCpuLimitsTest, AffinityMaskIsCounted) {
  // This process pinned to one CPU: one thread, whatever the host has.
  cpu_set_t saved, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &saved)) ++first;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  FakeRoot fs;
  const CpuLimits limits = ReadCpuLimits(fs.root());
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(limits.affinity_cpus, 1);
  EXPECT_EQ(limits.cpus, 1);
  EXPECT_EQ(CapThreads(4, limits), 1);
}

TEST(CapThreadsTest, NeverBelowOneNorAboveTheRequest) {
  CpuLimits limits;
  limits.cpus = 4;
  EXPECT_EQ(CapThreads(2, limits), 2);
  EXPECT_EQ(CapThreads(8, limits), 4);
  EXPECT_EQ(CapThreads(0, limits), 1);
}

}  // namespace
}  // namespace graphopt
