#include "util/openmp_wait.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace graphopt {

// Pauses an idle libgomp thread spins before it sleeps (libgomp's default: 300,000).
constexpr char kShortSpinCount[] = "1000";

bool OpenMpWaitPolicyUnset(const char* omp_wait_policy, const char* gomp_spincount) {
  return omp_wait_policy == nullptr && gomp_spincount == nullptr;
}

void ReexecWithShortOpenMpSpin(char** argv, std::string* note) {
  if (!OpenMpWaitPolicyUnset(std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"))) {
    return;
  }
  // Set before the exec and left set when it fails, so that a program that calls this twice
  // (or its children) never loops.
  if (setenv("GOMP_SPINCOUNT", kShortSpinCount, /*overwrite=*/1) != 0) {
    if (note != nullptr) *note = absl::StrCat("setenv GOMP_SPINCOUNT: ", std::strerror(errno));
    return;
  }
  execv("/proc/self/exe", argv);
  if (note != nullptr) {
    *note = absl::StrCat("re-executing with GOMP_SPINCOUNT=", kShortSpinCount, ": ",
                         std::strerror(errno),
                         "; OpenMP threads spin while idle");
  }
}

}  // namespace graphopt
