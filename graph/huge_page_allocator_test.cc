#include "graph/huge_page_allocator.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(HugePageAllocatorTest, LargeArraysStartOnAHugePageBoundarySmallOnesComeFromTheHeap) {
  std::vector<int64_t, HugePageAllocator<int64_t>> small(1000, 7);
  EXPECT_EQ(small[999], 7);
  std::vector<int64_t, HugePageAllocator<int64_t>> large(kHugePageAllocatorMinBytes / 8 + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large.data()) % kHugePageBytes, 0u);
}

TEST(HugePageAllocatorTest, GrowingAcrossTheThresholdKeepsTheElements) {
  std::vector<int64_t, HugePageAllocator<int64_t>> v;
  const int64_t n = static_cast<int64_t>(3 * kHugePageAllocatorMinBytes / 8);
  for (int64_t i = 0; i < n; ++i) v.push_back(i * 3);
  for (int64_t i = 0; i < n; i += 4099) ASSERT_EQ(v[i], i * 3);
  EXPECT_EQ(v.back(), (n - 1) * 3);
  v.resize(10);
  v.shrink_to_fit();  // back below the threshold: freed and reallocated through the heap
  EXPECT_EQ(v[9], 27);
}

}  // namespace
}  // namespace graphopt
