#ifndef GRAPHOPT_PASSES_OFFSET_ASSIGNMENT_H_
#define GRAPHOPT_PASSES_OFFSET_ASSIGNMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace graphopt {

// Offset assignment for the memory planner: given buffers with inclusive live step ranges and
// sizes, choose byte offsets so that buffers live at the same step never overlap, in as few
// bytes as possible (dynamic storage allocation; NP-hard in general, so heuristics).

struct LiveBuffer {
  int32_t first_step = 0;
  int32_t last_step = 0;  // >= first_step
  int64_t size = 0;       // bytes; 0 takes no room
};

struct OffsetAssignment {
  std::vector<int64_t> offsets;  // per buffer
  int64_t arena_bytes = 0;       // max(offset + size)
  std::string heuristic;         // which one produced it
};

// The largest sum of sizes of buffers live at one step: no assignment needs fewer bytes. O(n).
int64_t LivenessLowerBound(absl::Span<const LiveBuffer> buffers);

// TFLite's "greedy by size": buffers from the largest down, each into the smallest gap that
// fits between the already placed buffers whose steps overlap its own, else on top of them.
// The overlapping placed buffers are found with a segment tree over steps (those live at the
// buffer's first step) and an ordered map of first steps (those starting inside its range); a
// buffer that overlaps more than a fixed number of placed ones goes on top of everything, which
// keeps the whole O(n log n).
OffsetAssignment GreedyBySize(absl::Span<const LiveBuffer> buffers);

// An allocator simulated over the steps: buffers are freed after their last step (neighbouring
// free ranges merge) and allocated at their first step, largest first, into the smallest free
// range that fits, else at the top. O(n log n).
OffsetAssignment SweepBestFit(absl::Span<const LiveBuffer> buffers);

// The better of the two (fewer bytes; greedy by size on a tie). Sizes that are multiples of an
// alignment give offsets that are multiples of it.
OffsetAssignment AssignOffsets(absl::Span<const LiveBuffer> buffers);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_OFFSET_ASSIGNMENT_H_
