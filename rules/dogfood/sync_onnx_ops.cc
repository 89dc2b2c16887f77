// sync_onnx_ops: rewrites onnx_ops.pbtxt in its canonical form, every descriptor refreshed from
// the builtin op of the same name and every shape rule kept.
//
//   sync_onnx_ops --file=PATH [--rules_dir=DIR]
//
// --rules_dir: take the shape rule of op X from DIR/X.rule where that file exists (and add ops
// the file lacks), for writing rules in plain files and then moving them into the list.
// Exit status 0 on success, 1 on errors.

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "ops/builtin_ops.h"
#include "graph/op_registry.h"
#include "rules/dogfood/onnx_ops.h"

ABSL_FLAG(std::string, file, "", "onnx_ops.pbtxt to rewrite in place (created when missing).");
ABSL_FLAG(std::string, rules_dir, "", "Directory of <Op>.rule files overriding the rules.");

namespace graphopt {
namespace dogfood {
namespace {

int Run() {
  const std::string path = absl::GetFlag(FLAGS_file);
  if (path.empty()) {
    std::fprintf(stderr, "error: --file is required\n");
    return 1;
  }
  v1::OpDescriptorList ops;
  if (std::ifstream probe(path); probe) {
    absl::StatusOr<v1::OpDescriptorList> read = ReadOpDescriptorList(path);
    if (!read.ok()) {
      std::fprintf(stderr, "error: %s\n", read.status().ToString().c_str());
      return 1;
    }
    ops = *std::move(read);
  }
  if (const std::string dir = absl::GetFlag(FLAGS_rules_dir); !dir.empty()) {
    for (const std::string& name : DogfoodOps()) {
      std::ifstream in(absl::StrCat(dir, "/", name, ".rule"));
      if (!in) continue;
      std::stringstream text;
      text << in.rdbuf();
      v1::OpDescriptor* target = nullptr;
      for (v1::OpDescriptor& d : *ops.mutable_ops()) {
        if (d.name() == name) target = &d;
      }
      if (target == nullptr) {
        target = ops.add_ops();
        target->set_name(name);
      }
      target->mutable_shape_rule()->set_expr(text.str());
    }
  }
  OpRegistry builtins;
  if (absl::Status s = RegisterBuiltinOps(&builtins); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  absl::StatusOr<v1::OpDescriptorList> synced = SyncWithBuiltins(ops, builtins);
  if (!synced.ok()) {
    std::fprintf(stderr, "error: %s\n", synced.status().ToString().c_str());
    return 1;
  }
  std::ofstream out(path, std::ios::trunc);
  out << FormatOpDescriptorList(*synced);
  if (!out.flush()) {
    std::fprintf(stderr, "error: cannot write %s\n", path.c_str());
    return 1;
  }
  std::printf("wrote %d ops to %s\n", synced->ops_size(), path.c_str());
  return 0;
}

}  // namespace
}  // namespace dogfood
}  // namespace graphopt

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Rewrites onnx_ops.pbtxt canonically: sync_onnx_ops --file=PATH [--rules_dir=DIR]");
  absl::ParseCommandLine(argc, argv);
  return graphopt::dogfood::Run();
}
