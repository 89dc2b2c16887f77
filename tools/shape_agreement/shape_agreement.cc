// shape_agreement: compares graphopt's type and shape inference with ONNX's on ONNX models.
//
//   shape_agreement [--verbose|-v] [--values] [--symbolic] [--max_print=N] [--expected=FILE] PATH...
//
// Each PATH is a model file or a directory searched (recursively) for model.onnx files. Prints
// a line per model with something to report (every model with --verbose), then the totals, the
// ops graphopt does not know, the models it cannot import and every disagreement. Exit status:
// 0 when the two inferences agree on every value both type, 1 on any disagreement (other than
// those listed in --expected) or when an --expected entry no longer occurs, 2 on usage errors.
//
// --expected names known differences, one per line: "<model> <value> <reason...>"; '#' starts
// a comment. Use it only where ONNX 1.12's own inference is demonstrably wrong.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/op_registry.h"
#include "onnx/onnx_pb.h"
#include "ops/builtin_ops.h"
#include "tools/shape_agreement/agreement.h"

ABSL_FLAG(bool, verbose, false, "Print a line for every model, and ONNX's node errors.");
ABSL_FLAG(int, max_print, 200, "Print at most this many disagreements (and entries per list).");
ABSL_FLAG(bool, values, false, "Print both sides' type of every node output.");
ABSL_FLAG(bool, symbolic, false,
          "Also compare each model with its graph inputs' dims made symbolic ('d<size>'); "
          "these variants are named '<model>@sym'.");
ABSL_FLAG(std::string, expected, "",
          "File of expected differences: '<model> <value> <reason>' per line.");

namespace graphopt {
namespace shape_agreement {
namespace {

namespace fs = std::filesystem;

// "<dir name>" for .../<dir>/model.onnx, else the path.
std::string ModelName(const fs::path& path) {
  if (path.filename() == "model.onnx" && path.has_parent_path()) {
    return path.parent_path().filename().string();
  }
  return path.string();
}

struct Expected {
  std::string reason;
  bool seen = false;
};
using ExpectedMap = absl::btree_map<std::pair<std::string, std::string>, Expected>;

bool ReadExpected(const std::string& path, ExpectedMap* out) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "error: cannot read --expected file %s\n", path.c_str());
    return false;
  }
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    absl::string_view l = line;
    if (size_t hash = l.find('#'); hash != absl::string_view::npos) l = l.substr(0, hash);
    l = absl::StripAsciiWhitespace(l);
    if (l.empty()) continue;
    std::vector<std::string> parts =
        absl::StrSplit(l, absl::MaxSplits(absl::ByAnyChar(" \t"), 2), absl::SkipEmpty());
    if (parts.size() < 3) {
      std::fprintf(stderr, "error: %s:%d: expected '<model> <value> <reason>'\n", path.c_str(),
                   number);
      return false;
    }
    (*out)[{parts[0], parts[1]}].reason = std::string(absl::StripAsciiWhitespace(parts[2]));
  }
  return true;
}

std::string DisagreementLine(const Disagreement& d) {
  return absl::StrCat(d.model, ": value '", d.value, "' of node '", d.node, "' (", d.op,
                      "): onnx ", d.onnx, " vs graphopt ", d.graphopt);
}

