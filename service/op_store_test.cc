#include "service/op_store.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "ops/builtin_ops.h"
#include "graph/inference.h"
#include "gtest/gtest.h"
#include "service/op_persistence.h"

namespace graphopt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Descriptors = google::protobuf::RepeatedPtrField<v1::OpDescriptor>;

v1::OpDescriptor Parse(const std::string& text) {
  v1::OpDescriptor d;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &d)) << text;
  return d;
}

// my.ops::<name>: one float input, one output, shapes as Relu's.
v1::OpDescriptor UnaryOp(const std::string& name, int64_t version = 1) {
  v1::OpDescriptor d = Parse(R"pb(
    domain: "my.ops"
    inputs { name: "x" type_constraint: "T" }
    outputs { name: "y" type_constraint: "T" }
    type_constraints { name: "T" allowed: DT_FLOAT32 }
    shape_rule { builtin: "Relu" }
  )pb");
  d.set_name(name);
  d.set_version(version);
  return d;
}

// my.ops::<name> whose body applies `inner` (a "domain::op" or a builtin name) once.
v1::OpDescriptor BodyOp(const std::string& name, const std::string& inner_domain,
                        const std::string& inner_op, int64_t version = 1) {
  v1::OpDescriptor d = UnaryOp(name, version);
  d.clear_shape_rule();
  v1::Graph* body = d.mutable_body();
  body->add_inputs()->set_name("bx");
  body->add_outputs()->set_name("by");
  v1::Node* n = body->add_nodes();
  n->set_name("n0");
  n->set_domain(inner_domain);
  n->set_op_type(inner_op);
  n->add_inputs("bx");
  n->add_outputs("by");
  return d;
}

Descriptors List(std::vector<v1::OpDescriptor> ops) {
  Descriptors out;
  for (v1::OpDescriptor& d : ops) *out.Add() = std::move(d);
  return out;
}

google::protobuf::RepeatedPtrField<v1::OpRef> Refs(
    std::vector<std::pair<std::string, std::string>> refs) {
  google::protobuf::RepeatedPtrField<v1::OpRef> out;
  for (auto& [domain, name] : refs) {
    v1::OpRef* r = out.Add();
    r->set_domain(domain);
    r->set_name(name);
  }
  return out;
}

class OpStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&builtins_).ok());
    persistence_ = std::make_shared<InMemoryOpPersistence>();
    OpStoreOptions options;
    options.persistence = persistence_;
    store_ = std::make_unique<OpStore>(&builtins_, options);
  }

  // The status of registering `ops` in tenant "a".
  absl::Status Refusal(std::vector<v1::OpDescriptor> ops, OpStore* store = nullptr) {
    if (store == nullptr) store = store_.get();
    return store->Register("a", List(std::move(ops)), false).status();
  }

  bool Has(absl::string_view tenant, absl::string_view name) {
    return store_->Snapshot(tenant)->registry().Find("my.ops", name) != nullptr;
  }

  OpRegistry builtins_;
  std::shared_ptr<InMemoryOpPersistence> persistence_;
  std::unique_ptr<OpStore> store_;
};

TEST_F(OpStoreTest, RegistersAndLists) {
  auto lines = store_->Register("a", List({UnaryOp("MyRelu"), BodyOp("Twice", "", "Relu")}), false);
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_THAT(*lines, ElementsAre("registered my.ops::MyRelu v1", "registered my.ops::Twice v1"));
  std::shared_ptr<const OpSnapshot> snapshot = store_->Snapshot("a");
  EXPECT_EQ(snapshot->tenant(), "a");
  const OpDef* op = snapshot->registry().Find("my.ops", "MyRelu");
  ASSERT_NE(op, nullptr);
  EXPECT_TRUE(op->shape_fn);
  EXPECT_EQ(op->min_inputs, 1);
  EXPECT_NE(snapshot->registry().Find("", "Relu"), nullptr);
  EXPECT_EQ(snapshot->registry().local_size(), 2u);
  EXPECT_EQ(snapshot->registry().size(), builtins_.size() + 2);

  std::vector<v1::OpDescriptor> mine = store_->List("a", true);
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].name(), "MyRelu");
  EXPECT_EQ(mine[1].name(), "Twice");
  std::vector<v1::OpDescriptor> all = store_->List("a", false);
  EXPECT_EQ(all.size(), builtins_.size() + 2);
  EXPECT_EQ(all.back().domain(), "my.ops");  // sorted by (domain, name): "" first
  EXPECT_EQ(store_->List("b", true).size(), 0u);
  EXPECT_EQ(persistence_->saves(), 1);
}

