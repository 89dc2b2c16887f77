#include "graph/shared_string.h"

#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(SharedStringTest, EmptyByDefaultAndAfterAssigningEmpty) {
  SharedString s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.str(), "");
  s = std::string("gpu:0");
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.str(), "gpu:0");
  EXPECT_EQ(s.size(), 5u);
  s = std::string();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(sizeof(SharedString), sizeof(void*));
}

TEST(SharedStringTest, CopiesShareTheTextAndAssigningReplacesIt) {
  SharedString a(std::string("doc"));
  SharedString b = a;
  EXPECT_TRUE(b.SharesTextWith(a));
  b = std::string("other");  // replaces b's text; a's stays
  EXPECT_FALSE(b.SharesTextWith(a));
  EXPECT_EQ(a.str(), "doc");
  EXPECT_EQ(b.str(), "other");
  SharedString c = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT: moved-from is empty by contract
  EXPECT_EQ(c.str(), "doc");
  b = c;
  EXPECT_EQ(b.str(), "doc");
  EXPECT_TRUE(b == "doc");
  EXPECT_TRUE(b != "dog");
  EXPECT_TRUE(b == c);
  // Equal text without sharing still compares equal.
  EXPECT_TRUE(SharedString("doc") == c);
  EXPECT_FALSE(SharedString("doc").SharesTextWith(c));
  // Reads as a const std::string& and as a string_view.
  const std::string& view = c;
  EXPECT_EQ(view, "doc");
  absl::string_view sv = c;
  EXPECT_EQ(sv, "doc");
}

TEST(SharedStringTest, SelfAssignmentKeepsTheText) {
  SharedString a("x");
  const SharedString& alias = a;
  a = alias;
  EXPECT_EQ(a.str(), "x");
  a = std::move(a);  // NOLINT: self-move must not free the text
  EXPECT_EQ(a.str(), "x");
}

// Copies made and dropped on several threads at once free the text exactly once (run under
// the sanitizers' builds this catches a non-atomic count).
TEST(SharedStringTest, CopiesOnManyThreads) {
  const SharedString original(std::string(100, 'p'));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&original] {
      for (int i = 0; i < 10000; ++i) {
        SharedString copy = original;
        if (copy.size() != 100) std::abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(original.str(), std::string(100, 'p'));
}

}  // namespace
}  // namespace graphopt
