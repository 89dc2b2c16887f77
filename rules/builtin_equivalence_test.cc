// Rules written in the rule language for builtin ops (Conv, Concat, Reshape, Gemm, Softmax,
// Add), registered from the builtins' own descriptors through CompileOpDescriptor, and checked
// against the C++ shape functions node by node: same output types and dims values, and an
// error exactly where the C++ function gives one. Where the C++ function gives up on a
// symbolic size the rule may compute it (symbolic polynomials); those cases are listed and
// checked as refinements: every dim the C++ function knows is the same.

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/builtin_ops.h"
#include "gtest/gtest.h"
#include "rules/example_rules.h"
#include "rules/op_compiler.h"
#include "rules/test_util.h"

namespace graphopt {
namespace {

using rules_testing::AInt;
using rules_testing::AInts;
using rules_testing::AString;
using rules_testing::TestGraph;

class EquivalenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&registry_).ok());
    for (const auto& [name, rule] : std::vector<std::pair<std::string, std::string>>{
             {"Conv", example_rules::kConvRule},
             {"Concat", example_rules::kConcatRule},
             {"Reshape", example_rules::kReshapeRule},
             {"Gemm", example_rules::kGemmRule},
             {"Softmax", example_rules::kSoftmaxRule},
             {"Add", example_rules::kAddRule}}) {
      v1::OpDescriptor d = registry_.Find("", name)->descriptor;
      d.set_domain("rules");
      d.mutable_shape_rule()->set_expr(rule);
      absl::StatusOr<OpDef> def = CompileOpDescriptor(d, registry_);
      ASSERT_TRUE(def.ok()) << def.status();
      ASSERT_TRUE(registry_.Register(*std::move(def)).ok());
    }
  }

  enum class Outcome { kSame, kRefines, kDiffers };

  struct Case {
    std::vector<std::string> inputs;  // "float32[2,3]", "const:1,2" (int64), "" (absent)
    AttributeMap attrs;
    int64_t opset = 0;
  };

  // Builds the case twice in one graph, once with the builtin op and once with the rule op,
  // runs inference, and compares.
  Outcome Compare(const std::string& op, const Case& c, std::string* detail) {
    const std::string builtin = Run(op, "", c, detail);
    const std::string rule = Run(op, "rules", c, detail);
    *detail = absl::StrCat("builtin: ", builtin, "\nrule:    ", rule);
    const bool builtin_error = builtin.rfind("ERROR", 0) == 0;
    const bool rule_error = rule.rfind("ERROR", 0) == 0;
    if (builtin_error || rule_error) {
      return builtin_error == rule_error ? Outcome::kSame : Outcome::kDiffers;
    }
    if (builtin == rule) return Outcome::kSame;
    return Refines(rule, builtin) ? Outcome::kRefines : Outcome::kDiffers;
  }

  // "float32[2,3] value=[2,3]" or "ERROR <message>".
  std::string Run(const std::string& op, const std::string& domain, const Case& c,
                  std::string* unused) {
    TestGraph g(&registry_);
    if (c.opset > 0) {
      g.SetOpset(c.opset, "");
      v1::OpsetImport rules;
      rules.set_domain("rules");
      rules.set_version(c.opset);
      g.graph.opset_imports.push_back(rules);
    }
    g.Node(op, g.Inputs(c.inputs), {"y"}, c.attrs, domain);
    absl::Status s = g.Run();
    if (!s.ok()) return absl::StrCat("ERROR ", s.message());
    return absl::StrCat(g.T("y"), " value=", g.DimsValue("y"));
  }

  // True when every dim (and dims value entry) the builtin knows, the rule has too.
  static bool Refines(const std::string& rule, const std::string& builtin) {
    auto split = [](const std::string& s) {
      std::vector<std::string> parts;
      std::string cur;
      for (char c : s) {
        if (c == '[' || c == ']' || c == ',' || c == ' ' || c == '=') {
          parts.push_back(cur);
          cur.clear();
          parts.push_back(std::string(1, c));
        } else {
          cur.push_back(c);
        }
      }
      parts.push_back(cur);
      return parts;
    };
    // Rank unknown or no value on the builtin side: anything refines it.
    std::string b = builtin, r = rule;
    if (b.find("[?..]") != std::string::npos || b.find("value=none") != std::string::npos) {
      const std::string bt = b.substr(0, b.find(' '));
      const std::string rt = r.substr(0, r.find(' '));
      const bool type_ok = bt.find("[?..]") != std::string::npos ? bt.substr(0, bt.find('[')) ==
                                                                       rt.substr(0, rt.find('['))
                                                                 : Refines(rt, bt);
      const std::string bv = b.substr(b.find(' ') + 1);
      const std::string rv = r.substr(r.find(' ') + 1);
      const bool value_ok = bv == "value=none" || Refines(rv, bv);
      return type_ok && value_ok;
    }
    std::vector<std::string> pb = split(b), pr = split(r);
    if (pb.size() != pr.size()) return false;
    for (size_t i = 0; i < pb.size(); ++i) {
      if (pb[i] != pr[i] && pb[i] != "?") return false;
    }
    return true;
  }

  void ExpectSame(const std::string& op, const Case& c) {
    std::string detail;
    EXPECT_EQ(Compare(op, c, &detail), Outcome::kSame) << op << "\n" << detail;
  }
  void ExpectRefines(const std::string& op, const Case& c) {
    std::string detail;
    EXPECT_EQ(Compare(op, c, &detail), Outcome::kRefines) << op << "\n" << detail;
  }
  std::string RuleResult(const std::string& op, const Case& c) {
    std::string unused;
    return Run(op, "rules", c, &unused);
  }

  OpRegistry registry_;
};