TEST_F(OpStoreTest, BytesByTenant) {
  EXPECT_TRUE(store_->BytesByTenant().empty());
  const v1::OpDescriptor op = UnaryOp("MyRelu");
  ASSERT_TRUE(store_->Register("b", List({op}), false).ok());
  ASSERT_TRUE(store_->Register("a", List({op, UnaryOp("Other")}), false).ok());
  const auto bytes = store_->BytesByTenant();
  ASSERT_EQ(bytes.size(), 2u);
  EXPECT_EQ(bytes[0].first, "a");
  EXPECT_EQ(bytes[1].first, "b");
  EXPECT_EQ(bytes[1].second, static_cast<int64_t>(op.ByteSizeLong()));
  EXPECT_GT(bytes[0].second, bytes[1].second);
}

TEST_F(OpStoreTest, UnchangedRedefinitionAndVersions) {
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("Op")}), false).ok());
  auto again = store_->Register("a", List({UnaryOp("Op")}), false);
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(*again, ElementsAre("unchanged my.ops::Op v1"));
  EXPECT_EQ(persistence_->saves(), 1);  // nothing to save

  v1::OpDescriptor changed = UnaryOp("Op");
  changed.set_doc("now documented");
  absl::Status s = Refusal({changed});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message()),
            "ops[0]: op my.ops::Op: differs from the registered v1; a redefinition must raise "
            "version (got 1)");
  changed.set_version(3);
  auto raised = store_->Register("a", List({changed}), false);
  ASSERT_TRUE(raised.ok()) << raised.status();
  EXPECT_THAT(*raised, ElementsAre("registered my.ops::Op v3 (was v1)"));
  EXPECT_EQ(store_->Snapshot("a")->registry().Find("my.ops", "Op")->descriptor.doc(),
            "now documented");
  // A lower version than the registered one is refused too.
  changed.set_version(2);
  changed.set_doc("older");
  EXPECT_THAT(std::string(Refusal({changed}).message()),
              HasSubstr("differs from the registered v3"));
}

TEST_F(OpStoreTest, ValidateOnlyStoresNothing) {
  auto lines = store_->Register("a", List({UnaryOp("Op")}), true);
  ASSERT_TRUE(lines.ok());
  EXPECT_THAT(*lines, ElementsAre("valid my.ops::Op v1"));
  EXPECT_FALSE(Has("a", "Op"));
  EXPECT_EQ(persistence_->saves(), 0);
  EXPECT_EQ(store_->Register("a", List({UnaryOp("")}), true).status().code(),
            absl::StatusCode::kInvalidArgument);
}

struct RefusalCase {
  const char* what;
  std::vector<v1::OpDescriptor> ops;
  std::string message;  // exact, or a substring when `exact` is false
  bool exact = true;
  absl::StatusCode code = absl::StatusCode::kInvalidArgument;
};

