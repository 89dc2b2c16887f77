#include "util/huge_pages.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(HugePagesTest, MappingsStartOnAHugePageBoundaryAndAreZeroed) {
  for (size_t bytes : {size_t{1}, size_t{4097}, kHugePageBytes, 3 * kHugePageBytes + 5}) {
    char* p = static_cast<char*>(MapHugePages(bytes));
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u) << bytes;
    EXPECT_EQ(p[0], 0);
    EXPECT_EQ(p[bytes - 1], 0);
    std::memset(p, 0x5a, bytes);  // every byte asked for is writable
    EXPECT_EQ(p[bytes - 1], 0x5a);
    UnmapHugePages(p, bytes);
  }
}

TEST(HugePagesTest, ImpossibleSizesGiveNull) {
  EXPECT_EQ(MapHugePages(~size_t{0} - 10), nullptr);
  EXPECT_EQ(MapHugePages(size_t{1} << 62), nullptr);  // more than the address space
  UnmapHugePages(nullptr, 10);                         // a no-op
}

TEST(HugePagesTest, GivenBackMappingsAreReusedSmallestFirstAndBounded) {
  ReleaseKeptHugePages();
  ASSERT_EQ(KeptHugePageBytes(), 0u);
  char* a = static_cast<char*>(TakeHugePages(3 * kHugePageBytes));
  char* b = static_cast<char*>(TakeHugePages(kHugePageBytes + 1));  // two huge pages
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kHugePageBytes, 0u);
  std::memset(a, 1, 3 * kHugePageBytes);
  std::memset(b, 2, 2 * kHugePageBytes);
  GiveBackHugePages(a, 3 * kHugePageBytes);
  GiveBackHugePages(b, kHugePageBytes + 1);
  EXPECT_EQ(KeptHugePageBytes(), 5 * kHugePageBytes);
  // The smallest kept mapping that fits: b's for one huge page (its second page unmapped).
  char* c = static_cast<char*>(TakeHugePages(kHugePageBytes));
  EXPECT_EQ(c, b);
  EXPECT_EQ(KeptHugePageBytes(), 3 * kHugePageBytes);
  std::memset(c, 3, kHugePageBytes);  // writable, whatever it held
  // Nothing kept is large enough: a fresh mapping, zeroed.
  char* d = static_cast<char*>(TakeHugePages(4 * kHugePageBytes));
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d, a);
  EXPECT_EQ(d[4 * kHugePageBytes - 1], 0);
  GiveBackHugePages(c, kHugePageBytes);
  GiveBackHugePages(d, 4 * kHugePageBytes);
  EXPECT_EQ(KeptHugePageBytes(), 8 * kHugePageBytes);
  ReleaseKeptHugePages();
  EXPECT_EQ(KeptHugePageBytes(), 0u);
}

TEST(HugePagesTest, KeptBytesStayWithinTheBound) {
  ReleaseKeptHugePages();
  // A mapping larger than the bound is unmapped at once.
  void* huge = TakeHugePages(kMaxKeptHugePageBytes + kHugePageBytes);
  ASSERT_NE(huge, nullptr);
  GiveBackHugePages(huge, kMaxKeptHugePageBytes + kHugePageBytes);
  EXPECT_EQ(KeptHugePageBytes(), 0u);
  // Mappings given back past the bound push the oldest out (address space only: untouched).
  const size_t quarter = kMaxKeptHugePageBytes / 4;
  std::vector<void*> taken;
  for (int i = 0; i < 6; ++i) taken.push_back(TakeHugePages(quarter));
  for (void* p : taken) GiveBackHugePages(p, quarter);
  EXPECT_EQ(KeptHugePageBytes(), kMaxKeptHugePageBytes);
  ReleaseKeptHugePages();
}

}  // namespace
}  // namespace graphopt
