#ifndef GRAPHOPT_RUNTIME_MEMORY_BUDGET_H_
#define GRAPHOPT_RUNTIME_MEMORY_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace graphopt::runtime {

// Live bytes of one execution (all its tensors, arenas and subgraph executions), bounded.
// Allocations are charged before they are made and released when the memory is freed (a
// Buffer remembers the budget and its charge and releases it in its destructor), so the
// accounting is of live bytes, not cumulative: a Loop that allocates and frees each iteration
// never exhausts it, and output tensors that outlive the run stay charged until they go.
// Thread-safe (kernels of one run may allocate from several threads; If/Loop/Scan bodies
// charge the budget of the run around them).
class MemoryBudget {
 public:
  // `limit_bytes` > 0 (a smaller value is taken as 1: nothing can be charged).
  explicit MemoryBudget(int64_t limit_bytes);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Reserves `bytes` (>= 0) for `what` ("node 'big' (Tile) output 0"); RESOURCE_EXHAUSTED
  // naming what, the bytes asked, the limit and the bytes in use when they do not fit, and
  // then nothing is reserved.
  absl::Status Charge(int64_t bytes, absl::string_view what);
  // The same without building a message: false when the bytes do not fit (nothing reserved).
  // For hot paths that name what they charge only on failure (ExhaustedError).
  bool TryCharge(int64_t bytes);
  // The RESOURCE_EXHAUSTED status Charge gives for `bytes` that did not fit.
  absl::Status ExhaustedError(int64_t bytes, absl::string_view what) const;
  // Gives back bytes charged before.
  void Release(int64_t bytes);

  int64_t limit() const { return limit_; }
  int64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  // The most bytes in use at once so far.
  int64_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  const int64_t limit_;
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
};

// Bytes held against a budget for as long as the reservation lives: for memory an execution
// holds that no Buffer owns (a kernel's scratch sized from the data, a run's memory-plan arenas
// taken from the executor's pool, the tensors a Loop collects for its scan outputs). Without a
// budget every Add succeeds and nothing is counted. Move-only.
class MemoryReservation {
 public:
  MemoryReservation() = default;
  explicit MemoryReservation(std::shared_ptr<MemoryBudget> budget) : budget_(std::move(budget)) {}
  MemoryReservation(MemoryReservation&& other) noexcept
      : budget_(std::move(other.budget_)), bytes_(other.bytes_) {
    other.bytes_ = 0;
  }
  MemoryReservation& operator=(MemoryReservation&& other) noexcept;
  MemoryReservation(const MemoryReservation&) = delete;
  MemoryReservation& operator=(const MemoryReservation&) = delete;
  ~MemoryReservation() { Reset(); }

  // Charges `bytes` more (see MemoryBudget::Charge).
  absl::Status Add(int64_t bytes, absl::string_view what);
  // The same without building a message: false when they do not fit (then
  // budget()->ExhaustedError names them).
  bool TryAdd(int64_t bytes);
  // The budget (null when none).
  MemoryBudget* budget() const { return budget_.get(); }
  // Releases everything held.
  void Reset();
  int64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<MemoryBudget> budget_;
  int64_t bytes_ = 0;
};

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_MEMORY_BUDGET_H_