TEST_F(OpStoreTest, RefusesBadDescriptorsWithMessages) {
  v1::OpDescriptor no_name = UnaryOp("");
  v1::OpDescriptor bad_name = UnaryOp("My Op");
  v1::OpDescriptor default_domain = UnaryOp("Op");
  default_domain.set_domain("");
  v1::OpDescriptor onnx_domain = UnaryOp("Op");
  onnx_domain.set_domain("ai.onnx");
  v1::OpDescriptor bad_domain = UnaryOp("Op");
  bad_domain.set_domain("my ops");
  v1::OpDescriptor negative = UnaryOp("Op", -1);
  v1::OpDescriptor no_shape = UnaryOp("Op");
  no_shape.clear_shape_rule();
  v1::OpDescriptor unknown_rule = UnaryOp("Op");
  unknown_rule.mutable_shape_rule()->set_builtin("NoSuchOp");
  v1::OpDescriptor rule_text = UnaryOp("Op");
  rule_text.mutable_shape_rule()->set_expr("out[0] = in[0]");
  v1::OpDescriptor cost_text = UnaryOp("Op");
  cost_text.mutable_cost()->mutable_flops()->set_expr("numel(x)");
  v1::OpDescriptor variadic = UnaryOp("Op");
  variadic.mutable_inputs(0)->set_arity(v1::ARITY_VARIADIC);
  variadic.add_inputs()->set_name("z");
  v1::OpDescriptor unknown_constraint = UnaryOp("Op");
  unknown_constraint.mutable_outputs(0)->set_type_constraint("U");
  v1::OpDescriptor no_output = UnaryOp("Op");
  no_output.clear_outputs();
  v1::OpDescriptor body_inputs = BodyOp("Op", "", "Relu");
  body_inputs.mutable_body()->add_inputs()->set_name("extra");
  v1::OpDescriptor body_outputs = BodyOp("Op", "", "Relu");
  body_outputs.mutable_body()->clear_outputs();
  v1::OpDescriptor body_unknown = BodyOp("Op", "my.ops", "Nope");
  v1::OpDescriptor body_arity = BodyOp("Op", "", "Add");
  v1::OpDescriptor body_undefined = BodyOp("Op", "", "Relu");
  body_undefined.mutable_body()->mutable_nodes(0)->set_inputs(0, "nowhere");
  v1::OpDescriptor body_ref = BodyOp("Op", "", "LeakyRelu");
  v1::Attribute* ref = body_ref.mutable_body()->mutable_nodes(0)->add_attributes();
  ref->set_name("alpha");
  ref->set_ref_attr_name("slope");
  v1::OpDescriptor body_ref_type = body_ref;
  v1::AttributeSpec* slope = body_ref_type.add_attributes();
  slope->set_name("slope");
  slope->set_type(v1::ATTR_INT);
  v1::OpDescriptor self = BodyOp("Self", "my.ops", "Self");

  const std::vector<RefusalCase> cases = {
      {"no name", {no_name}, "ops[0]: op <no name> (domain 'my.ops'): name is required"},
      {"bad name",
       {bad_name},
       "ops[0]: op my.ops::My Op: name must be 1 to 128 letters, digits, '_' and '.', starting "
       "with a letter or '_'"},
      {"default domain",
       {default_domain},
       "ops[0]: op Op: domain '' is the builtin ONNX ops' domain; a custom op needs a domain "
       "of its own, such as \"com.example\""},
      {"ai.onnx", {onnx_domain}, "ops[0]: op ai.onnx::Op: domain 'ai.onnx' is the builtin", false},
      {"bad domain", {bad_domain}, "ops[0]: op my ops::Op: domain must be 1 to 128", false},
      {"negative version",
       {negative},
       "ops[0]: op my.ops::Op: version must not be negative, got -1"},
      {"no shape rule",
       {no_shape},
       "ops[0]: op my.ops::Op: shape_rule is required (or a body the op expands into): every op "
       "must state its output shapes"},
      {"unknown builtin rule",
       {unknown_rule},
       "ops[0]: op my.ops::Op: shape_rule: there is no builtin shape rule 'NoSuchOp'",
       false},
      {"rule text",
       {rule_text},
       "ops[0]: op my.ops::Op: shape_rule 1:8: expected ';' at the end of the statement",
       false},
      {"cost text",
       {cost_text},
       "ops[0]: op my.ops::Op: cost.flops 1:1: unknown function 'numel'",
       false},
      {"variadic not last",
       {variadic},
       "ops[0]: op my.ops::Op: inputs[0] 'x': only the last argument may be variadic"},
      {"unknown constraint",
       {unknown_constraint},
       "ops[0]: op my.ops::Op: outputs[0] 'y': unknown type constraint 'U'"},
      {"no output", {no_output}, "ops[0]: op my.ops::Op: must declare an output"},
      {"body inputs",
       {body_inputs},
       "ops[0]: op my.ops::Op: body has 2 inputs; the op declares 1 (they bind by position)"},
      {"body outputs",
       {body_outputs},
       "ops[0]: op my.ops::Op: body has 0 outputs; the op declares 1 (they bind by position)"},
      {"body unknown op",
       {body_unknown},
       "ops[0]: op my.ops::Op: body: node 'n0' (my.ops::Nope): unknown op 'my.ops::Nope'"},
      {"body arity",
       {body_arity},
       "ops[0]: op my.ops::Op: body: node 'n0' (Add): has 1 inputs, Add takes",
       false},
      {"body undefined value",
       {body_undefined},
       "ops[0]: op my.ops::Op: body: node 'n0' (Relu): input 0 'nowhere' is not produced",
       false},
      {"body ref to undeclared attribute",
       {body_ref},
       "ops[0]: op my.ops::Op: body: node 'n0' (LeakyRelu): attribute 'alpha' refers to "
       "attribute 'slope', which the op does not declare"},
      {"body ref of the wrong type",
       {body_ref_type},
       "ops[0]: op my.ops::Op: body: node 'n0' (LeakyRelu): attribute 'alpha' refers to "
       "attribute 'slope' of type ATTR_INT; LeakyRelu wants ATTR_FLOAT"},
      {"direct recursion",
       {self},
       "ops[0]: op my.ops::Self: body is recursive: my.ops::Self -> my.ops::Self"},
      {"mutual recursion",
       {BodyOp("A", "my.ops", "B"), BodyOp("B", "my.ops", "A")},
       "ops[0]: op my.ops::A: body is recursive: my.ops::A -> my.ops::B -> my.ops::A"},
      {"duplicate in call",
       {UnaryOp("Op"), UnaryOp("Op")},
       "ops[1]: op my.ops::Op: is given twice in this call (also ops[0])"},
      {"all or nothing, first error and the count",
       {UnaryOp("Good"), no_name, no_shape},
       "ops[1]: op <no name> (domain 'my.ops'): name is required (and 1 more descriptors "
       "refused)"},
  };
  for (const RefusalCase& c : cases) {
    absl::Status s = Refusal(c.ops);
    EXPECT_EQ(s.code(), c.code) << c.what << ": " << s;
    if (c.exact) {
      EXPECT_EQ(std::string(s.message()), c.message) << c.what;
    } else {
      EXPECT_THAT(std::string(s.message()), HasSubstr(c.message)) << c.what;
    }
  }
  EXPECT_EQ(store_->Snapshot("a")->registry().local_size(), 0u);
  EXPECT_EQ(persistence_->saves(), 0);
}