TEST_F(EquivalenceTest, Conv) {
  ExpectSame("Conv", {{"float32[1,3,224,224]", "float32[64,3,7,7]"},
                      {{"strides", AInts({2, 2})}, {"pads", AInts({3, 3, 3, 3})}}});
  ExpectSame("Conv", {{"float32[batch,3,32,32]", "float32[16,3,3,3]", "float32[16]"},
                      {{"pads", AInts({1, 1, 1, 1})}}});
  ExpectSame("Conv", {{"float32[n,8,h,w]", "float32[8,1,3,3]"},
                      {{"group", AInt(8)}, {"pads", AInts({1, 1, 1, 1})}}});
  ExpectSame("Conv", {{"float32[1,4,10,10]", "float32[6,2,3,3]"},
                      {{"group", AInt(2)}, {"auto_pad", AString("SAME_UPPER")},
                       {"strides", AInts({2, 2})}}});
  ExpectSame("Conv", {{"float32[1,4,10]", "float32[6,4,3]"},
                      {{"auto_pad", AString("VALID")}, {"dilations", AInts({2})}}});
  ExpectSame("Conv", {{"float32[1,4,10]", "float32[6,4,3]"},
                      {{"kernel_shape", AInts({3})}, {"auto_pad", AString("SAME_LOWER")}}});
  ExpectSame("Conv", {{"float32[?..]", "float32[6,4,3,3]"}, {}});
  ExpectSame("Conv", {{"float32[?..]", "float32[?..]"}, {}});
  ExpectSame("Conv", {{"float32[1,4,?,5]", "float32[6,4,3,3]"}, {}});
  // Errors where the C++ function errs.
  ExpectSame("Conv", {{"float32[1,3,8,8]", "float32[6,4,3,3]"}, {}});  // channels
  ExpectSame("Conv", {{"float32[1,4,8]", "float32[6,4,3,3]"}, {}});    // ranks differ
  ExpectSame("Conv", {{"float32[1,4]", "float32[6,4]"}, {}});          // rank < 3
  ExpectSame("Conv", {{"float32[1,4,2,2]", "float32[6,4,3,3]"}, {}});  // window too big
  ExpectSame("Conv", {{"float32[1,4,8,8]", "float32[6,4,3,3]"}, {{"group", AInt(0)}}});
  ExpectSame("Conv", {{"float32[1,4,8,8]", "float32[6,4,3,3]", "float32[5]"}, {}});  // bias
  ExpectSame("Conv", {{"float32[1,4,8,8]", "float32[6,4,3,3]"}, {{"strides", AInts({1})}}});
  ExpectSame("Conv", {{"float32[1,4,8,8]", "float32[6,4,3,3]"}, {{"auto_pad", AString("X")}}});
  // A symbolic spatial size the C++ function keeps only for "same" padding; the rule keeps the
  // exact polynomial.
  ExpectSame("Conv", {{"float32[1,4,h,w]", "float32[6,4,3,3]"}, {{"pads", AInts({1, 1, 1, 1})}}});
  ExpectRefines("Conv", {{"float32[1,4,h,w]", "float32[6,4,3,3]"}, {}});
  EXPECT_EQ(RuleResult("Conv", {{"float32[1,4,h,w]", "float32[6,4,3,3]"}, {}}),
            "float32[1,6,h-2,w-2] value=none");
}

