#include "util/mutex_mode.h"

#include "absl/synchronization/mutex.h"

namespace graphopt {

void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace graphopt
