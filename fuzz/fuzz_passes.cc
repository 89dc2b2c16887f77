#include "fuzz/fuzz_passes.h"

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "passes/builtin_passes.h"

namespace graphopt {
namespace fuzz {

const PassRegistry& BuiltinPasses() {
  static const PassRegistry* const kPasses = [] {
    auto* passes = new PassRegistry();
    if (absl::Status s = RegisterBuiltinPasses(passes); !s.ok()) {
      std::fprintf(stderr, "fuzz: registering the builtin passes: %s\n", s.ToString().c_str());
      std::abort();
    }
    return passes;
  }();
  return *kPasses;
}

}  // namespace fuzz
}  // namespace graphopt
