#include "client/report_table.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace graphopt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

template <typename T>
T ParseText(const char* text) {
  T message;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &message)) << text;
  return message;
}

TEST(TextTableTest, AlignsColumnsAndTrimsTrailingBlanks) {
  TextTable table({{"name"}, {"n", TextTable::Align::kRight}, {"note"}});
  table.AddRow({"a", "1", "x"});
  table.AddRow({"long name", "1234"});
  table.AddRule();
  table.AddRow({"t", "5", "multi\nline"});
  EXPECT_EQ(table.Render(),
            "name          n  note\n"
            "---------  ----  ----------\n"
            "a             1  x\n"
            "long name  1234\n"
            "---------  ----  ----------\n"
            "t             5  multi line\n");
}

TEST(TextTableTest, WidthCountsCodePoints) {
  TextTable table({{"a"}, {"b"}});
  table.AddRow({"\xc3\xa9\xc3\xa9", "x"});  // "éé": 2 code points, 4 bytes
  EXPECT_EQ(table.Render(),
            "a   b\n"
            "--  -\n"
            "\xc3\xa9\xc3\xa9  x\n");
}

TEST(FormatMicrosAsMillisTest, ThreeDecimals) {
  EXPECT_EQ(FormatMicrosAsMillis(0), "0.000");
  EXPECT_EQ(FormatMicrosAsMillis(1234), "1.234");
  EXPECT_EQ(FormatMicrosAsMillis(5), "0.005");
  EXPECT_EQ(FormatMicrosAsMillis(-1500), "-1.500");
}

constexpr char kResponse[] = R"pb(
  graph { nodes { name: "a" } nodes { name: "b" } }
  reports { name: "infer_type" added_for: "dead_code_elimination" changed: false
            nodes_before: 5 nodes_after: 5 wall_time_us: 120 }
  reports { name: "dead_code_elimination" changed: true nodes_before: 5 nodes_after: 2
            wall_time_us: 2500 verify_time_us: 40 round: 2
            messages: "removed 3 nodes" messages: "second" }
  total_time_us: 3000
  fixpoint_rounds: 2
)pb";

TEST(FormatPassReportsTest, RowsAndTotal) {
  const std::string text = FormatPassReports(ParseText<v1::OptimizeResponse>(kResponse));
  EXPECT_EQ(text,
            "pass                   added for              changed     nodes  time ms  "
            "verify ms  messages\n"
            "---------------------  ---------------------  ---------  ------  -------  "
            "---------  -----------------------\n"
            "infer_type             dead_code_elimination  no         5 -> 5    0.120      "
            "    -\n"
            "dead_code_elimination  -                      yes        5 -> 2    2.500      "
            "0.040  removed 3 nodes; second\n"
            "---------------------  ---------------------  ---------  ------  -------  "
            "---------  -----------------------\n"
            "total (2 passes)                              1 changed  5 -> 2    3.000      "
            "0.040\n");
}

TEST(FormatPassReportsTest, NoPasses) {
  const std::string text = FormatPassReports(v1::OptimizeResponse());
  EXPECT_THAT(text, HasSubstr("total (0 passes)"));
}

TEST(FormatReportJsonTest, Fields) {
  const nlohmann::json json =
      nlohmann::json::parse(FormatReportJson(ParseText<v1::OptimizeResponse>(kResponse), 2));
  ASSERT_EQ(json["passes"].size(), 2);
  EXPECT_EQ(json["passes"][1]["name"], "dead_code_elimination");
  EXPECT_EQ(json["passes"][1]["changed"], true);
  EXPECT_EQ(json["passes"][1]["nodes_after"], 2);
  EXPECT_EQ(json["passes"][1]["verify_time_us"], 40);
  EXPECT_EQ(json["passes"][1]["messages"][0], "removed 3 nodes");
  EXPECT_EQ(json["passes"][0]["added_for"], "dead_code_elimination");
  EXPECT_EQ(json["passes"][0]["round"], 0);
  EXPECT_EQ(json["passes"][1]["round"], 2);
  EXPECT_EQ(json["fixpoint_rounds"], 2);
  EXPECT_EQ(json["total_time_us"], 3000);
  EXPECT_EQ(json["nodes_before"], 5);
  EXPECT_EQ(json["nodes_after"], 2);
  EXPECT_EQ(json["written_nodes"], 2);
  EXPECT_EQ(json["pass_runs"], 2);
  EXPECT_EQ(json["passes_changed"], 1);
  EXPECT_EQ(json["pass_time_us"], 2620);
  EXPECT_EQ(json["verify_time_us"], 40);
  EXPECT_EQ(json["fixpoint_rounds"], 0);
  EXPECT_EQ(json["passes"][0]["round"], 0);
}

