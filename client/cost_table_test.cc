#include "client/cost_table.h"

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(CostTableTest, Units) {
  EXPECT_EQ(FormatFlopCount(0), "0 FLOP");
  EXPECT_EQ(FormatFlopCount(999), "999 FLOP");
  EXPECT_EQ(FormatFlopCount(4'100'000'000), "4.1 GFLOP");
  EXPECT_EQ(FormatByteCount(900), "900 B");
  EXPECT_EQ(FormatByteCount(98 << 20), "98.0 MiB");
  EXPECT_EQ(FormatByteCount(1536), "1.5 KiB");
}

v1::CostReport Report(const char* text) {
  v1::CostReport cost;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &cost));
  return cost;
}

TEST(CostTableTest, SummaryLine) {
  EXPECT_EQ(FormatCostSummary(Report("flops: 4100000000 bytes: 102760448 nodes: 40")),
            "cost: 4.1 GFLOP, 98.0 MiB moved (40 nodes)\n");
  EXPECT_EQ(FormatCostSummary(Report("flops: 1024 bytes: 896 nodes: 40 flops_unknown_nodes: 12 "
                                     "bytes_unknown_nodes: 3")),
            "cost: 1.0 KFLOP, 896 B moved (40 nodes; flops unknown for 12, bytes for 3)\n");
  EXPECT_EQ(FormatCostSummary(Report("nodes: 6 flops_unknown_nodes: 6 bytes_unknown_nodes: 6")),
            "cost: ? FLOP, ? B moved (6 nodes; flops unknown for 6, bytes for 6)\n");
}

TEST(CostTableTest, TopNodesByFlopsThenBytesThenOrder) {
  v1::CostReport cost = Report(R"pb(
    node_costs { node: "relu" op: "Relu" bytes: 256 }
    node_costs { node: "mm" op: "MatMul" flops: 1024 bytes: 896 }
    node_costs { node: "conv" op: "Conv" flops: 62208 bytes: 7872 }
    node_costs { node: "mm2" op: "MatMul" flops: 1024 bytes: 896 }
    node_costs { node: "odd" op: "my.ops::Odd" }
  )pb");
  EXPECT_EQ(FormatTopNodeCosts(cost, 4),
            "node  op           flops    bytes\n"
            "----  ------  ----------  -------\n"
            "conv  Conv    62.2 KFLOP  7.7 KiB\n"
            "mm    MatMul   1.0 KFLOP    896 B\n"
            "mm2   MatMul   1.0 KFLOP    896 B\n"
            "relu  Relu             ?    256 B\n");
  EXPECT_EQ(FormatTopNodeCosts(cost, 0), "");
  EXPECT_EQ(FormatTopNodeCosts(v1::CostReport(), 5), "");
}

}  // namespace
}  // namespace graphopt