TEST_F(OpStoreTest, BodyOnlyOpAndBodiesOverOtherCustomOps) {
  // A body over another op of the same call, a ref_attr_name to a declared attribute, a
  // body-only op (no shape rule).
  v1::OpDescriptor leaky = BodyOp("Leaky", "", "LeakyRelu");
  v1::AttributeSpec* slope = leaky.add_attributes();
  slope->set_name("slope");
  slope->set_type(v1::ATTR_FLOAT);
  v1::Attribute* ref = leaky.mutable_body()->mutable_nodes(0)->add_attributes();
  ref->set_name("alpha");
  ref->set_ref_attr_name("slope");
  auto lines = store_->Register(
      "a", List({BodyOp("Outer", "my.ops", "Inner"), UnaryOp("Inner"), leaky}), false);
  ASSERT_TRUE(lines.ok()) << lines.status();
  const OpDef* outer = store_->Snapshot("a")->registry().Find("my.ops", "Outer");
  ASSERT_NE(outer, nullptr);
  EXPECT_TRUE(outer->shape_fn);  // unknown output shapes until the body is inlined
  EXPECT_TRUE(outer->descriptor.has_body());
  // Later calls may build on registered ops.
  EXPECT_TRUE(store_->Register("a", List({BodyOp("Outer2", "my.ops", "Outer")}), false).ok());
}

