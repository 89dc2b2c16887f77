// Writes the seed corpus of one fuzz target from files already on the machine, so that no
// binary seeds need to be checked in (fuzz/smoke.sh runs it before each fuzzer).
//
//   make_seeds MODE OUT_DIR INPUT...
//
// An INPUT is a *.onnx or *.pbtxt file (others are skipped) or a folder (searched recursively
// for them). Initializers of ONNX models larger than 1 KiB become graph inputs of their type
// (the corpus models' structure without their weights). MODE:
//   graph  graph_pipeline_fuzzer: *.pbtxt graphopt.v1.Graph and *.onnx models (converted with
//          GraphFromOnnx), each serialized with a flags byte (fuzz_util.h) that cycles over
//          -O2/-O3, verify-each-pass and the dim binding;
//   onnx   onnx_import_fuzzer: *.onnx models, *.pbtxt graphs written as ONNX;
//   rules  rule_fuzzer: every rule of the *.pbtxt graphopt.v1.OpDescriptorList files and of
//          rules/example_rules.h, with its header (fuzz_util.h), plus a few type and cost rules;
//   ops    op_descriptor_fuzzer: each *.pbtxt OpDescriptorList serialized whole and one seed
//          per descriptor; descriptors of the default domain (copies of builtins) are moved to
//          domain "fuzz.onnx", since a client may not redefine a builtin.
// Inputs larger than --max_bytes=N (first argument, optional; default 65536) are left out:
// libFuzzer would truncate them. Prints how many seeds it wrote; exits 1 when an input cannot
// be read or parsed, or when it wrote none.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "google/protobuf/text_format.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/onnx_export.h"
#include "onnx_io/onnx_import.h"
#include "proto/graph.pb.h"
#include "proto/optimizer.pb.h"
#include "rules/example_rules.h"

namespace graphopt {
namespace fuzz {
namespace {

namespace fs = std::filesystem;

struct Writer {
  fs::path dir;
  std::string mode;
  size_t max_bytes = 65536;
  int written = 0;
  int too_large = 0;

