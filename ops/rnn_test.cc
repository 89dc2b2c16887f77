// Shape and type rules of rnn.cc.

#include "ops/builtin_ops.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, RecurrentOps) {
  In("x", "float32[seq,batch,8]");
  In("xb", "float32[batch,seq,8]");
  In("w", "float32[1,64,8]");
  In("r", "float32[1,64,16]");
  In("w2", "float32[2,48,8]");
  Node("LSTM", {"x", "w", "r"}, {"y", "yh", "yc"}, {{"hidden_size", AInt(16)}});
  Node("LSTM", {"x", "w", "r"}, {"", "h_only"});  // hidden_size from R
  Node("GRU", {"x", "w2", "w2"}, {"gy", "gh"},
       {{"hidden_size", AInt(16)}, {"direction", AString("bidirectional")}});
  Node("RNN", {"xb", "w", "r"}, {"ry", "rh"}, {{"hidden_size", AInt(4)}, {"layout", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[seq,1,batch,16]");
  EXPECT_EQ(T("yh"), "float32[1,batch,16]");
  EXPECT_EQ(T("yc"), "float32[1,batch,16]");
  EXPECT_EQ(T("h_only"), "float32[1,batch,16]");
  EXPECT_EQ(T("gy"), "float32[seq,2,batch,16]");
  EXPECT_EQ(T("ry"), "float32[batch,seq,1,4]");
  EXPECT_EQ(T("rh"), "float32[batch,1,4]");
}

TEST_F(BuiltinOpsTest, RecurrentBadDirection) {
  In("x", "float32[2,1,8]");
  In("w", "float32[1,64,8]");
  Node("LSTM", {"x", "w", "w"}, {"y"}, {{"direction", AString("sideways")}});
  ExpectError({"n0_LSTM", "attribute 'direction' must be forward, reverse or bidirectional"});
}

}  // namespace
}  // namespace graphopt