TEST_F(OpStoreTest, RefusesRecursionThroughRegisteredOps) {
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("A"), BodyOp("B", "my.ops", "A")}), false).ok());
  absl::Status s = Refusal({BodyOp("A", "my.ops", "B", 2)});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message()),
            "ops[0]: op my.ops::A: body is recursive: my.ops::A -> my.ops::B -> my.ops::A");
}

TEST_F(OpStoreTest, RefusesARedefinitionThatBreaksAnotherBody) {
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("A"), BodyOp("B", "my.ops", "A")}), false).ok());
  v1::OpDescriptor two_inputs = UnaryOp("A", 2);
  v1::ArgSpec* w = two_inputs.add_inputs();
  w->set_name("w");
  w->set_type_constraint("T");
  absl::Status s = Refusal({two_inputs});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(s.message()),
      HasSubstr("ops[0]: op my.ops::A: the new descriptor breaks the body of registered "
                "op my.ops::B: body: node 'n0' (my.ops::A): has 1 inputs, my.ops::A takes 2"));
  // Redefining both in one call is fine.
  v1::OpDescriptor b2 = BodyOp("B", "my.ops", "A", 2);
  b2.mutable_body()->add_inputs()->set_name("bw");
  b2.mutable_body()->mutable_nodes(0)->add_inputs("bw");
  *b2.add_inputs() = *w;
  EXPECT_TRUE(store_->Register("a", List({two_inputs, b2}), false).ok());
}

TEST_F(OpStoreTest, NoOverrideOfBuiltinsInAnyDomain) {
  OpRegistry builtins;
  ASSERT_TRUE(RegisterBuiltinOps(&builtins).ok());
  OpDef extra;
  extra.descriptor = UnaryOp("Vendor");
  extra.descriptor.set_domain("com.vendor");
  extra.shape_fn = builtins.Find("", "Relu")->shape_fn;
  ASSERT_TRUE(builtins.Register(extra).ok());
  OpStore store(&builtins);
  v1::OpDescriptor d = UnaryOp("Vendor", 5);
  d.set_domain("com.vendor");
  absl::Status s = Refusal({d}, &store);
  EXPECT_EQ(std::string(s.message()),
            "ops[0]: op com.vendor::Vendor: is a builtin op and cannot be overridden");
  absl::Status u = store.Unregister("a", Refs({{"com.vendor", "Vendor"}})).status();
  EXPECT_EQ(u.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(u.message()),
            "ops[0]: op com.vendor::Vendor is a builtin op and cannot be unregistered");
}

TEST_F(OpStoreTest, InjectedCompilerMessagesKeepTheirPosition) {
  OpStoreOptions options;
  options.compiler = [](v1::OpDescriptor d) -> absl::StatusOr<OpDef> {
    if (d.shape_rule().expr() == "bad") {
      return absl::InvalidArgumentError("shape_rule:1:7: unknown input 'z'");
    }
    if (d.shape_rule().expr() == "internal") return absl::InternalError("compiler bug");
    if (d.shape_rule().expr() == "named") {
      return absl::InvalidArgumentError("op my.ops::Op: shape_rule:2:1: expected ')'");
    }
    if (d.shape_rule().expr() == "quoted") {
      return absl::InvalidArgumentError("op 'my.ops::Op' shape_rule:1:3: unknown name 'q'");
    }
    OpDef def;
    def.shape_fn = [](InferenceContext&) { return absl::OkStatus(); };
    return def;
  };
  OpStore store(&builtins_, options);
  v1::OpDescriptor d = UnaryOp("Op");
  d.mutable_shape_rule()->set_expr("bad");
  absl::Status s = Refusal({d}, &store);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message()), "ops[0]: op my.ops::Op: shape_rule:1:7: unknown input 'z'");
  d.mutable_shape_rule()->set_expr("named");
  EXPECT_EQ(std::string(Refusal({d}, &store).message()),
            "ops[0]: op my.ops::Op: shape_rule:2:1: expected ')'");
  d.mutable_shape_rule()->set_expr("quoted");
  EXPECT_EQ(std::string(Refusal({d}, &store).message()),
            "ops[0]: op my.ops::Op: shape_rule:1:3: unknown name 'q'");
  d.mutable_shape_rule()->set_expr("internal");
  EXPECT_EQ(Refusal({d}, &store).code(), absl::StatusCode::kInvalidArgument);
  d.mutable_shape_rule()->set_expr("fine");
  auto ok = store.Register("a", List({d}), false);
  ASSERT_TRUE(ok.ok()) << ok.status();
  // The descriptor is kept as sent, whatever the compiler put in OpDef::descriptor.
  EXPECT_EQ(store.Snapshot("a")->registry().Find("my.ops", "Op")->descriptor.shape_rule().expr(),
            "fine");
}

