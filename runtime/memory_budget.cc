#include "runtime/memory_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace graphopt::runtime {

MemoryBudget::MemoryBudget(int64_t limit_bytes) : limit_(std::max<int64_t>(limit_bytes, 1)) {}

bool MemoryBudget::TryCharge(int64_t bytes) {
  if (bytes <= 0) return true;
  int64_t current = in_use_.load(std::memory_order_relaxed);
  do {
    // current + bytes > limit_, without overflow.
    if (bytes > limit_ - current) return false;
  } while (!in_use_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  const int64_t now = current + bytes;
  int64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return true;
}

absl::Status MemoryBudget::ExhaustedError(int64_t bytes, absl::string_view what) const {
  return absl::ResourceExhaustedError(absl::StrCat(
      what, ": needs ", bytes, " bytes, over the execution's memory budget of ", limit_,
      " bytes (", in_use(), " in use)"));
}

absl::Status MemoryBudget::Charge(int64_t bytes, absl::string_view what) {
  if (TryCharge(bytes)) return absl::OkStatus();
  return ExhaustedError(bytes, what);
}

void MemoryBudget::Release(int64_t bytes) {
  if (bytes > 0) in_use_.fetch_sub(bytes, std::memory_order_relaxed);
}

MemoryReservation& MemoryReservation::operator=(MemoryReservation&& other) noexcept {
  if (this != &other) {
    Reset();
    budget_ = std::move(other.budget_);
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

absl::Status MemoryReservation::Add(int64_t bytes, absl::string_view what) {
  if (budget_ == nullptr || bytes <= 0) return absl::OkStatus();
  if (absl::Status s = budget_->Charge(bytes, what); !s.ok()) return s;
  bytes_ += bytes;
  return absl::OkStatus();
}

bool MemoryReservation::TryAdd(int64_t bytes) {
  if (budget_ == nullptr || bytes <= 0) return true;
  if (!budget_->TryCharge(bytes)) return false;
  bytes_ += bytes;
  return true;
}

void MemoryReservation::Reset() {
  if (budget_ != nullptr && bytes_ > 0) budget_->Release(bytes_);
  bytes_ = 0;
}

}  // namespace graphopt::runtime
