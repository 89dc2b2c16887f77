#include "service/op_persistence.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "ops/builtin_ops.h"
#include "gtest/gtest.h"
#include "service/op_store.h"

namespace graphopt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// A fresh directory path under the test's temporary directory (not created).
std::string NewDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  static int counter = 0;
  return absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name, "-", ::getpid(), "-", counter++);
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

v1::OpDescriptor UnaryOp(const std::string& name, const std::string& shape_rule = "Relu") {
  v1::OpDescriptor d;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        domain: "my.ops"
        version: 1
        inputs { name: "x" type_constraint: "T" }
        outputs { name: "y" type_constraint: "T" }
        type_constraints { name: "T" allowed: DT_FLOAT32 }
      )pb",
      &d));
  d.set_name(name);
  d.mutable_shape_rule()->set_builtin(shape_rule);
  return d;
}

v1::OpDescriptorList ListOf(std::initializer_list<v1::OpDescriptor> ops) {
  v1::OpDescriptorList list;
  for (const v1::OpDescriptor& d : ops) *list.add_ops() = d;
  return list;
}

TEST(FileOpPersistenceTest, CreatesTheDirectoryAndRoundTrips) {
  const std::string dir = absl::StrCat(NewDir("ops"), "/nested/state");
  auto persistence = FileOpPersistence::Create(dir + "/");
  ASSERT_TRUE(persistence.ok()) << persistence.status();
  EXPECT_EQ((*persistence)->dir(), dir);
  EXPECT_EQ((*persistence)->Describe(), absl::StrCat("directory '", dir, "'"));
  auto empty = (*persistence)->LoadAll();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->tenants.empty());

  const v1::OpDescriptorList a = ListOf({UnaryOp("A"), UnaryOp("B")});
  ASSERT_TRUE((*persistence)->Save("team-a", a).ok());
  ASSERT_TRUE((*persistence)->Save("b", ListOf({UnaryOp("C")})).ok());
  EXPECT_EQ((*persistence)->PathFor("team-a"), dir + "/team-a.ops.pb");
  // Deterministic bytes, no temporary file left.
  EXPECT_EQ(ReadAll(dir + "/team-a.ops.pb"), SerializeOpsDeterministically(a));
  EXPECT_FALSE(Exists(dir + "/team-a.ops.pb.tmp"));

  auto loaded = (*persistence)->LoadAll();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->errors.empty());
  ASSERT_EQ(loaded->tenants.size(), 2u);
  EXPECT_EQ(loaded->tenants.begin()->first, "b");
  EXPECT_EQ(loaded->tenants.at("team-a").SerializeAsString(), a.SerializeAsString());

  // An empty list removes the tenant's file.
  ASSERT_TRUE((*persistence)->Save("b", v1::OpDescriptorList()).ok());
  EXPECT_FALSE(Exists(dir + "/b.ops.pb"));
  ASSERT_TRUE((*persistence)->Save("never-saved", v1::OpDescriptorList()).ok());
  // A malformed tenant never becomes a path.
  EXPECT_EQ((*persistence)->Save("../etc", a).code(), absl::StatusCode::kInvalidArgument);
}

TEST(FileOpPersistenceTest, RefusesAFileAsDirectory) {
  const std::string dir = NewDir("file");
  WriteAll(dir, "not a directory");
  auto persistence = FileOpPersistence::Create(dir);
  EXPECT_FALSE(persistence.ok());
  EXPECT_THAT(std::string(persistence.status().message()), HasSubstr("is not a directory"));
  EXPECT_EQ(FileOpPersistence::Create("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FileOpPersistenceTest, CorruptAndStrayFiles) {
  const std::string dir = NewDir("corrupt");
  auto persistence = FileOpPersistence::Create(dir);
  ASSERT_TRUE(persistence.ok());
  ASSERT_TRUE((*persistence)->Save("good", ListOf({UnaryOp("A")})).ok());
  WriteAll(dir + "/broken.ops.pb", "\xff\xff\xff not a protobuf");
  WriteAll(dir + "/Bad_Name.ops.pb", "");
  WriteAll(dir + "/good.ops.pb.tmp", "half written");
  WriteAll(dir + "/README", "ignored");

  auto loaded = (*persistence)->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->tenants.size(), 1u);
  EXPECT_EQ(loaded->tenants.at("good").ops(0).name(), "A");
  ASSERT_THAT(loaded->errors, SizeIs(2));
  EXPECT_THAT(loaded->errors[0], HasSubstr("Bad_Name.ops.pb"));
  EXPECT_THAT(loaded->errors[1], HasSubstr("tenant 'broken': '" + dir + "/broken.ops.pb'"));
  EXPECT_THAT(loaded->errors[1], HasSubstr("is not a serialized OpDescriptorList; moved aside"));
  EXPECT_FALSE(Exists(dir + "/broken.ops.pb"));
  EXPECT_TRUE(Exists(dir + "/broken.ops.pb.corrupt"));
  EXPECT_FALSE(Exists(dir + "/good.ops.pb.tmp"));
  EXPECT_TRUE(Exists(dir + "/README"));
  // Loading again is quiet apart from the bad name.
  loaded = (*persistence)->LoadAll();
  ASSERT_TRUE(loaded.ok());
  EXPECT_THAT(loaded->errors, SizeIs(1));
}

class StoreRestartTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinOps(&builtins_).ok()); }

  std::unique_ptr<OpStore> OpenStore(const std::string& dir, OpStoreLoadReport* report) {
    auto persistence = FileOpPersistence::Create(dir);
    EXPECT_TRUE(persistence.ok());
    OpStoreOptions options;
    options.persistence = std::shared_ptr<OpPersistence>(std::move(*persistence));
    auto store = std::make_unique<OpStore>(&builtins_, options);
    auto loaded = store->Load();
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (loaded.ok()) *report = *loaded;
    return store;
  }

  OpRegistry builtins_;
};