TEST_F(OpStoreTest, Limits) {
  OpStoreOptions options;
  options.limits.max_ops_per_tenant = 2;
  options.limits.max_descriptor_bytes = 200;
  options.limits.max_ops_per_call = 3;
  options.limits.max_tenants = 1;
  OpStore store(&builtins_, options);
  v1::OpDescriptor big = UnaryOp("Big");
  big.set_doc(std::string(300, 'x'));
  absl::Status s = Refusal({big}, &store);
  EXPECT_THAT(std::string(s.message()), HasSubstr("ops[0]: op my.ops::Big: descriptor is "));
  EXPECT_THAT(std::string(s.message()), HasSubstr(" bytes serialized; at most 200"));
  s = Refusal({UnaryOp("A"), UnaryOp("B"), UnaryOp("C")}, &store);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(s.message()), "the tenant would hold 3 ops; at most 2 (quota max_ops)");
  s = Refusal({UnaryOp("A"), UnaryOp("B"), UnaryOp("C"), UnaryOp("D")}, &store);
  EXPECT_EQ(std::string(s.message()), "4 op descriptors in one call; at most 3");
  ASSERT_TRUE(store.Register("a", List({UnaryOp("A")}), false).ok());
  s = store.Register("b", List({UnaryOp("A")}), false).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("already holds ops of 1 tenants"));
}

TEST_F(OpStoreTest, PerTenantQuotasAndTheStoreTotal) {
  absl::StatusOr<QuotaTable> parsed = QuotaTable::Parse("tiny max_ops=1", TenantQuota{});
  ASSERT_TRUE(parsed.ok());
  QuotaBook quotas(*std::move(parsed));
  OpStoreOptions options;
  options.quotas = &quotas;
  OpStore store(&builtins_, options);
  ASSERT_TRUE(store.Register("tiny", List({UnaryOp("A")}), false).ok());
  absl::Status s = store.Register("tiny", List({UnaryOp("B")}), false).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("at most 1 (quota max_ops)"));
  EXPECT_TRUE(store.Register("other", List({UnaryOp("A"), UnaryOp("B")}), false).ok());

  // All tenants together are bounded too.
  OpStoreOptions bounded;
  bounded.limits.max_total_bytes = 2 * UnaryOp("A").ByteSizeLong() + 1;
  OpStore total(&builtins_, bounded);
  ASSERT_TRUE(total.Register("a", List({UnaryOp("A")}), false).ok());
  ASSERT_TRUE(total.Register("b", List({UnaryOp("A")}), false).ok());
  s = total.Register("c", List({UnaryOp("A")}), false).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()), HasSubstr("for all tenants together"));
  // Unregistering makes room again.
  ASSERT_TRUE(total.Unregister("a", Refs({{"my.ops", "A"}})).ok());
  EXPECT_TRUE(total.Register("c", List({UnaryOp("A")}), false).ok());
}

