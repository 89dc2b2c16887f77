#include "util/malloc_tuning.h"

#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(MallocTuningTest, GlibcAcceptsTheSettingAndAllocationStillWorks) {
  ASSERT_TRUE(TuneMallocForGraphs());
  // Many small blocks freed, then a large free (what triggers a consolidation with fastbins), then
  // the small sizes again: contents intact throughout.
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 100000; ++i) {
    blocks.emplace_back(new char[16 + i % 96]);
    std::memset(blocks.back().get(), i & 0x7f, 16);
  }
  for (int i = 0; i < 100000; i += 2) blocks[i].reset();
  auto large = std::make_unique<char[]>(1 << 20);
  large.reset();
  for (int i = 0; i < 100000; i += 2) blocks[i].reset(new char[24]);
  for (int i = 1; i < 100000; i += 2) ASSERT_EQ(blocks[i][15], static_cast<char>(i & 0x7f)) << i;
}

}  // namespace
}  // namespace graphopt
