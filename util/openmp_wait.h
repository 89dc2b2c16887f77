#ifndef GRAPHOPT_UTIL_OPENMP_WAIT_H_
#define GRAPHOPT_UTIL_OPENMP_WAIT_H_

#include <string>

namespace graphopt {

// The OpenMP runtime under oneDNN (GCC's libgomp) makes an idle thread spin for a long while
// (GOMP_SPINCOUNT, 300,000 pauses: milliseconds) before it sleeps, both between parallel
// regions and at a region's closing barrier. On a loaded host, a container at its CPU quota or
// beside noisy neighbours, that spinning takes the CPU from the very thread the barrier waits
// for, and one oneDNN primitive then costs milliseconds instead of microseconds (issue 34:
// efficientnet_b0 at 2 threads 79 -> 1932 ms under load). Sleeping at once
// (OMP_WAIT_POLICY=PASSIVE) fixes that but costs a futex wake-up per region on a quiet host,
// where two threads then ran slower than one (efficientnet_b0 8.3 against 6.4 ms). A spin of
// GOMP_SPINCOUNT=1000 pauses (microseconds) catches back-to-back regions and sleeps soon after:
// on a quiet host 5.5 ms at 2 threads; with two busy loops beside it, 11.5 ms against PASSIVE's
// 17.8 (docs/performance.md, 2026-12-08).
//
// libgomp reads the variable only once, when it is loaded, before main runs; so this sets it
// and re-executes the program (same pid, same arguments) when the environment names no wait
// policy of its own (neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT: a user's choice stands).
// Call it first thing in main, before any thread starts. It returns when nothing was to be
// done or the exec failed (then the process goes on with libgomp's defaults and `*note`, when
// given, says why); otherwise it does not return.
void ReexecWithShortOpenMpSpin(char** argv, std::string* note = nullptr);

// Whether the environment leaves libgomp's wait policy to its defaults (the values of
// OMP_WAIT_POLICY and GOMP_SPINCOUNT; null when unset).
bool OpenMpWaitPolicyUnset(const char* omp_wait_policy, const char* gomp_spincount);

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_OPENMP_WAIT_H_