TEST_F(OpStoreTest, TenantsAreIsolated) {
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("Op")}), false).ok());
  EXPECT_TRUE(Has("a", "Op"));
  EXPECT_FALSE(Has("b", "Op"));
  EXPECT_FALSE(Has("default", "Op"));
  // b defines its own Op, different and at version 1: no clash with a's.
  v1::OpDescriptor other = UnaryOp("Op");
  other.set_doc("b's");
  ASSERT_TRUE(store_->Register("b", List({other}), false).ok());
  EXPECT_EQ(store_->Snapshot("a")->registry().Find("my.ops", "Op")->descriptor.doc(), "");
  EXPECT_EQ(store_->Snapshot("b")->registry().Find("my.ops", "Op")->descriptor.doc(), "b's");
  // b cannot remove a's op; a body in b cannot use an op only a has.
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("OnlyA")}), false).ok());
  EXPECT_EQ(store_->Unregister("b", Refs({{"my.ops", "OnlyA"}})).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(store_->Register("b", List({BodyOp("UsesA", "my.ops", "OnlyA")}), false)
                              .status()
                              .message()),
              HasSubstr("unknown op 'my.ops::OnlyA'"));
  EXPECT_TRUE(Has("a", "OnlyA"));
}

TEST_F(OpStoreTest, MalformedTenantNames) {
  for (const char* tenant : {"", "Team", "a/b", "-x"}) {
    EXPECT_EQ(store_->Register(tenant, List({UnaryOp("Op")}), false).status().code(),
              absl::StatusCode::kInvalidArgument)
        << tenant;
    EXPECT_EQ(store_->Unregister(tenant, Refs({{"my.ops", "Op"}})).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST_F(OpStoreTest, SnapshotsAreCopyOnWrite) {
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("First")}), false).ok());
  std::shared_ptr<const OpSnapshot> before = store_->Snapshot("a");
  const OpDef* first = before->registry().Find("my.ops", "First");
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("Second")}), false).ok());
  ASSERT_TRUE(store_->Unregister("a", Refs({{"my.ops", "First"}})).ok());
  // The old snapshot is untouched: same op, same address, no Second.
  EXPECT_EQ(before->registry().Find("my.ops", "First"), first);
  EXPECT_EQ(before->registry().Find("my.ops", "Second"), nullptr);
  EXPECT_EQ(before->sources().size(), 1u);
  std::shared_ptr<const OpSnapshot> after = store_->Snapshot("a");
  EXPECT_EQ(after->registry().Find("my.ops", "First"), nullptr);
  EXPECT_NE(after->registry().Find("my.ops", "Second"), nullptr);
}

TEST_F(OpStoreTest, ReadersRunWhileRegistering) {
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::thread reader([&] {
    while (!stop.load()) {
      std::shared_ptr<const OpSnapshot> s = store_->Snapshot("a");
      // Every snapshot is internally consistent.
      EXPECT_EQ(s->registry().local_size(), s->sources().size());
      ++reads;
    }
  });
  // Registration starts once the reader runs: on a loaded machine the 50 registrations can
  // otherwise finish before the reader thread is first scheduled (seen in CI).
  while (reads.load() == 0) std::this_thread::yield();
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(store_->Register("a", List({UnaryOp(absl::StrCat("Op", i))}), false).ok());
  }
  stop = true;
  reader.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(store_->Snapshot("a")->registry().local_size(), 50u);
}

