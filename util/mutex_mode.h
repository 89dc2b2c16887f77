#ifndef GRAPHOPT_UTIL_MUTEX_MODE_H_
#define GRAPHOPT_UTIL_MUTEX_MODE_H_

namespace graphopt {

// Turns Abseil's mutex deadlock detection off for this process; called once from the main of
// each production process (server, worker, CLI) and of the benchmarks that time them, before
// any thread starts. The tests keep it on: there it finds lock-order inversions.
//
// Debian's libabsl is built without NDEBUG, so the detection is on by default: every
// absl::Mutex acquisition (gRPC's own locks included) goes through one process-wide graph of
// lock orders under a global lock, and a lock-order inversion it believes it saw aborts the
// process. That bookkeeping makes every uncontended lock several times as expensive.
void DisableMutexDeadlockDetection();

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_MUTEX_MODE_H_