  void Write(const std::string& bytes) {
    if (bytes.size() > max_bytes) {
      ++too_large;
      return;
    }
    const fs::path path = dir / absl::StrCat(mode, "-", written++);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::cerr << "make_seeds: cannot write " << path << "\n";
      std::exit(1);
    }
  }
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "make_seeds: cannot read " << path << "\n";
    std::exit(1);
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

template <typename Message>
Message ParseText(const fs::path& path) {
  Message m;
  if (!google::protobuf::TextFormat::ParseFromString(ReadFile(path), &m)) {
    std::cerr << "make_seeds: " << path << " is not a text-format "
              << Message::descriptor()->full_name() << "\n";
    std::exit(1);
  }
  return m;
}

// Files of `inputs`, folders searched recursively, in a stable order.
std::vector<fs::path> Files(const std::vector<std::string>& inputs) {
  std::vector<fs::path> files;
  for (const std::string& input : inputs) {
    const fs::path p(input);
    if (fs::is_directory(p)) {
      std::vector<fs::path> found;
      for (const fs::directory_entry& e : fs::recursive_directory_iterator(p)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".onnx" || ext == ".pbtxt")) found.push_back(e.path());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(p)) {
      // Bazel passes a model's test data along with it: only models and text protos count.
      if (p.extension() == ".onnx" || p.extension() == ".pbtxt") files.push_back(p);
    } else {
      std::cerr << "make_seeds: no such file or folder: " << input << "\n";
      std::exit(1);
    }
  }
  return files;
}

bool IsOnnx(const fs::path& p) { return p.extension() == ".onnx"; }

// An ONNX model with every initializer larger than kMaxInitializerBytes turned into a graph
// input of the same type: the corpus models' structure at a size a fuzzer mutates quickly.
constexpr size_t kMaxInitializerBytes = 1024;

std::string ReadModel(const fs::path& path) {
  std::string bytes = ReadFile(path);
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    std::cerr << "make_seeds: " << path << " is not an ONNX model\n";
    std::exit(1);
  }
  onnx::GraphProto* g = model.mutable_graph();
  std::set<std::string> inputs;
  for (const onnx::ValueInfoProto& vi : g->input()) inputs.insert(vi.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  bool changed = false;
  for (onnx::TensorProto& t : *g->mutable_initializer()) {
    if (t.ByteSizeLong() <= kMaxInitializerBytes) {
      *kept.Add() = std::move(t);
      continue;
    }
    changed = true;
    if (inputs.count(t.name()) > 0) continue;
    onnx::ValueInfoProto* vi = g->add_input();
    vi->set_name(t.name());
    onnx::TypeProto::Tensor* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(t.data_type());
    onnx::TensorShapeProto* shape = tt->mutable_shape();
    for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  }
  if (!changed) return bytes;
  g->mutable_initializer()->Swap(&kept);
  return model.SerializeAsString();
}

void GraphSeeds(const std::vector<fs::path>& files, Writer* w) {
  int index = 0;
  for (const fs::path& f : files) {
    v1::Graph graph;
    if (IsOnnx(f)) {
      absl::StatusOr<v1::Graph> g = GraphFromOnnxBytes(ReadModel(f));
      // Models graphopt does not import (sequence types, ...) give no graph seed.
      if (!g.ok()) continue;
      graph = std::move(*g);
    } else {
      graph = ParseText<v1::Graph>(f);
    }
    const char flags = static_cast<char>(index++ % 8);
    w->Write(std::string(1, flags) + graph.SerializeAsString());
  }
}

void OnnxSeeds(const std::vector<fs::path>& files, Writer* w) {
  for (const fs::path& f : files) {
    if (IsOnnx(f)) {
      w->Write(ReadModel(f));
      continue;
    }
    absl::StatusOr<std::string> onnx = GraphToOnnxBytes(ParseText<v1::Graph>(f));
    if (onnx.ok()) w->Write(*onnx);
  }
}

void RuleSeed(const char* op, int kind, int index, const std::string& text, Writer* w) {
  int i = RuleFuzzOpIndex(op);
  if (i < 0) i = RuleFuzzOpIndex("Relu");  // checked against Relu's X -> Y
  std::string seed(kRuleHeaderBytes, '\0');
  seed[0] = static_cast<char>(i);
  seed[1] = static_cast<char>(kind);
  seed[2] = static_cast<char>(index % kNumScenarios);
  seed[3] = 0;
  w->Write(seed + text);
}

void RuleSeeds(const std::vector<fs::path>& files, Writer* w) {
  int index = 0;
  for (const fs::path& f : files) {
    const v1::OpDescriptorList list = ParseText<v1::OpDescriptorList>(f);
    for (const v1::OpDescriptor& d : list.ops()) {
      const char* name = d.name().c_str();
      if (d.shape_rule().has_expr()) RuleSeed(name, 0, index++, d.shape_rule().expr(), w);
      if (d.type_rule().has_expr()) RuleSeed(name, 1, index++, d.type_rule().expr(), w);
      if (d.cost().flops().has_expr()) RuleSeed(name, 2, index++, d.cost().flops().expr(), w);
      if (d.cost().bytes_moved().has_expr()) {
        RuleSeed(name, 2, index++, d.cost().bytes_moved().expr(), w);
      }
    }
  }
  const std::pair<const char*, const char*> examples[] = {
      {"Conv", example_rules::kConvRule},       {"Concat", example_rules::kConcatRule},
      {"Reshape", example_rules::kReshapeRule}, {"Gemm", example_rules::kGemmRule},
      {"Softmax", example_rules::kSoftmaxRule}, {"Add", example_rules::kAddRule},
  };
  for (const auto& [op, rule] : examples) RuleSeed(op, 0, index++, rule, w);
  // Type rules (docs/rule-language.md, "A type rule") and cost rules ("A cost rule").
  RuleSeed("Add", 1, index++,
           "T in {float32, float16};\noutput[0] = dtype(A) | float32;\n", w);
  RuleSeed("Cast", 1, index++, "output[0] = attr_dtype(\"to\") | dtype(input) | float32;\n", w);
  RuleSeed("MatMul", 2, index++,
           "let a = shape(A);\nlet b = shape(B);\nassert a[1] == b[0], \"inner dims differ\";\n"
           "2 * a[0] * a[1] * b[1]\n",
           w);
  RuleSeed("MatMul", 2, index++,
           "(prod(shape(A)) + prod(shape(B))) * dtype_size(dtype(A))", w);
  RuleSeed("Split", 0, index++,
           "let x = shape(input);\nlet n = count(outputs);\n"
           "output[*] = [x for i in range(n)];\n",
           w);
}

void OpSeeds(const std::vector<fs::path>& files, Writer* w) {
  for (const fs::path& f : files) {
    v1::OpDescriptorList list = ParseText<v1::OpDescriptorList>(f);
    for (v1::OpDescriptor& d : *list.mutable_ops()) {
      if (d.domain().empty() || d.domain() == "ai.onnx") d.set_domain("fuzz.onnx");
      v1::OpDescriptorList one;
      *one.add_ops() = d;
      w->Write(one.SerializeAsString());
    }
    w->Write(list.SerializeAsString());
  }
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  Writer w;
  if (!args.empty() && absl::StartsWith(args[0], "--max_bytes=")) {
    if (!absl::SimpleAtoi(args[0].substr(12), &w.max_bytes)) {
      std::cerr << "make_seeds: bad " << args[0] << "\n";
      return 1;
    }
    args.erase(args.begin());
  }
  if (args.size() < 3) {
    std::cerr << "usage: make_seeds [--max_bytes=N] graph|onnx|rules|ops OUT_DIR INPUT...\n";
    return 1;
  }
  w.mode = args[0];
  w.dir = args[1];
  fs::create_directories(w.dir);
  const std::vector<fs::path> files = Files({args.begin() + 2, args.end()});
  if (w.mode == "graph") {
    GraphSeeds(files, &w);
  } else if (w.mode == "onnx") {
    OnnxSeeds(files, &w);
  } else if (w.mode == "rules") {
    RuleSeeds(files, &w);
  } else if (w.mode == "ops") {
    OpSeeds(files, &w);
  } else {
    std::cerr << "make_seeds: unknown mode '" << w.mode << "'\n";
    return 1;
  }
  std::cout << "make_seeds: " << w.written << " " << w.mode << " seeds from " << files.size()
            << " files in " << w.dir.string();
  if (w.too_large > 0) std::cout << " (" << w.too_large << " over " << w.max_bytes << " bytes left out)";
  std::cout << "\n";
  return w.written > 0 ? 0 : 1;
}

}  // namespace
}  // namespace fuzz
}  // namespace graphopt

int main(int argc, char** argv) { return graphopt::fuzz::Main(argc, argv); }