TEST_F(OpStoreTest, UnregisterRules) {
  ASSERT_TRUE(
      store_
          ->Register("a", List({UnaryOp("A"), BodyOp("B", "my.ops", "A"), UnaryOp("C", 4)}), false)
          .ok());
  absl::Status s = store_->Unregister("a", Refs({{"my.ops", "Nope"}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(s.message()), "ops[0]: op my.ops::Nope is not registered in tenant 'a'");
  s = store_->Unregister("a", Refs({{"my.ops", "A"}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(s.message()),
            "op my.ops::A is used by the body of op my.ops::B in tenant 'a'; unregister that op "
            "first or in the same call");
  s = store_->Unregister("a", Refs({{"my.ops", "C"}, {"my.ops", "C"}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message()), "ops[1]: op my.ops::C is named twice");
  s = store_->Unregister("a", Refs({{"", "Relu"}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Unregister("a", Refs({})).status().code(), absl::StatusCode::kInvalidArgument);
  // A failed call removed nothing.
  EXPECT_EQ(store_->Snapshot("a")->registry().local_size(), 3u);

  auto lines = store_->Unregister("a", Refs({{"my.ops", "A"}, {"my.ops", "B"}, {"my.ops", "C"}}));
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_THAT(*lines, ElementsAre("unregistered my.ops::A v1", "unregistered my.ops::B v1",
                                  "unregistered my.ops::C v4"));
  EXPECT_EQ(store_->Snapshot("a")->registry().local_size(), 0u);
  EXPECT_TRUE(persistence_->LoadAll()->tenants.empty());
}

TEST_F(OpStoreTest, PersistsBeforeSwapping) {
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("Kept")}), false).ok());
  persistence_->set_fail_saves(true);
  absl::Status s = store_->Register("a", List({UnaryOp("Lost")}), false).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("nothing changed: cannot save the ops of tenant 'a' to memory"));
  EXPECT_FALSE(Has("a", "Lost"));
  s = store_->Unregister("a", Refs({{"my.ops", "Kept"}})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(Has("a", "Kept"));
  persistence_->set_fail_saves(false);
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("Lost")}), false).ok());
  auto stored = persistence_->LoadAll();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->tenants.at("a").ops_size(), 2);
  EXPECT_EQ(stored->tenants.at("a").ops(0).name(), "Kept");
  EXPECT_EQ(stored->tenants.at("a").ops(1).name(), "Lost");
}

TEST_F(OpStoreTest, RequestOpsLayerOverTheTenant) {
  ASSERT_TRUE(store_->Register("a", List({UnaryOp("Registered")}), false).ok());
  std::shared_ptr<const OpSnapshot> snapshot = store_->Snapshot("a");
  auto layered = store_->LayerRequestOps(
      snapshot, List({UnaryOp("Local"), BodyOp("UsesBoth", "my.ops", "Local")}));
  ASSERT_TRUE(layered.ok()) << layered.status();
  EXPECT_NE((*layered)->Find("my.ops", "Local"), nullptr);
  EXPECT_NE((*layered)->Find("my.ops", "Registered"), nullptr);
  EXPECT_NE((*layered)->Find("", "Relu"), nullptr);
  // Only this request sees them.
  EXPECT_FALSE(Has("a", "Local"));
  EXPECT_EQ(store_->Snapshot("a")->registry().local_size(), 1u);

  // No ops: the snapshot's own registry.
  auto plain = store_->LayerRequestOps(snapshot, Descriptors());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->get(), &snapshot->registry());

  // Same rules as RegisterOps.
  absl::Status s = store_->LayerRequestOps(snapshot, List({UnaryOp("")})).status();
  EXPECT_EQ(std::string(s.message()), "ops[0]: op <no name> (domain 'my.ops'): name is required");
  // Identical to the registered op: the registered one is used.
  auto same = store_->LayerRequestOps(snapshot, List({UnaryOp("Registered")}));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)->Find("my.ops", "Registered"),
            snapshot->registry().Find("my.ops", "Registered"));
  // Changed: must raise the version, then shadows for this request only.
  v1::OpDescriptor changed = UnaryOp("Registered");
  changed.set_doc("request's");
  EXPECT_THAT(std::string(store_->LayerRequestOps(snapshot, List({changed})).status().message()),
              HasSubstr("a redefinition must raise version"));
  changed.set_version(2);
  auto shadowed = store_->LayerRequestOps(snapshot, List({changed}));
  ASSERT_TRUE(shadowed.ok());
  EXPECT_EQ((*shadowed)->Find("my.ops", "Registered")->descriptor.doc(), "request's");
  EXPECT_EQ(snapshot->registry().Find("my.ops", "Registered")->descriptor.doc(), "");

  // The layered registry keeps its snapshot alive after the store moves on.
  std::shared_ptr<const OpRegistry> kept = *layered;
  layered = absl::InternalError("dropped");
  snapshot.reset();
  ASSERT_TRUE(store_->Unregister("a", Refs({{"my.ops", "Registered"}})).ok());
  EXPECT_NE(kept->Find("my.ops", "Registered"), nullptr);
  EXPECT_NE(kept->Find("my.ops", "UsesBoth"), nullptr);
}

}  // namespace
}  // namespace graphopt
