#include "graph/types.h"

#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(DimTest, KindsAndText) {
  EXPECT_TRUE(Dim().is_unknown());
  EXPECT_EQ(Dim().ToString(), "?");
  EXPECT_EQ(Dim().symbol(), "");
  const Dim known = Dim::Known(7);
  EXPECT_TRUE(known.is_known());
  EXPECT_FALSE(known.is_symbol());
  EXPECT_EQ(known.size(), 7);
  EXPECT_EQ(known.ToString(), "7");
  EXPECT_EQ(known.symbol(), "");
  const Dim batch = Dim::Symbol("batch");
  EXPECT_TRUE(batch.is_symbol());
  EXPECT_FALSE(batch.is_known());
  EXPECT_FALSE(batch.is_unknown());
  EXPECT_EQ(batch.symbol(), "batch");
  EXPECT_EQ(batch.ToString(), "batch");
  EXPECT_EQ(sizeof(Dim), 16u);
}

TEST(DimTest, EqualityComparesSymbolTextNotIdentity) {
  EXPECT_EQ(Dim::Symbol("n"), Dim::Symbol("n"));  // two separate texts
  EXPECT_NE(Dim::Symbol("n"), Dim::Symbol("m"));
  EXPECT_NE(Dim::Symbol("n"), Dim::Known(0));
  EXPECT_NE(Dim::Known(0), Dim());
  EXPECT_EQ(Dim::Known(3), Dim::Known(3));
  EXPECT_NE(Dim::Known(3), Dim::Known(4));
  EXPECT_EQ(Dim(), Dim());
  EXPECT_TRUE(Dim::SameSize(Dim::Symbol("n"), Dim::Symbol("n")));
  EXPECT_FALSE(Dim::SameSize(Dim(), Dim()));
}

TEST(DimTest, CopiesShareTheSymbolAndOutliveTheOriginal) {
  std::vector<Dim> copies;
  {
    Dim original = Dim::Symbol(std::string(100, 's'));  // past the small-string buffer
    const std::string* text = &original.symbol();
    for (int i = 0; i < 5; ++i) copies.push_back(original);
    EXPECT_EQ(&copies[3].symbol(), text);  // shared, not copied
    Dim assigned = Dim::Known(1);
    assigned = original;
    EXPECT_EQ(assigned, original);
    assigned = Dim::Known(2);  // releases its reference
    EXPECT_TRUE(assigned.is_known());
  }
  for (const Dim& d : copies) EXPECT_EQ(d.symbol(), std::string(100, 's'));
}

TEST(DimTest, MoveLeavesUnknownBehind) {
  Dim a = Dim::Symbol("batch");
  Dim b = std::move(a);
  EXPECT_EQ(b.symbol(), "batch");
  EXPECT_TRUE(a.is_unknown());  // NOLINT(bugprone-use-after-move): documented state
  Dim c = Dim::Known(4);
  c = std::move(b);
  EXPECT_EQ(c.symbol(), "batch");
  c = c;  // self-assignment keeps the value
  EXPECT_EQ(c.symbol(), "batch");
}

TEST(DimTest, CopiedAndDroppedAcrossThreads) {
  // Reference counts are atomic: shapes of one graph are copied by parallel requests' passes.
  const Dim shared = Dim::Symbol("seq");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&shared] {
      for (int i = 0; i < 100000; ++i) {
        Dim copy = shared;
        if (copy.symbol().size() != 3) std::abort();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(shared.symbol(), "seq");
}

TEST(TensorTypeTest, ShapesWithSymbolsCompareByValue) {
  TensorType a{v1::DT_FLOAT32, Dims{Dim::Symbol("batch"), Dim::Known(3)}};
  TensorType b = a;
  EXPECT_EQ(a, b);
  b.shape->front() = Dim::Symbol("other");
  EXPECT_NE(a, b);
  EXPECT_EQ(TensorTypeToString(a), "float32[batch,3]");
}

}  // namespace
}  // namespace graphopt
