#ifndef GRAPHOPT_ETCD_ETCD_TEST_UTIL_H_
#define GRAPHOPT_ETCD_ETCD_TEST_UTIL_H_

// Real etcd members for tests: Debian's `etcd` binary (etcd-server), on loopback ports picked
// free, with data under a directory of the test's. Not a mock: the tests talk to etcd itself.

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace graphopt {

class EtcdClient;

// An empty directory `name` under the test's temporary directory (removed first if present).
std::string FreshTestDir(const std::string& name);

// Polls `pred` every 20 ms until it holds or `limit` passes; its last answer.
bool Eventually(const std::function<bool()>& pred, absl::Duration limit = absl::Seconds(10));

// The etcd binary to use: $GRAPHOPT_ETCD, else /usr/bin/etcd. Empty when neither exists.
std::string EtcdBinary();

// A cluster of `members` etcd processes (1 or 3 in the tests).
class EtcdTestCluster {
 public:
  static absl::StatusOr<std::unique_ptr<EtcdTestCluster>> Start(const std::string& dir,
                                                                int members);
  ~EtcdTestCluster();

  // "127.0.0.1:PORT" client addresses, one per member.
  const std::vector<std::string>& endpoints() const { return client_addresses_; }
  std::string EndpointList() const;
  // A client of every member.
  std::unique_ptr<EtcdClient> Client() const;

  // SIGKILLs member `i` (its data stays) / starts it again on the same ports and data.
  void Kill(int i);
  absl::Status Restart(int i);

 private:
  EtcdTestCluster() = default;
  absl::Status Launch(int i);

  std::string dir_;
  std::vector<std::string> names_;
  std::vector<std::string> client_addresses_;
  std::vector<std::string> peer_urls_;
  std::string initial_cluster_;
  std::vector<pid_t> pids_;
};

// A one-member etcd for a whole test suite (started in SetUpTestSuite, in a directory named
// after the suite), a client of it for each test, and a key prefix of the test's own, so the
// tests of a suite do not see each other's keys.
class EtcdSuiteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  static EtcdTestCluster* cluster_;
  std::unique_ptr<EtcdClient> client_;
  // "/t/TEST_NAME/".
  std::string prefix_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_ETCD_ETCD_TEST_UTIL_H_
