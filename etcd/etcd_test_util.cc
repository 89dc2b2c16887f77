#include "etcd/etcd_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "etcd/etcd_client.h"

namespace graphopt {
namespace {

// A loopback port free right now (the kernel's pick for port 0).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace

std::string FreshTestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name);
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  std::filesystem::create_directories(dir, ignored);
  return dir;
}

bool Eventually(const std::function<bool()>& pred, absl::Duration limit) {
  const absl::Time until = absl::Now() + limit;
  while (absl::Now() < until) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return pred();
}

std::unique_ptr<EtcdClient> EtcdTestCluster::Client() const {
  EtcdOptions options;
  options.endpoints = client_addresses_;
  return *EtcdClient::Create(options);
}

std::string EtcdBinary() {
  if (const char* env = std::getenv("GRAPHOPT_ETCD"); env != nullptr && *env != '\0') return env;
  struct stat st;
  if (stat("/usr/bin/etcd", &st) == 0) return "/usr/bin/etcd";
  return "";
}

absl::StatusOr<std::unique_ptr<EtcdTestCluster>> EtcdTestCluster::Start(const std::string& dir,
                                                                         int members) {
  if (EtcdBinary().empty()) {
    return absl::FailedPreconditionError(
        "no etcd binary (apt-get install etcd-server, or set GRAPHOPT_ETCD)");
  }
  std::unique_ptr<EtcdTestCluster> cluster(new EtcdTestCluster());
  cluster->dir_ = dir;
  std::vector<std::string> initial;
  for (int i = 0; i < members; ++i) {
    cluster->names_.push_back(absl::StrCat("m", i));
    cluster->client_addresses_.push_back(absl::StrCat("127.0.0.1:", FreePort()));
    cluster->peer_urls_.push_back(absl::StrCat("http://127.0.0.1:", FreePort()));
    initial.push_back(absl::StrCat(cluster->names_[i], "=", cluster->peer_urls_[i]));
  }
  cluster->initial_cluster_ = absl::StrJoin(initial, ",");
  cluster->pids_.assign(members, 0);
  for (int i = 0; i < members; ++i) {
    if (absl::Status s = cluster->Launch(i); !s.ok()) return s;
  }
  EtcdOptions options;
  options.endpoints = cluster->client_addresses_;
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Create(options);
  if (!client.ok()) return client.status();
  if (absl::Status s = (*client)->WaitReady(absl::Seconds(30)); !s.ok()) return s;
  return cluster;
}

absl::Status EtcdTestCluster::Launch(int i) {
  const std::string data = absl::StrCat(dir_, "/", names_[i], ".etcd");
  const std::string log = absl::StrCat(dir_, "/", names_[i], ".log");
  std::vector<std::string> args = {
      EtcdBinary(),
      absl::StrCat("--name=", names_[i]),
      absl::StrCat("--data-dir=", data),
      absl::StrCat("--listen-client-urls=http://", client_addresses_[i]),
      absl::StrCat("--advertise-client-urls=http://", client_addresses_[i]),
      absl::StrCat("--listen-peer-urls=", peer_urls_[i]),
      absl::StrCat("--initial-advertise-peer-urls=", peer_urls_[i]),
      absl::StrCat("--initial-cluster=", initial_cluster_),
      "--initial-cluster-state=new",
      "--initial-cluster-token=graphopt-test",
      // Fast elections: a killed member's peers elect a new leader within about a second.
      "--heartbeat-interval=50",
      "--election-timeout=500",
      "--logger=zap",
      "--log-outputs=stderr",
  };
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    FILE* out = freopen(log.c_str(), "a", stderr);
    (void)out;
    dup2(2, 1);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  pids_[i] = pid;
  return absl::OkStatus();
}

std::string EtcdTestCluster::EndpointList() const { return absl::StrJoin(client_addresses_, ","); }

void EtcdTestCluster::Kill(int i) {
  if (pids_[i] <= 0) return;
  kill(pids_[i], SIGKILL);
  waitpid(pids_[i], nullptr, 0);
  pids_[i] = 0;
}

absl::Status EtcdTestCluster::Restart(int i) {
  Kill(i);
  return Launch(i);
}

EtcdTestCluster::~EtcdTestCluster() {
  for (size_t i = 0; i < pids_.size(); ++i) Kill(static_cast<int>(i));
}

EtcdTestCluster* EtcdSuiteTest::cluster_ = nullptr;

void EtcdSuiteTest::SetUpTestSuite() {
  const std::string suite = ::testing::UnitTest::GetInstance()->current_test_suite()->name();
  absl::StatusOr<std::unique_ptr<EtcdTestCluster>> started =
      EtcdTestCluster::Start(FreshTestDir(suite), 1);
  ASSERT_TRUE(started.ok()) << started.status();
  cluster_ = started->release();
}

void EtcdSuiteTest::TearDownTestSuite() {
  delete cluster_;
  cluster_ = nullptr;
}

void EtcdSuiteTest::SetUp() {
  ASSERT_NE(cluster_, nullptr) << "no etcd for this suite";
  client_ = cluster_->Client();
  ASSERT_TRUE(client_->WaitReady(absl::Seconds(10)).ok());
  prefix_ =
      absl::StrCat("/t/", ::testing::UnitTest::GetInstance()->current_test_info()->name(), "/");
}

}  // namespace graphopt
