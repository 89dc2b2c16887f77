#include "passes/offset_assignment.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <utility>

namespace graphopt {
namespace {

// More overlapping placed buffers than this: the buffer goes on top (bounds the work per buffer).
constexpr size_t kMaxNeighbours = 512;

int32_t NumSteps(absl::Span<const LiveBuffer> buffers) {
  int32_t steps = 0;
  for (const LiveBuffer& b : buffers) steps = std::max(steps, b.last_step + 1);
  return steps;
}

}  // namespace

int64_t LivenessLowerBound(absl::Span<const LiveBuffer> buffers) {
  std::vector<int64_t> delta(NumSteps(buffers) + 1, 0);
  for (const LiveBuffer& b : buffers) {
    delta[b.first_step] += b.size;
    delta[b.last_step + 1] -= b.size;
  }
  int64_t live = 0, peak = 0;
  for (int64_t d : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return peak;
}

OffsetAssignment GreedyBySize(absl::Span<const LiveBuffer> buffers) {
  OffsetAssignment result;
  result.heuristic = "greedy-by-size";
  const int32_t n = static_cast<int32_t>(buffers.size());
  result.offsets.assign(n, 0);
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const LiveBuffer& x = buffers[a];
    const LiveBuffer& y = buffers[b];
    if (x.size != y.size) return x.size > y.size;
    if (x.first_step != y.first_step) return x.first_step < y.first_step;
    return a < b;
  });
  // Segment tree over steps: each placed buffer sits in the O(log n) nodes that cover its range,
  // so the ones live at step t are those in the nodes on t's leaf-to-root path.
  int32_t leaves = 1;
  while (leaves < NumSteps(buffers)) leaves *= 2;
  std::vector<std::vector<int32_t>> cover(2 * static_cast<size_t>(leaves));
  std::map<int32_t, std::vector<int32_t>> by_first_step;
  std::vector<int32_t> near;
  int64_t top = 0;
  for (int32_t id : order) {
    const LiveBuffer& b = buffers[id];
    if (b.size <= 0) continue;
    near.clear();
    bool too_many = false;
    for (int32_t node = b.first_step + leaves; node >= 1 && !too_many; node /= 2) {
      near.insert(near.end(), cover[node].begin(), cover[node].end());
      too_many = near.size() > kMaxNeighbours;
    }
    for (auto it = by_first_step.upper_bound(b.first_step);
         !too_many && it != by_first_step.end() && it->first <= b.last_step; ++it) {
      near.insert(near.end(), it->second.begin(), it->second.end());
      too_many = near.size() > kMaxNeighbours;
    }
    int64_t offset = top;
    if (!too_many) {
      std::sort(near.begin(), near.end(), [&](int32_t x, int32_t y) {
        return result.offsets[x] != result.offsets[y] ? result.offsets[x] < result.offsets[y]
                                                      : x < y;
      });
      int64_t end = 0;
      int64_t best_gap = std::numeric_limits<int64_t>::max();
      offset = -1;
      for (int32_t other : near) {
        const int64_t gap = result.offsets[other] - end;
        if (gap >= b.size && gap < best_gap) {
          best_gap = gap;
          offset = end;
        }
        end = std::max(end, result.offsets[other] + buffers[other].size);
      }
      if (offset < 0) offset = end;
    }
    result.offsets[id] = offset;
    top = std::max(top, offset + b.size);
    for (int32_t l = b.first_step + leaves, r = b.last_step + leaves + 1; l < r; l /= 2, r /= 2) {
      if (l & 1) cover[l++].push_back(id);
      if (r & 1) cover[--r].push_back(id);
    }
    by_first_step[b.first_step].push_back(id);
  }
  result.arena_bytes = top;
  return result;
}

OffsetAssignment SweepBestFit(absl::Span<const LiveBuffer> buffers) {
  OffsetAssignment result;
  result.heuristic = "sweep-best-fit";
  const int32_t n = static_cast<int32_t>(buffers.size());
  result.offsets.assign(n, 0);
  std::vector<int32_t> order;
  order.reserve(n);
  for (int32_t i = 0; i < n; ++i) {
    if (buffers[i].size > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const LiveBuffer& x = buffers[a];
    const LiveBuffer& y = buffers[b];
    if (x.first_step != y.first_step) return x.first_step < y.first_step;
    if (x.size != y.size) return x.size > y.size;
    return a < b;
  });
  std::map<int64_t, int64_t> free_by_offset;         // offset -> size
  std::set<std::pair<int64_t, int64_t>> free_by_size;  // (size, offset)
  int64_t top = 0, peak = 0;
  auto remove_free = [&](std::map<int64_t, int64_t>::iterator it) {
    free_by_size.erase({it->second, it->first});
    return free_by_offset.erase(it);
  };
  auto release = [&](int64_t offset, int64_t size) {
    auto next = free_by_offset.lower_bound(offset);
    if (next != free_by_offset.end() && next->first == offset + size) {
      size += next->second;
      next = remove_free(next);
    }
    if (next != free_by_offset.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        remove_free(prev);
      }
    }
    if (offset + size == top) {
      top = offset;  // the free range at the top gives the room back
      return;
    }
    free_by_offset.emplace(offset, size);
    free_by_size.emplace(size, offset);
  };
  using Retire = std::pair<int32_t, int32_t>;  // (last step, buffer)
  std::priority_queue<Retire, std::vector<Retire>, std::greater<Retire>> retire;
  for (int32_t id : order) {
    const LiveBuffer& b = buffers[id];
    while (!retire.empty() && retire.top().first < b.first_step) {
      release(result.offsets[retire.top().second], buffers[retire.top().second].size);
      retire.pop();
    }
    auto fit = free_by_size.lower_bound({b.size, std::numeric_limits<int64_t>::min()});
    int64_t offset;
    if (fit != free_by_size.end()) {
      const auto [size, at] = *fit;
      free_by_size.erase(fit);
      free_by_offset.erase(at);
      offset = at;
      if (size > b.size) {
        free_by_offset.emplace(at + b.size, size - b.size);
        free_by_size.emplace(size - b.size, at + b.size);
      }
    } else {
      offset = top;
      top += b.size;
    }
    result.offsets[id] = offset;
    peak = std::max(peak, top);
    retire.emplace(b.last_step, id);
  }
  result.arena_bytes = peak;
  return result;
}

OffsetAssignment AssignOffsets(absl::Span<const LiveBuffer> buffers) {
  OffsetAssignment greedy = GreedyBySize(buffers);
  OffsetAssignment sweep = SweepBestFit(buffers);
  return sweep.arena_bytes < greedy.arena_bytes ? std::move(sweep) : std::move(greedy);
}

}  // namespace graphopt
