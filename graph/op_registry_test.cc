#include "graph/op_registry.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/test_ops.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::graphopt::testing::MakeTestOp;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

OpDef InDomain(const std::string& domain, const std::string& name) {
  OpDef def = MakeTestOp(name, {"x"}, {"y"});
  def.descriptor.set_domain(domain);
  return def;
}

std::vector<std::string> Labels(const std::vector<const OpDef*>& ops) {
  std::vector<std::string> out;
  for (const OpDef* op : ops) {
    out.push_back(absl::StrCat(OpLabel(op->descriptor.domain(), op->descriptor.name()), "/v",
                               op->descriptor.version()));
  }
  return out;
}

TEST(OpRegistryTest, RegisterFindListWithoutParent) {
  OpRegistry registry;
  ASSERT_TRUE(registry.Register(InDomain("", "B")).ok());
  ASSERT_TRUE(registry.Register(InDomain("", "A")).ok());
  ASSERT_TRUE(registry.Register(InDomain("x.y", "A")).ok());
  EXPECT_EQ(registry.size(), 3u);
  EXPECT_EQ(registry.local_size(), 3u);
  EXPECT_EQ(registry.parent(), nullptr);
  EXPECT_THAT(Labels(registry.List()), ElementsAre("A/v0", "B/v0", "x.y::A/v0"));
  EXPECT_NE(registry.Find("x.y", "A"), nullptr);
  EXPECT_EQ(registry.Find("x.y", "B"), nullptr);
  absl::Status again = registry.Register(InDomain("", "A"));
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.message(), HasSubstr("op A is already registered"));
}

TEST(OpRegistryTest, RefusesMalformedDescriptor) {
  OpRegistry registry;
  OpDef def = MakeTestOp("Bad", {"x*", "y"}, {"z"});
  absl::Status s = registry.Register(def);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("only the last argument may be variadic"));
}

TEST(OpRegistryTest, ChildFallsBackToParentAndShadows) {
  OpRegistry builtins;
  ASSERT_TRUE(builtins.Register(InDomain("", "Relu")).ok());
  ASSERT_TRUE(builtins.Register(InDomain("", "Abs")).ok());
  ASSERT_TRUE(builtins.Register(InDomain("m", "Shared")).ok());

  OpRegistry tenant(&builtins);
  OpDef shadow = InDomain("m", "Shared");
  shadow.descriptor.set_version(2);
  ASSERT_TRUE(tenant.Register(shadow).ok());
  ASSERT_TRUE(tenant.Register(InDomain("m", "Foo")).ok());
  ASSERT_TRUE(tenant.Register(InDomain("a", "Zed")).ok());
  // Same key twice in one layer is still refused.
  EXPECT_EQ(tenant.Register(InDomain("m", "Foo")).code(), absl::StatusCode::kAlreadyExists);

  OpRegistry request(&tenant);
  ASSERT_TRUE(request.Register(InDomain("r", "Local")).ok());

  EXPECT_EQ(request.parent(), &tenant);
  EXPECT_EQ(request.Find("", "Relu"), builtins.Find("", "Relu"));
  EXPECT_EQ(request.Find("m", "Foo"), tenant.Find("m", "Foo"));
  EXPECT_EQ(request.Find("m", "Shared")->descriptor.version(), 2);
  EXPECT_EQ(builtins.Find("m", "Shared")->descriptor.version(), 0);
  EXPECT_EQ(request.FindLocal("m", "Foo"), nullptr);
  EXPECT_NE(request.FindLocal("r", "Local"), nullptr);
  EXPECT_EQ(tenant.Find("r", "Local"), nullptr);

  EXPECT_THAT(Labels(tenant.List()),
              ElementsAre("Abs/v0", "Relu/v0", "a::Zed/v0", "m::Foo/v0", "m::Shared/v2"));
  EXPECT_THAT(Labels(tenant.ListLocal()), ElementsAre("a::Zed/v0", "m::Foo/v0", "m::Shared/v2"));
  EXPECT_THAT(Labels(request.List()), ElementsAre("Abs/v0", "Relu/v0", "a::Zed/v0", "m::Foo/v0",
                                                  "m::Shared/v2", "r::Local/v0"));
  EXPECT_EQ(builtins.size(), 3u);
  EXPECT_EQ(tenant.size(), 5u);  // the shadowed m::Shared counts once
  EXPECT_EQ(tenant.local_size(), 3u);
  EXPECT_EQ(request.size(), 6u);
  EXPECT_EQ(request.size(), request.List().size());
}

TEST(OpRegistryTest, HasMutatingOpsLooksAtEveryLayer) {
  OpRegistry builtins;
  ASSERT_TRUE(builtins.Register(InDomain("", "Relu")).ok());
  EXPECT_FALSE(builtins.HasMutatingOps());
  OpRegistry tenant(&builtins);
  OpDef bad = MakeTestOp("Bad", {"x"}, {"y"});
  bad.descriptor.add_mutated_inputs(3);  // out of range: refused, so not counted
  EXPECT_FALSE(tenant.Register(bad).ok());
  EXPECT_FALSE(tenant.HasMutatingOps());
  OpDef accumulate = MakeTestOp("Accumulate", {"acc", "x"}, {"y"});
  accumulate.descriptor.add_mutated_inputs(0);
  ASSERT_TRUE(tenant.Register(accumulate).ok());
  EXPECT_TRUE(tenant.HasMutatingOps());
  EXPECT_FALSE(builtins.HasMutatingOps());
  OpRegistry request(&tenant);
  EXPECT_TRUE(request.HasMutatingOps());
}

TEST(OpRegistryTest, HasOpsWithBodiesLooksAtEveryLayer) {
  OpRegistry builtins;
  ASSERT_TRUE(builtins.Register(InDomain("", "Relu")).ok());
  OpRegistry tenant(&builtins);
  EXPECT_FALSE(tenant.HasOpsWithBodies());
  OpDef gelu = InDomain("my", "Gelu");
  gelu.descriptor.mutable_body()->add_outputs()->set_name("y");
  ASSERT_TRUE(tenant.Register(gelu).ok());
  EXPECT_TRUE(tenant.HasOpsWithBodies());
  EXPECT_FALSE(builtins.HasOpsWithBodies());
  OpRegistry request(&tenant);
  EXPECT_TRUE(request.HasOpsWithBodies());
}

TEST(OpRegistryTest, EmptyChildSeesParent) {
  OpRegistry builtins;
  ASSERT_TRUE(builtins.Register(InDomain("", "Relu")).ok());
  OpRegistry child(&builtins);
  EXPECT_EQ(child.size(), 1u);
  EXPECT_EQ(child.local_size(), 0u);
  EXPECT_THAT(Labels(child.List()), ElementsAre("Relu/v0"));
}

TEST(OpRegistryTest, RegisteredDefKeepsItsTablesAfterMove) {
  OpRegistry registry;
  OpDef def =
      MakeTestOp("WithAttr", {"x"}, {"y"}, {testing::AttrSpec("alpha", v1::ATTR_FLOAT, false)});
  ASSERT_TRUE(registry.Register(def).ok());
  const OpDef* op = registry.Find("", "WithAttr");
  ASSERT_NE(op, nullptr);
  ASSERT_NE(op->attribute_spec("alpha"), nullptr);
  EXPECT_EQ(op->attribute_spec("alpha"), &op->descriptor.attributes(0));
  EXPECT_EQ(op->min_inputs, 1);
  EXPECT_EQ(op->max_outputs, 1);
}

}  // namespace
}  // namespace graphopt
