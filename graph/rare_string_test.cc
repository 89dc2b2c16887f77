#include "graph/rare_string.h"

#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(RareStringTest, EmptyByDefaultAndAfterAssigningEmpty) {
  RareString s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.str(), "");
  s = std::string("gpu:0");
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.str(), "gpu:0");
  s = std::string();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(sizeof(RareString), sizeof(void*));
}

TEST(RareStringTest, CopiesAreDeepAndMovesLeaveEmpty) {
  RareString a(std::string("doc"));
  RareString b = a;
  b = std::string("other");
  EXPECT_EQ(a.str(), "doc");
  EXPECT_EQ(b.str(), "other");
  RareString c = std::move(a);
  EXPECT_EQ(c.str(), "doc");
  b = c;
  EXPECT_EQ(b.str(), "doc");
  EXPECT_TRUE(b == "doc");
  EXPECT_TRUE(b != "dog");
  // Reads as a const std::string&.
  const std::string& view = c;
  EXPECT_EQ(view, "doc");
}

}  // namespace
}  // namespace graphopt
