#ifndef GRAPHOPT_UTIL_RETRY_HINT_H_
#define GRAPHOPT_UTIL_RETRY_HINT_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"

namespace graphopt {

// A RESOURCE_EXHAUSTED status from a busy part of the service can say when trying again may
// succeed. The hint travels as a status payload inside the server and as trailing metadata
// on the wire (server/rpc_call.h); statuses without it are not worth retrying soon.
inline constexpr char kRetryAfterPayload[] = "type.graphopt.dev/retry_after_ms";

inline void SetRetryAfter(absl::Status& status, absl::Duration after) {
  status.SetPayload(kRetryAfterPayload,
                    absl::Cord(absl::StrCat(std::max<int64_t>(1, absl::ToInt64Milliseconds(after)))));
}

// The hint, when the status has one.
inline absl::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  absl::optional<absl::Cord> text = status.GetPayload(kRetryAfterPayload);
  int64_t ms = 0;
  if (!text.has_value() || !absl::SimpleAtoi(std::string(*text), &ms)) return absl::nullopt;
  return absl::Milliseconds(ms);
}

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_RETRY_HINT_H_
