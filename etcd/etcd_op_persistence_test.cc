#include "etcd/etcd_op_persistence.h"

#include <cstdlib>
#include <map>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "etcd/etcd_test_util.h"
#include "etcd/keys.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

v1::OpDescriptorList Ops(const std::string& name) {
  v1::OpDescriptorList list;
  v1::OpDescriptor* d = list.add_ops();
  d->set_domain("com.test");
  d->set_name(name);
  d->set_version(1);
  return list;
}

class EtcdOpPersistenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cluster = EtcdTestCluster::Start(FreshTestDir("ops"), 1);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    client_ = cluster_->Client();
  }
  std::unique_ptr<EtcdTestCluster> cluster_;
  std::unique_ptr<EtcdClient> client_;
};

TEST_F(EtcdOpPersistenceTest, AStaleReplicaCannotOverwriteAnotherOnesChange) {
  EtcdOpPersistence a(client_.get(), "/p/");
  EtcdOpPersistence b(client_.get(), "/p/");
  ASSERT_TRUE(a.LoadAll().ok());
  ASSERT_TRUE(b.LoadAll().ok());
  ASSERT_TRUE(a.Save("acme", Ops("A")).ok());
  // b has not seen a's write: its save would drop "A".
  absl::Status stale = b.Save("acme", Ops("B"));
  EXPECT_TRUE(absl::IsAborted(stale)) << stale;
  EXPECT_NE(stale.message().find("another replica"), std::string::npos) << stale;
  auto loaded = b.LoadAll();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->tenants.at("acme").ops(0).name(), "A");
  v1::OpDescriptorList both = Ops("A");
  *both.add_ops() = Ops("B").ops(0);
  EXPECT_TRUE(b.Save("acme", both).ok());
  // Removing the tenant deletes its key.
  ASSERT_TRUE(b.Save("acme", v1::OpDescriptorList()).ok());
  EXPECT_TRUE(b.LoadAll()->tenants.empty());
}

TEST_F(EtcdOpPersistenceTest, WatchAppliesOtherReplicasChangesAndReportsGarbage) {
  EtcdOpPersistence writer(client_.get(), "/p/");
  EtcdOpPersistence reader(client_.get(), "/p/");
  ASSERT_TRUE(client_->Put(etcd_keys::Ops("/p/", "broken"), "\xff\xff not a proto").ok());
  auto loaded = reader.LoadAll();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->errors.size(), 1u);
  EXPECT_NE(loaded->errors[0].find("/p/ops/broken"), std::string::npos);
  absl::Mutex mu;
  std::map<std::string, int> seen;
  ASSERT_TRUE(reader
                  .Watch([&](const std::string& tenant, const v1::OpDescriptorList& ops) {
                    absl::MutexLock lock(&mu);
                    seen[tenant] = ops.ops_size();
                  })
                  .ok());
  ASSERT_TRUE(writer.LoadAll().ok());
  ASSERT_TRUE(writer.Save("globex", Ops("G")).ok());
  EXPECT_TRUE(Eventually([&] {
    absl::MutexLock lock(&mu);
    return seen.count("globex") == 1 && seen["globex"] == 1;
  }));
  // The watch noted the revision: the reader can now save on top of the writer's change.
  v1::OpDescriptorList more = Ops("G");
  *more.add_ops() = Ops("H").ops(0);
  EXPECT_TRUE(reader.Save("globex", more).ok());
  reader.StopWatching();
}

}  // namespace
}  // namespace graphopt