TEST_F(StoreRestartTest, RegisteredOpsSurviveARestart) {
  const std::string dir = NewDir("restart");
  OpStoreLoadReport report;
  {
    std::unique_ptr<OpStore> store = OpenStore(dir, &report);
    EXPECT_EQ(report.tenants, 0);
    google::protobuf::RepeatedPtrField<v1::OpDescriptor> ops;
    *ops.Add() = UnaryOp("A");
    *ops.Add() = UnaryOp("B");
    ASSERT_TRUE(store->Register("team-a", ops, false).ok());
    ops.RemoveLast();
    ASSERT_TRUE(store->Register("team-b", ops, false).ok());
    google::protobuf::RepeatedPtrField<v1::OpRef> refs;
    refs.Add()->set_domain("my.ops");
    refs.Mutable(0)->set_name("A");
    ASSERT_TRUE(store->Unregister("team-b", refs).ok());
  }
  std::unique_ptr<OpStore> store = OpenStore(dir, &report);
  EXPECT_EQ(report.tenants, 1);
  EXPECT_EQ(report.ops, 2);
  EXPECT_TRUE(report.errors.empty());
  EXPECT_NE(store->Snapshot("team-a")->registry().Find("my.ops", "B"), nullptr);
  EXPECT_NE(store->Snapshot("team-a")->registry().Find("my.ops", "A")->shape_fn, nullptr);
  EXPECT_EQ(store->Snapshot("team-b")->registry().local_size(), 0u);
  EXPECT_FALSE(Exists(dir + "/team-b.ops.pb"));
  // Loaded ops count as registered: the same descriptor again is unchanged.
  google::protobuf::RepeatedPtrField<v1::OpDescriptor> again;
  *again.Add() = UnaryOp("A");
  auto lines = store->Register("team-a", again, false);
  ASSERT_TRUE(lines.ok());
  EXPECT_THAT(*lines, ElementsAre("unchanged my.ops::A v1"));
}

TEST_F(StoreRestartTest, StoredOpsThatNoLongerValidateAreSkipped) {
  const std::string dir = NewDir("stale");
  auto persistence = FileOpPersistence::Create(dir);
  ASSERT_TRUE(persistence.ok());
  // As if written by a server with more builtin rules: Gone's rule does not exist here, and
  // UsesGone's body needs Gone.
  v1::OpDescriptor uses_gone = UnaryOp("UsesGone");
  uses_gone.clear_shape_rule();
  v1::Graph* body = uses_gone.mutable_body();
  body->add_inputs()->set_name("bx");
  body->add_outputs()->set_name("by");
  v1::Node* n = body->add_nodes();
  n->set_domain("my.ops");
  n->set_op_type("Gone");
  n->add_inputs("bx");
  n->add_outputs("by");
  ASSERT_TRUE((*persistence)
                  ->Save("t", ListOf({UnaryOp("Fine"), UnaryOp("Gone", "NoSuchRule"), uses_gone}))
                  .ok());
  WriteAll(dir + "/corrupt.ops.pb", "garbage\xff");

  OpStoreLoadReport report;
  std::unique_ptr<OpStore> store = OpenStore(dir, &report);
  EXPECT_EQ(report.tenants, 1);
  EXPECT_EQ(report.ops, 1);
  ASSERT_THAT(report.errors, SizeIs(3));
  EXPECT_THAT(report.errors[0], HasSubstr("tenant 'corrupt'"));
  EXPECT_THAT(report.errors[1],
              HasSubstr("tenant 't': skipping stored op my.ops::Gone v1: ops[1]: op my.ops::Gone: "
                        "shape_rule: there is no builtin shape rule 'NoSuchRule'"));
  EXPECT_THAT(report.errors[2], HasSubstr("tenant 't': skipping stored op my.ops::UsesGone v1"));
  EXPECT_THAT(report.errors[2], HasSubstr("unknown op 'my.ops::Gone'"));
  EXPECT_NE(store->Snapshot("t")->registry().Find("my.ops", "Fine"), nullptr);
  EXPECT_EQ(store->Snapshot("t")->registry().Find("my.ops", "Gone"), nullptr);
}

TEST(InMemoryOpPersistenceTest, SurvivesTheStore) {
  OpRegistry builtins;
  ASSERT_TRUE(RegisterBuiltinOps(&builtins).ok());
  auto memory = std::make_shared<InMemoryOpPersistence>();
  google::protobuf::RepeatedPtrField<v1::OpDescriptor> ops;
  *ops.Add() = UnaryOp("A");
  {
    OpStoreOptions options;
    options.persistence = memory;
    OpStore store(&builtins, options);
    ASSERT_TRUE(store.Load().ok());
    ASSERT_TRUE(store.Register("x", ops, false).ok());
  }
  OpStoreOptions options;
  options.persistence = memory;
  OpStore store(&builtins, options);
  auto report = store.Load();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->ops, 1);
  EXPECT_NE(store.Snapshot("x")->registry().Find("my.ops", "A"), nullptr);
  EXPECT_EQ(memory->Describe(), "memory");
}

}  // namespace
}  // namespace graphopt