TEST_F(EquivalenceTest, Concat) {
  ExpectSame("Concat", {{"float32[2,3]", "float32[4,3]"}, {{"axis", AInt(0)}}});
  ExpectSame("Concat", {{"float32[2,3]", "float32[2,5]", "float32[2,1]"}, {{"axis", AInt(-1)}}});
  ExpectSame("Concat", {{"float32[batch,3]", "float32[batch,5]"}, {{"axis", AInt(1)}}});
  ExpectSame("Concat", {{"float32[?,3]", "float32[2,?]"}, {{"axis", AInt(1)}}});
  ExpectSame("Concat", {{"float32[?..]", "float32[2,3]"}, {{"axis", AInt(1)}}});
  ExpectSame("Concat", {{"float32[?..]", "float32[?..]"}, {{"axis", AInt(0)}}});
  ExpectSame("Concat", {{"float32[s,3]", "float32[0,3]"}, {{"axis", AInt(0)}}});
  ExpectSame("Concat", {{"float32[2,3]"}, {}, 3});  // axis defaults to 1 before opset 4
  // Contents of shape tensors.
  ExpectSame("Concat", {{"const:1,2", "const:3"}, {{"axis", AInt(0)}}});
  ExpectSame("Concat", {{"const:1,2", "int64[2]"}, {{"axis", AInt(0)}}});
  // Errors.
  ExpectSame("Concat", {{"float32[2,3]", "float32[2,3,4]"}, {{"axis", AInt(0)}}});
  ExpectSame("Concat", {{"float32[2,3]", "float32[2,4]"}, {{"axis", AInt(0)}}});
  ExpectSame("Concat", {{"float32[2,3]"}, {{"axis", AInt(2)}}});
  ExpectSame("Concat", {{"float32[2,3]"}, {}, 13});  // axis required
  // Symbolic sums the C++ function leaves unknown.
  ExpectRefines("Concat", {{"float32[s,3]", "float32[2,3]"}, {{"axis", AInt(0)}}});
  EXPECT_EQ(RuleResult("Concat", {{"float32[s,3]", "float32[t,3]", "float32[2,3]"},
                                  {{"axis", AInt(0)}}}),
            "float32[s+t+2,3] value=none");
}

