#include "passes/offset_assignment.h"

#include <algorithm>
#include <random>
#include <vector>

#include "graph/liveness.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

// Brute force: every pair of buffers live at a common step must not share a byte.
void ExpectNoOverlap(const std::vector<LiveBuffer>& buffers, const OffsetAssignment& a) {
  ASSERT_EQ(a.offsets.size(), buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_GE(a.offsets[i], 0);
    if (buffers[i].size > 0) {
      EXPECT_LE(a.offsets[i] + buffers[i].size, a.arena_bytes);
    }
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const LiveBuffer& x = buffers[i];
      const LiveBuffer& y = buffers[j];
      if (x.size == 0 || y.size == 0) continue;
      const bool same_time = x.first_step <= y.last_step && y.first_step <= x.last_step;
      const bool same_bytes = a.offsets[i] < a.offsets[j] + y.size &&
                              a.offsets[j] < a.offsets[i] + x.size;
      EXPECT_FALSE(same_time && same_bytes)
          << a.heuristic << ": buffers " << i << " and " << j << " overlap";
    }
  }
}

std::vector<LiveBuffer> RandomBuffers(std::mt19937& rng, int n, int steps) {
  std::vector<LiveBuffer> buffers;
  for (int i = 0; i < n; ++i) {
    const int first = static_cast<int>(rng() % steps);
    // Mostly short lives, some long ones (skip connections).
    const int span = rng() % 5 == 0 ? static_cast<int>(rng() % steps) : static_cast<int>(rng() % 4);
    const int64_t size = 64 * static_cast<int64_t>(rng() % 7 == 0 ? 0 : 1 + rng() % 64);
    buffers.push_back({first, std::min(steps - 1, first + span), size});
  }
  return buffers;
}

TEST(OffsetAssignmentTest, RandomSetsNeverOverlapAndRespectTheBound) {
  std::mt19937 rng(20240611);
  for (int round = 0; round < 300; ++round) {
    const std::vector<LiveBuffer> buffers =
        RandomBuffers(rng, 1 + static_cast<int>(rng() % 60), 1 + static_cast<int>(rng() % 40));
    const int64_t bound = LivenessLowerBound(buffers);
    for (const OffsetAssignment& a :
         {GreedyBySize(buffers), SweepBestFit(buffers), AssignOffsets(buffers)}) {
      SCOPED_TRACE(testing::Message() << "round " << round << ", " << a.heuristic);
      ExpectNoOverlap(buffers, a);
      EXPECT_GE(a.arena_bytes, bound);
      for (int64_t offset : a.offsets) EXPECT_EQ(offset % 64, 0);
    }
    // The same check as the executor's, which must agree with the brute force.
    const OffsetAssignment best = AssignOffsets(buffers);
    std::vector<Placement> placements;
    for (size_t i = 0; i < buffers.size(); ++i) {
      placements.push_back({buffers[i].first_step, buffers[i].last_step, best.offsets[i],
                            buffers[i].size, static_cast<int32_t>(i)});
    }
    EXPECT_TRUE(CheckPlacements(placements).ok());
    EXPECT_LE(best.arena_bytes, std::min(GreedyBySize(buffers).arena_bytes,
                                         SweepBestFit(buffers).arena_bytes));
  }
}

TEST(OffsetAssignmentTest, ChainReusesOneRange) {
  // a -> b -> c -> d, each read only by the next: two ranges suffice.
  std::vector<LiveBuffer> chain = {{0, 1, 128}, {1, 2, 128}, {2, 3, 128}, {3, 3, 128}};
  EXPECT_EQ(LivenessLowerBound(chain), 256);
  EXPECT_EQ(AssignOffsets(chain).arena_bytes, 256);
}

TEST(OffsetAssignmentTest, GreedyFillsAGapLeftBetweenLongLivedBuffers) {
  // Two long-lived buffers around a hole that a later, smaller one fits into.
  std::vector<LiveBuffer> buffers = {{0, 9, 256}, {0, 2, 128}, {0, 9, 256}, {3, 9, 128}};
  const OffsetAssignment a = GreedyBySize(buffers);
  ExpectNoOverlap(buffers, a);
  EXPECT_EQ(a.arena_bytes, 640);
  EXPECT_EQ(LivenessLowerBound(buffers), 640);
}

TEST(OffsetAssignmentTest, ManyOverlappingBuffersStayCorrect) {
  // More buffers live at once than the neighbour limit: they are stacked, never overlapped.
  std::vector<LiveBuffer> buffers;
  for (int i = 0; i < 1500; ++i) buffers.push_back({0, 1 + i % 3, 64});
  const OffsetAssignment a = GreedyBySize(buffers);
  std::vector<Placement> placements;
  for (size_t i = 0; i < buffers.size(); ++i) {
    placements.push_back({buffers[i].first_step, buffers[i].last_step, a.offsets[i], 64,
                          static_cast<int32_t>(i)});
  }
  EXPECT_TRUE(CheckPlacements(placements).ok());
  EXPECT_EQ(a.arena_bytes, 1500 * 64);
}

TEST(OffsetAssignmentTest, Deterministic) {
  std::mt19937 rng(7);
  const std::vector<LiveBuffer> buffers = RandomBuffers(rng, 200, 80);
  EXPECT_EQ(AssignOffsets(buffers).offsets, AssignOffsets(buffers).offsets);
}

}  // namespace
}  // namespace graphopt
