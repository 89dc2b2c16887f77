#include "util/huge_pages.h"

#include <cstdint>
#include <cstring>

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

}  // namespace
}  // namespace graphopt