TEST_F(EquivalenceTest, Reshape) {
  ExpectSame("Reshape", {{"float32[2,3,4]", "const:6,4"}, {}});
  ExpectSame("Reshape", {{"float32[2,3,4]", "const:-1,4"}, {}});
  ExpectSame("Reshape", {{"float32[2,3,4]", "const:0,-1"}, {}});
  ExpectSame("Reshape", {{"float32[batch,3,4]", "const:0,-1"}, {}});
  ExpectSame("Reshape", {{"float32[batch,3,4]", "const:-1,12"}, {}});
  ExpectSame("Reshape", {{"float32[2,0,4]", "const:0,0,-1"}, {{"allowzero", AInt(0)}}});
  ExpectSame("Reshape", {{"float32[2,3,4]", "int64[3]"}, {}});
  ExpectSame("Reshape", {{"float32[2,3,4]", "int64[?]"}, {}});
  ExpectSame("Reshape", {{"float32[?..]", "const:0,-1"}, {}});
  ExpectSame("Reshape", {{"float32[2,3,4]"}, {{"shape", AInts({4, 6})}}, 4});
  // Errors.
  ExpectSame("Reshape", {{"float32[2,3,4]", "const:-1,-1"}, {}});
  ExpectSame("Reshape", {{"float32[2,3,4]", "const:5,-1"}, {}});
  ExpectSame("Reshape", {{"float32[2,3,4]", "const:5,5"}, {}});
  ExpectSame("Reshape", {{"float32[2,3,4]", "const:-2,12"}, {}});
  ExpectSame("Reshape", {{"float32[2,3]", "const:0,0,0"}, {}});
  ExpectSame("Reshape", {{"float32[2,3]", "const:0,-1"}, {{"allowzero", AInt(1)}}});
  ExpectSame("Reshape", {{"float32[2,3,4]"}, {}});
  // The data's contents pass through (Shape -> Reshape of a shape tensor).
  ExpectSame("Reshape", {{"const:5,6,7", "const:3"}, {}});
  // A -1 that the C++ function cannot infer through several symbols.
  ExpectRefines("Reshape", {{"float32[batch,seq,64]", "const:0,-1,8"}, {}});
  EXPECT_EQ(RuleResult("Reshape", {{"float32[batch,seq,64]", "const:0,-1,8"}, {}}),
            "float32[batch,8*seq,8] value=none");
}

TEST_F(EquivalenceTest, Gemm) {
  ExpectSame("Gemm", {{"float32[4,8]", "float32[8,16]"}, {}});
  ExpectSame("Gemm", {{"float32[8,4]", "float32[16,8]", "float32[16]"},
                      {{"transA", AInt(1)}, {"transB", AInt(1)}}});
  ExpectSame("Gemm", {{"float32[batch,8]", "float32[8,n]", "float32[1,n]"}, {}});
  ExpectSame("Gemm", {{"float32[?..]", "float32[8,16]"}, {}});
  ExpectSame("Gemm", {{"float32[4,8]", "float32[8,16]", "float32[?..]"}, {}});
  // Errors.
  ExpectSame("Gemm", {{"float32[4,8]", "float32[3,16]"}, {}});
  ExpectSame("Gemm", {{"float32[4,8,1]", "float32[8,16]"}, {}});
  ExpectSame("Gemm", {{"float32[4,8]", "float32[8,16]", "float32[3]"}, {}});
  ExpectSame("Gemm", {{"float32[4,8]", "float32[8,16]", "float32[1,4,16]"}, {}});
}

TEST_F(EquivalenceTest, Softmax) {
  ExpectSame("Softmax", {{"float32[2,3]"}, {}});
  ExpectSame("Softmax", {{"float32[batch,seq,64]"}, {{"axis", AInt(1)}}});
  ExpectSame("Softmax", {{"float32[?..]"}, {{"axis", AInt(7)}}});
  ExpectSame("Softmax", {{"float32[2,3]"}, {{"axis", AInt(2)}}});        // out of range
  ExpectSame("Softmax", {{"float32[2,3]"}, {{"axis", AInt(2)}}, 9});     // rank allowed < 11
  ExpectSame("Softmax", {{"float32[2,3]"}, {{"axis", AInt(2)}}, 11});
  ExpectSame("Softmax", {{"float32[5]"}, {}, 11});                       // default 1 < 13
  ExpectSame("Softmax", {{"float32[5]"}, {}, 13});
}

TEST_F(EquivalenceTest, Add) {
  ExpectSame("Add", {{"float32[2,3]", "float32[3]"}, {}});
  ExpectSame("Add", {{"float32[batch,1,4]", "float32[3,1]"}, {}});
  ExpectSame("Add", {{"float32[?..]", "float32[3]"}, {}});
  ExpectSame("Add", {{"float32[a,3]", "float32[b,3]"}, {}});
  ExpectSame("Add", {{"float32[2,3]", "float32[4]"}, {}});  // mismatch
  // Shape arithmetic on dims values.
  ExpectSame("Add", {{"const:1,2", "const:10"}, {}});
  ExpectSame("Add", {{"const:1,2", "const:10,20"}, {}});
  ExpectSame("Add", {{"const:1,2,3", "const:10,20"}, {}});  // mismatch
}

}  // namespace
}  // namespace graphopt