int Run(const std::vector<std::string>& args) {
  const bool verbose = absl::GetFlag(FLAGS_verbose);
  const size_t max_print = static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_max_print)));
  ExpectedMap expected;
  if (!absl::GetFlag(FLAGS_expected).empty() &&
      !ReadExpected(absl::GetFlag(FLAGS_expected), &expected)) {
    return 2;
  }
  std::vector<fs::path> models;
  if (!CollectModelFiles(args, &models)) return 2;
  if (models.empty()) {
    std::fprintf(stderr, "error: no models given or found\n");
    return 2;
  }
  OpRegistry registry;
  if (absl::Status s = RegisterBuiltinOps(&registry); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 2;
  }

  const auto start = std::chrono::steady_clock::now();
  Summary summary;
  std::vector<std::pair<Disagreement, std::string>> expected_seen;  // with the reason
  CompareOptions options;
  options.record_values = absl::GetFlag(FLAGS_values);
  // Compares one model (or variant), takes the expected differences out and prints its line.
  auto compare = [&](const std::string& name, const onnx::ModelProto& model) {
    ModelResult r = CompareModel(name, model, registry, options);
    for (const Disagreement& v : r.values) std::printf("  %s\n", DisagreementLine(v).c_str());
    std::vector<Disagreement> kept;
    for (Disagreement& d : r.disagreements) {
      auto it = expected.find({d.model, d.value});
      if (it == expected.end()) {
        kept.push_back(std::move(d));
        continue;
      }
      it->second.seen = true;
      --r.disagreed;
      ++r.agreed;
      expected_seen.emplace_back(std::move(d), it->second.reason);
    }
    r.disagreements = std::move(kept);
    summary.Add(r);
    const bool notable = r.disagreed > 0 || !r.import_error.empty() || !r.onnx_error.empty();
    if (!verbose && !notable) return;
    if (!r.import_error.empty()) {
      std::printf("%s: not imported: %s\n", r.model.c_str(), r.import_error.c_str());
    } else if (!r.onnx_error.empty()) {
      std::printf("%s: ONNX failed: %s\n", r.model.c_str(), r.onnx_error.c_str());
    } else {
      std::printf("%s: agreed %lld, disagreed %lld, unsupported %lld, graphopt-only %lld, "
                  "onnx-only %lld\n",
                  r.model.c_str(), static_cast<long long>(r.agreed),
                  static_cast<long long>(r.disagreed), static_cast<long long>(r.unsupported),
                  static_cast<long long>(r.graphopt_only), static_cast<long long>(r.onnx_only));
    }
    if (verbose) {
      for (const std::string& e : r.onnx_node_errors) std::printf("  onnx rejects %s\n", e.c_str());
    }
  };
  for (const fs::path& path : models) {
    const std::string name = ModelName(path);
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    onnx::ModelProto model;
    if (!in || !model.ParseFromString(bytes.str())) {
      std::fprintf(stderr, "error: %s does not parse as an ONNX model\n", path.c_str());
      return 2;
    }
    compare(name, model);
    if (absl::GetFlag(FLAGS_symbolic)) compare(absl::StrCat(name, "@sym"), SymbolizeInputs(model));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  auto print_list = [&](const std::vector<std::string>& lines) {
    for (size_t i = 0; i < lines.size() && i < max_print; ++i) {
      std::printf("  %s\n", lines[i].c_str());
    }
    if (lines.size() > max_print) std::printf("  ... and %zu more\n", lines.size() - max_print);
  };

  std::printf("\n%lld models in %.1f s\n", static_cast<long long>(summary.models), seconds);
  std::printf("values: agreed %lld / disagreed %lld / unsupported %lld\n",
              static_cast<long long>(summary.agreed), static_cast<long long>(summary.disagreed),
              static_cast<long long>(summary.unsupported));
  std::printf("knowledge: graphopt-only %lld, onnx-only %lld, neither %lld values; of the agreed, "
              "graphopt knows more of %lld, onnx of %lld\n",
              static_cast<long long>(summary.graphopt_only),
              static_cast<long long>(summary.onnx_only), static_cast<long long>(summary.neither),
              static_cast<long long>(summary.graphopt_knows_more),
              static_cast<long long>(summary.onnx_knows_more));
  std::printf("nodes ONNX rejects: %lld\n", static_cast<long long>(summary.onnx_node_errors));
  // Sorted by count (descending), then name.
  std::vector<std::pair<std::string, int64_t>> ops(summary.unsupported_ops.begin(),
                                                   summary.unsupported_ops.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::printf("unsupported ops (%zu, values produced):", ops.size());
  for (const auto& [op, n] : ops) std::printf(" %s %lld", op.c_str(), static_cast<long long>(n));
  std::printf("\n");
  std::printf("models graphopt does not import: %zu\n", summary.not_imported.size());
  print_list(summary.not_imported);
  if (!summary.onnx_failed.empty()) {
    std::printf("models ONNX fails on: %zu\n", summary.onnx_failed.size());
    print_list(summary.onnx_failed);
  }
  if (!expected_seen.empty()) {
    std::printf("expected differences: %zu\n", expected_seen.size());
    for (const auto& [d, reason] : expected_seen) {
      std::printf("  %s  [%s]\n", DisagreementLine(d).c_str(), reason.c_str());
    }
  }
  int status = 0;
  std::vector<std::string> stale;
  for (const auto& [key, e] : expected) {
    if (!e.seen) stale.push_back(absl::StrCat(key.first, " ", key.second));
  }
  if (!stale.empty()) {
    std::printf("expected differences that did not occur (remove them): %zu\n", stale.size());
    print_list(stale);
    status = 1;
  }
  std::printf("nodes ONNX accepts that graphopt's verifier rejects: %zu\n",
              summary.verifier_errors.size());
  print_list(summary.verifier_errors);
  if (!summary.verifier_errors.empty()) status = 1;
  std::printf("disagreements: %zu\n", summary.disagreements.size());
  std::vector<std::string> lines;
  for (const Disagreement& d : summary.disagreements) lines.push_back(DisagreementLine(d));
  print_list(lines);
  if (!summary.disagreements.empty()) status = 1;
  return status;
}

}  // namespace
}  // namespace shape_agreement
}  // namespace graphopt

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Compares graphopt's shape/type inference with ONNX's: shape_agreement [flags] PATH...");
  // "-v" is short for --verbose (Abseil flags have no short names).
  static char kVerbose[] = "--verbose";
  std::vector<char*> argv_copy(argv, argv + argc);
  for (char*& a : argv_copy) {
    if (std::string(a) == "-v") a = kVerbose;
  }
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(argv_copy.size()), argv_copy.data());
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  return graphopt::shape_agreement::Run(args);
}
