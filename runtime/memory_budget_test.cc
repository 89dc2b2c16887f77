#include "runtime/memory_budget.h"

#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {
namespace {

using ::testing::HasSubstr;

std::string Named() { return "node 'big' (Tile) output 0"; }

TEST(MemoryBudgetTest, ChargesReleasesAndKeepsThePeak) {
  MemoryBudget budget(1000);
  ASSERT_TRUE(budget.Charge(600, "a").ok());
  ASSERT_TRUE(budget.Charge(400, "b").ok());
  EXPECT_EQ(budget.in_use(), 1000);
  budget.Release(700);
  EXPECT_EQ(budget.in_use(), 300);
  EXPECT_EQ(budget.peak(), 1000);
  EXPECT_EQ(budget.limit(), 1000);
}

TEST(MemoryBudgetTest, RefusalNamesWhatBytesLimitAndUseAndReservesNothing) {
  MemoryBudget budget(1000);
  ASSERT_TRUE(budget.Charge(300, "a").ok());
  absl::Status s = budget.Charge(701, "node 'big' (Tile) output 0");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("node 'big' (Tile) output 0"));
  EXPECT_THAT(s.message(), HasSubstr("701 bytes"));
  EXPECT_THAT(s.message(), HasSubstr("1000 bytes"));
  EXPECT_THAT(s.message(), HasSubstr("300 in use"));
  EXPECT_EQ(budget.in_use(), 300);
  EXPECT_FALSE(budget.TryCharge(INT64_MAX));  // no overflow
  EXPECT_EQ(budget.in_use(), 300);
}

TEST(MemoryBudgetTest, ConcurrentChargesNeverExceedTheLimit) {
  MemoryBudget budget(10000);
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        if (budget.TryCharge(3)) {
          granted.fetch_add(1);
          budget.Release(3);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(budget.in_use(), 0);
  EXPECT_LE(budget.peak(), 10000);
  EXPECT_EQ(granted.load(), 40000);
}

TEST(MemoryReservationTest, ReleasesWhenDestroyedOrResetAndMoves) {
  auto budget = std::make_shared<MemoryBudget>(100);
  {
    MemoryReservation r(budget);
    ASSERT_TRUE(r.Add(40, "x").ok());
    ASSERT_TRUE(r.Add(40, "x").ok());
    EXPECT_FALSE(r.Add(40, "x").ok());
    EXPECT_EQ(r.bytes(), 80);
    MemoryReservation moved = std::move(r);
    EXPECT_EQ(budget->in_use(), 80);
    moved.Reset();
    EXPECT_EQ(budget->in_use(), 0);
    ASSERT_TRUE(moved.Add(10, "x").ok());
  }
  EXPECT_EQ(budget->in_use(), 0);
  MemoryReservation unlimited;
  EXPECT_TRUE(unlimited.Add(INT64_MAX, "x").ok());
}

TEST(BufferBudgetTest, TensorsAreChargedBeforeAllocationAndReleasedWhenTheLastViewGoes) {
  auto budget = std::make_shared<MemoryBudget>(1 << 20);
  absl::StatusOr<Tensor> t = Tensor::Allocate(v1::DT_FLOAT32, {1000}, budget, Named);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(budget->in_use(), 4032 + kBufferOverheadBytes);  // rounded to 64 bytes
  absl::StatusOr<Tensor> view = t->Reshaped({10, 100});
  ASSERT_TRUE(view.ok());
  *t = Tensor();
  EXPECT_GT(budget->in_use(), 0);  // the view keeps the buffer
  *view = Tensor();
  EXPECT_EQ(budget->in_use(), 0);

  absl::StatusOr<Tensor> big = Tensor::Allocate(v1::DT_FLOAT32, {1 << 20}, budget, Named);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("node 'big' (Tile) output 0"));
  EXPECT_EQ(budget->in_use(), 0);
}

TEST(BufferBudgetTest, StringsAreChargedByEstimateThenSettled) {
  auto budget = std::make_shared<MemoryBudget>(1 << 20);
  // 100 strings, estimated 40 characters each.
  absl::StatusOr<Tensor> t = Tensor::Allocate(v1::DT_STRING, {100}, budget, Named, 40);
  ASSERT_TRUE(t.ok()) << t.status();
  const int64_t objects = 100 * static_cast<int64_t>(sizeof(std::string)) + kBufferOverheadBytes;
  EXPECT_EQ(budget->in_use(), objects + 100 * 41);
  // They hold less (short strings live inline): the settled charge drops.
  for (int i = 0; i < 100; ++i) t->strings()[i] = "x";
  ASSERT_TRUE(t->SettleStrings(Named).ok());
  EXPECT_EQ(budget->in_use(), objects);
  EXPECT_EQ(t->buffer()->MaxStringLength(), 1);
  // More than estimated: the difference is charged, or refused when it does not fit.
  for (int i = 0; i < 100; ++i) t->strings()[i] = std::string(1000, 'y');
  ASSERT_TRUE(t->SettleStrings(Named).ok());
  EXPECT_GE(budget->in_use(), objects + 100 * 1001);
  for (int i = 0; i < 100; ++i) t->strings()[i] = std::string(20000, 'z');
  absl::Status s = t->SettleStrings(Named);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("node 'big'"));
  *t = Tensor();
  EXPECT_EQ(budget->in_use(), 0);
}

TEST(BufferBudgetTest, CloneChargesStringsExactly) {
  auto budget = std::make_shared<MemoryBudget>(1 << 20);
  absl::StatusOr<Tensor> t = Tensor::Allocate(v1::DT_STRING, {3});
  ASSERT_TRUE(t.ok());
  t->strings()[0] = std::string(100, 'a');
  t->strings()[1] = "short";
  t->strings()[2] = std::string(50, 'b');
  absl::StatusOr<Tensor> copy = t->Clone(budget, Named);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(budget->in_use(),
            3 * static_cast<int64_t>(sizeof(std::string)) + 101 + 51 + kBufferOverheadBytes);
  EXPECT_EQ(copy->strings()[0], t->strings()[0]);
  auto small = std::make_shared<MemoryBudget>(200);
  EXPECT_EQ(t->Clone(small, Named).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(small->in_use(), 0);
}

TEST(BufferBudgetTest, HugeStringCountsAreStatusesNotExceptions) {
  // 2^40 strings: refused as a size, not thrown as std::length_error or std::bad_alloc.
  absl::StatusOr<Tensor> t = Tensor::Allocate(v1::DT_STRING, {int64_t{1} << 40});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(t.status().message().empty());
  auto budget = std::make_shared<MemoryBudget>(256 << 20);
  t = Tensor::Allocate(v1::DT_STRING, {int64_t{1} << 30}, budget, Named, 64);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(t.status().message(), HasSubstr("node 'big'"));
  EXPECT_EQ(budget->in_use(), 0);
}

TEST(BufferBudgetTest, FromProtoChecksTheCountBeforeAllocating) {
  v1::Tensor proto;
  proto.set_dtype(v1::DT_STRING);
  proto.add_dims(int64_t{1} << 40);
  proto.add_string_data("only one");
  absl::StatusOr<Tensor> t = Tensor::FromProto(proto, "constant 'c'");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("1 strings for shape"));
  proto.set_dtype(v1::DT_FLOAT32);
  proto.clear_string_data();
  proto.set_raw_data("abcd");
  t = Tensor::FromProto(proto, "constant 'c'");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("4 bytes of data"));
}

}  // namespace
}  // namespace graphopt::runtime