// The totals come from the reports, not from the response's graph: an ONNX result leaves the
// graph empty, and the CLI moves the model out before it writes the report.
TEST(FormatReportJsonTest, TotalsDoNotDependOnTheResponsesGraph) {
  v1::OptimizeResponse response = ParseText<v1::OptimizeResponse>(kResponse);
  response.clear_graph();
  response.set_fixpoint_rounds(3);
  response.mutable_reports(0)->set_round(1);
  const nlohmann::json json = nlohmann::json::parse(FormatReportJson(response, std::nullopt));
  EXPECT_EQ(json["nodes_before"], 5);
  EXPECT_EQ(json["nodes_after"], 2);
  EXPECT_TRUE(json["written_nodes"].is_null());
  EXPECT_EQ(json["fixpoint_rounds"], 3);
  EXPECT_EQ(json["passes"][0]["round"], 1);
}

TEST(FormatReportJsonTest, WithoutPassesTheWrittenModelIsBothEnds) {
  const nlohmann::json json = nlohmann::json::parse(FormatReportJson(v1::OptimizeResponse(), 7));
  EXPECT_EQ(json["pass_runs"], 0);
  EXPECT_EQ(json["passes_changed"], 0);
  EXPECT_EQ(json["nodes_before"], 7);
  EXPECT_EQ(json["nodes_after"], 7);
  EXPECT_EQ(json["written_nodes"], 7);
}

