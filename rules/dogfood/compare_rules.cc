// compare_rules: the rule-language shape rules of onnx_ops.pbtxt against the builtin C++ shape
// functions, node by node, on ONNX models.
//
//   compare_rules --ops=onnx_ops.pbtxt [--symbolic] [--verbose] [--max_print=N] PATH...
//
// Each PATH is a model file or a directory searched (recursively) for model.onnx files. For
// every node of an op of the list, both versions infer the node's outputs from the same inputs
// (see CompareRuleOps); prints the counts per op and every difference, grouped by kind. Exit
// status 0 when the two agree on every node, 1 on any difference (a rule that knows more than
// the C++ function counts too), 2 on usage errors.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "ops/builtin_ops.h"
#include "graph/op_registry.h"
#include "onnx/onnx_pb.h"
#include "rules/dogfood/onnx_ops.h"
#include "rules/dogfood/rule_agreement.h"
#include "tools/shape_agreement/agreement.h"

ABSL_FLAG(std::string, ops, "", "The OpDescriptorList of rule ops (onnx_ops.pbtxt).");
ABSL_FLAG(bool, symbolic, false,
          "Also compare each model with its graph inputs' dims made symbolic ('d<size>'); "
          "these variants are named '<model>@sym'.");
ABSL_FLAG(bool, verbose, false, "Print a line for every model.");
ABSL_FLAG(int, max_print, 200, "Print at most this many differences of each kind.");

namespace graphopt {
namespace dogfood {
namespace {

namespace fs = std::filesystem;

// ".../<suite>/<dir>/model.onnx" -> "<suite>/<dir>", else the path.
std::string ModelName(const fs::path& path) {
  if (path.filename() == "model.onnx" && path.has_parent_path()) {
    const fs::path dir = path.parent_path();
    if (dir.has_parent_path()) {
      return (dir.parent_path().filename() / dir.filename()).string();
    }
    return dir.filename().string();
  }
  return path.string();
}

int Run(const std::vector<std::string>& args) {
  const size_t max_print = static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_max_print)));
  const bool verbose = absl::GetFlag(FLAGS_verbose);
  if (absl::GetFlag(FLAGS_ops).empty()) {
    std::fprintf(stderr, "error: --ops is required\n");
    return 2;
  }
  absl::StatusOr<v1::OpDescriptorList> list = ReadOpDescriptorList(absl::GetFlag(FLAGS_ops));
  if (!list.ok()) {
    std::fprintf(stderr, "error: %s\n", list.status().ToString().c_str());
    return 2;
  }
  OpRegistry builtins;
  if (absl::Status s = RegisterBuiltinOps(&builtins); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 2;
  }
  OpRegistry with_rules;
  if (absl::Status s = RegisterWithRuleOps(builtins, *list, &with_rules); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 2;
  }
  absl::flat_hash_set<std::string> ops;
  for (const v1::OpDescriptor& d : list->ops()) ops.insert(OpLabel(d.domain(), d.name()));

  std::vector<fs::path> models;
  if (!CollectModelFiles(args, &models)) return 2;
  if (models.empty()) {
    std::fprintf(stderr, "error: no models given or found\n");
    return 2;
  }

  const auto start = std::chrono::steady_clock::now();
  std::map<std::string, OpTally> totals;
  std::map<DiffKind, std::vector<Difference>> by_kind;
  std::vector<std::string> not_imported;
  int64_t compared_models = 0, without_ops = 0;
  auto compare = [&](const std::string& name, const onnx::ModelProto& model) {
    ModelComparison r = CompareRuleOps(name, model, builtins, with_rules, ops);
    if (!r.import_error.empty()) {
      not_imported.push_back(absl::StrCat(name, ": ", r.import_error));
      return;
    }
    if (r.ops.empty()) {
      ++without_ops;
      return;
    }
    ++compared_models;
    OpTally sum;
    for (const auto& [op, t] : r.ops) {
      totals[op].Add(t);
      sum.Add(t);
    }
    if (verbose || !r.differences.empty()) {
      std::printf("%s: %lld nodes, %lld agreed, %lld disagreed\n", name.c_str(),
                  static_cast<long long>(sum.nodes), static_cast<long long>(sum.agreed),
                  static_cast<long long>(sum.disagreed));
    }
    for (Difference& d : r.differences) by_kind[d.kind].push_back(std::move(d));
  };
  for (const fs::path& path : models) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    onnx::ModelProto model;
    if (!in || !model.ParseFromString(bytes.str())) {
      std::fprintf(stderr, "error: %s does not parse as an ONNX model\n", path.c_str());
      return 2;
    }
    const std::string name = ModelName(path);
    compare(name, model);
    if (absl::GetFlag(FLAGS_symbolic)) {
      compare(absl::StrCat(name, "@sym"), shape_agreement::SymbolizeInputs(model));
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("\n%zu model files, %lld comparisons with nodes of the %zu ops, %lld without, "
              "%zu not imported, in %.1f s\n",
              models.size(), static_cast<long long>(compared_models), ops.size(),
              static_cast<long long>(without_ops), not_imported.size(), seconds);
  std::printf("\n%-12s %8s %8s %14s %10s\n", "op", "nodes", "agreed", "(both reject)",
              "disagreed");
  OpTally all;
  for (const std::string& op : DogfoodOps()) totals.try_emplace(op);
  for (const auto& [op, t] : totals) {
    std::printf("%-12s %8lld %8lld %14lld %10lld\n", op.c_str(), static_cast<long long>(t.nodes),
                static_cast<long long>(t.agreed), static_cast<long long>(t.both_rejected),
                static_cast<long long>(t.disagreed));
    all.Add(t);
  }
  std::printf("%-12s %8lld %8lld %14lld %10lld\n", "total", static_cast<long long>(all.nodes),
              static_cast<long long>(all.agreed), static_cast<long long>(all.both_rejected),
              static_cast<long long>(all.disagreed));
  if (!not_imported.empty()) {
    std::printf("\nmodels graphopt does not import: %zu\n", not_imported.size());
    for (size_t i = 0; i < not_imported.size() && i < max_print; ++i) {
      std::printf("  %s\n", not_imported[i].c_str());
    }
  }
  size_t differences = 0;
  for (const auto& [kind, list] : by_kind) {
    differences += list.size();
    std::printf("\n%s: %zu\n", DiffKindName(kind), list.size());
    for (size_t i = 0; i < list.size() && i < max_print; ++i) {
      const Difference& d = list[i];
      std::printf("  %s: node '%s' (%s)%s%s\n      C++:  %s\n      rule: %s\n", d.model.c_str(),
                  d.node.c_str(), d.op.c_str(), d.value.empty() ? "" : " value ",
                  d.value.c_str(), d.cpp.c_str(), d.rule.c_str());
    }
    if (list.size() > max_print) std::printf("  ... and %zu more\n", list.size() - max_print);
  }
  std::printf("\ndifferences: %zu\n", differences);
  if (all.nodes == 0) {
    std::printf("error: no node of the ops was compared\n");
    return 1;
  }
  return differences == 0 ? 0 : 1;
}

}  // namespace
}  // namespace dogfood
}  // namespace graphopt

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Compares the rule-language shape rules with the C++ shape functions: "
      "compare_rules --ops=FILE [--symbolic] PATH...");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  return graphopt::dogfood::Run(args);
}
