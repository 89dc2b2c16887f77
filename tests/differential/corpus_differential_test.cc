// The optimization levels (and, on the real-model corpus, every pass alone) on real graphs: the
// real-model corpus (torch exports, models/) and every case of the ONNX backend test corpus
// (libonnx-testdata). Each graph runs unoptimized and optimized on its test inputs; the outputs
// must agree. Cases the runtime cannot run unoptimized (listed in
// tests/conformance/known_failures.txt) are counted as skipped.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/corpus_model.h"
#include "gtest/gtest.h"
#include "tests/differential/differential.h"

namespace graphopt::differential {
namespace {

namespace fs = std::filesystem;

// ONNX corpus cases (of 1,072) that every level must optimize and check: a few under the
// number checked today, so that losing more than a handful of cases fails the test.
constexpr int kMinCheckedOnnxCases = 1030;

std::vector<fs::path> CaseDirs(const fs::path& suite) {
  std::vector<fs::path> dirs;
  if (!fs::is_directory(suite)) return dirs;
  for (const auto& e : fs::directory_iterator(suite)) {
    if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

struct Tally {
  int checked = 0;
  int skipped = 0;
  int failed = 0;
  // Cases the optimizer refuses up front (an op without a descriptor), by op.
  std::map<std::string, int> refused;
  int refused_cases = 0;
};

// The op named by an input-verification refusal ("... unknown op 'X'"), or "" for any other
// error (a pass failing, the verifier failing after a pass, a numeric difference).
std::string RefusedOp(const absl::Status& s) {
  const std::string m(s.message());
  if (m.find("after pass") != std::string::npos || m.find("pass '") != std::string::npos) {
    return "";
  }
  const size_t at = m.find("unknown op '");
  if (at == std::string::npos) return "";
  const size_t begin = at + 12;
  return m.substr(begin, m.find('\'', begin) - begin);
}

// Runs `checks` on every case under `suite`; returns the tally.
Tally CheckSuite(const Env& env, const fs::path& suite, const std::vector<Check>& checks) {
  Tally t;
  for (const fs::path& dir : CaseDirs(suite)) {
    absl::StatusOr<CorpusModel> model = LoadCorpusModel(dir.string());
    if (!model.ok()) {
      ++t.skipped;
      continue;
    }
    absl::StatusOr<std::vector<runtime::Tensor>> reference =
        Execute(env, model->graph, model->inputs);
    if (!reference.ok()) {
      ++t.skipped;  // not runnable unoptimized (an unsupported op, a known failure)
      continue;
    }
    bool refused = false;
    for (const Check& check : checks) {
      absl::Status s = CompareAfter(env, model->graph, model->inputs, *reference, check);
      if (s.ok()) continue;
      if (std::string op = RefusedOp(s); !op.empty()) {
        if (!refused) ++t.refused[op];
        refused = true;
        continue;
      }
      ++t.failed;
      ADD_FAILURE() << dir.filename().string() << " (" << suite.filename().string()
                    << "): " << check.name << ": " << s.message();
    }
    if (refused) {
      ++t.refused_cases;
    } else {
      ++t.checked;
    }
  }
  return t;
}

fs::path RealModelCorpus() { return TestCorpusDir(); }

TEST(CorpusDifferentialTest, RealModelsEveryPassAndLevel) {
  absl::StatusOr<std::unique_ptr<Env>> env = Env::Create();
  ASSERT_TRUE(env.ok()) << env.status();
  const std::vector<Check> checks = AllChecks((*env)->passes());
  Tally t = CheckSuite(**env, RealModelCorpus(), checks);
  std::printf("real-model corpus: %d models x %zu checks, %d refused, %d skipped, %d failed\n",
              t.checked, checks.size(), t.refused_cases, t.skipped, t.failed);
  EXPECT_EQ(t.checked, 7) << "every real-model corpus model must run";
}

TEST(CorpusDifferentialTest, OnnxBackendCorpusEveryLevel) {
  absl::StatusOr<std::unique_ptr<Env>> env = Env::Create();
  ASSERT_TRUE(env.ok()) << env.status();
  std::vector<Check> levels;
  for (Check& c : AllChecks((*env)->passes())) {
    if (c.name.rfind("-O", 0) == 0) {
      // Backend cases check edge values (denormals, huge magnitudes) where a fused or folded
      // computation may round differently: compare as the conformance runner does.
      if (!c.exact) c.rtol = 1e-3;
      levels.push_back(std::move(c));
    }
  }
  ASSERT_FALSE(levels.empty());
  const fs::path data = "/usr/share/libonnx-testdata/data";
  int checked = 0;
  std::map<std::string, int> refused;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    Tally t = CheckSuite(**env, data / suite, levels);
    std::printf("onnx %-18s %4d cases x %zu levels, %d refused by the optimizer, %d not "
                "runnable unoptimized, %d failed\n",
                suite, t.checked, levels.size(), t.refused_cases, t.skipped, t.failed);
    checked += t.checked;
    for (const auto& [op, n] : t.refused) refused[op] += n;
  }
  if (!refused.empty()) {
    std::string ops;
    for (const auto& [op, n] : refused) absl::StrAppend(&ops, " ", op, "(", n, ")");
    std::printf("refused (op without a descriptor: cases):%s\n", ops.c_str());
  }
  // The number of corpus cases the optimizer takes and checks; raise it as descriptors are
  // added, never lower it.
  EXPECT_GE(checked, kMinCheckedOnnxCases);
}

}  // namespace
}  // namespace graphopt::differential