TEST(FormatReportJsonTest, CostOnlyWhenPresent) {
  EXPECT_FALSE(nlohmann::json::parse(FormatReportJson(v1::OptimizeResponse(), 0)).contains("cost"));
  const nlohmann::json json = nlohmann::json::parse(
      FormatReportJson(ParseText<v1::OptimizeResponse>(R"pb(
        cost {
          flops: 1024 bytes: 1152 nodes: 2 flops_unknown_nodes: 1
          node_costs { node: "mm" op: "MatMul" flops: 1024 bytes: 896 }
          node_costs { node: "relu" op: "Relu" bytes: 256 }
        }
      )pb"), 0));
  EXPECT_EQ(json["cost"]["flops"], 1024);
  EXPECT_EQ(json["cost"]["bytes"], 1152);
  EXPECT_EQ(json["cost"]["flops_unknown_nodes"], 1);
  EXPECT_EQ(json["cost"]["bytes_unknown_nodes"], 0);
  ASSERT_EQ(json["cost"]["node_costs"].size(), 2);
  EXPECT_EQ(json["cost"]["node_costs"][0]["flops"], 1024);
  EXPECT_TRUE(json["cost"]["node_costs"][1]["flops"].is_null());
  EXPECT_EQ(json["cost"]["node_costs"][1]["bytes"], 256);
}

TEST(FormatReportJsonTest, InvalidUtf8IsReplacedNotThrown) {
  v1::OptimizeResponse response;
  response.add_reports()->add_messages("bad \xff byte");
  const std::string text = FormatReportJson(response, std::nullopt);
  EXPECT_THAT(text, HasSubstr("bad "));
  EXPECT_THAT(text, Not(HasSubstr("\xff")));
}

TEST(FormatPassListTest, Table) {
  const std::string text = FormatPassList(ParseText<v1::ListPassesResponse>(R"pb(
    passes { name: "dead_code_elimination" description: "Removes unused nodes"
             min_opt_level: 1 }
    passes { name: "infer_shape" description: "Infers shapes" requires: "types"
             provides: "shapes" options { key: "strict" value: "fail on unknown" }
             options { key: "a" value: "" } }
  )pb"));
  EXPECT_EQ(text,
            "pass                   min level  requires  provides  options                    "
            "  description\n"
            "---------------------  ---------  --------  --------  ---------------------------"
            "  --------------------\n"
            "dead_code_elimination         O1  -         -         -                          "
            "  Removes unused nodes\n"
            "infer_shape                    -  types     shapes    a; strict (fail on unknown)"
            "  Infers shapes\n");
}

TEST(FormatSpecsTest, ArgsAndAttributes) {
  EXPECT_EQ(FormatArgSpec(ParseText<v1::ArgSpec>("name: 'X'")), "X");
  EXPECT_EQ(FormatArgSpec(ParseText<v1::ArgSpec>("name: 'B' arity: ARITY_OPTIONAL")), "B?");
  EXPECT_EQ(
      FormatArgSpec(ParseText<v1::ArgSpec>("name: 'in' arity: ARITY_VARIADIC min_count: 1")),
      "in[1..]");
  EXPECT_EQ(FormatAttributeSpec(ParseText<v1::AttributeSpec>(
                "name: 'axis' type: ATTR_INT default_value { i: -1 }")),
            "axis:int=-1");
  EXPECT_EQ(FormatAttributeSpec(
                ParseText<v1::AttributeSpec>("name: 'to' type: ATTR_INT required: true")),
            "to:int!");
  EXPECT_EQ(FormatAttributeSpec(ParseText<v1::AttributeSpec>("name: 'perm' type: ATTR_INTS")),
            "perm:ints");
  EXPECT_EQ(FormatAttributeValue(ParseText<v1::Attribute>("ints { values: [0, 2, 1] }")),
            "[0,2,1]");
  EXPECT_EQ(FormatAttributeValue(ParseText<v1::Attribute>("s: 'a\"b'")), "\"a\\\"b\"");
  EXPECT_EQ(FormatAttributeValue(ParseText<v1::Attribute>("dtype: DT_FLOAT16")), "float16");
  EXPECT_EQ(FormatAttributeValue(ParseText<v1::Attribute>(
                "shape { dims { symbol: 'batch' } dims { size: 3 } dims {} }")),
            "[batch,3,?]");
}

TEST(FormatOpListTest, Table) {
  const std::string text = FormatOpList(ParseText<v1::ListOpsResponse>(R"pb(
    ops { name: "Add" inputs { name: "A" } inputs { name: "B" } outputs { name: "C" }
          fusion_pattern: FUSION_BROADCAST }
    ops { domain: "com.example" name: "MyOp" inputs { name: "x" arity: ARITY_VARIADIC
          min_count: 1 } outputs { name: "y" }
          attributes { name: "alpha" type: ATTR_FLOAT required: true } }
  )pb"));
  EXPECT_EQ(text,
            "domain       op    inputs  outputs  attributes    fusion\n"
            "-----------  ----  ------  -------  ------------  ---------\n"
            "(default)    Add   A, B    C        -             broadcast\n"
            "com.example  MyOp  x[1..]  y        alpha:float!  opaque\n"
            "2 ops.  name? optional, name[N..] variadic (at least N), attr:type! required, "
            "attr:type=v default v\n");
}

TEST(FormatOpDescriptorTest, TextFormat) {
  const std::string text =
      FormatOpDescriptor(ParseText<v1::OpDescriptor>("name: 'Relu' shape_rule { builtin: 'same' }"));
  EXPECT_THAT(text, HasSubstr("name: \"Relu\""));
  EXPECT_THAT(text, HasSubstr("builtin: \"same\""));
}

}  // namespace
}  // namespace graphopt
