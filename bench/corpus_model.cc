#include "bench/corpus_model.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/external_data.h"
#include "onnx_io/onnx_import.h"
#include "onnx_io/onnx_values.h"

namespace graphopt {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<CorpusModel> LoadCorpusModel(const std::string& dir) {
  CorpusModel model;
  // With its external data, if any (a large model keeps its weights in files beside it).
  absl::StatusOr<v1::Graph> graph = GraphFromOnnxFile((fs::path(dir) / "model.onnx").string());
  if (!graph.ok()) return graph.status();
  model.graph = *std::move(graph);
  for (int i = 0; i < model.graph.inputs_size(); ++i) {
    const fs::path p = fs::path(dir) / "test_data_set_0" / absl::StrCat("input_", i, ".pb");
    if (!fs::exists(p)) break;
    // A TensorProto, or a SequenceProto / OptionalProto for a sequence or optional input.
    absl::StatusOr<runtime::Tensor> tensor =
        ValueFromOnnxBytes(Read(p), model.graph.inputs(i).type().kind(), p.string());
    if (!tensor.ok()) return tensor.status();
    model.inputs.emplace_back(model.graph.inputs(i).name(), *std::move(tensor));
  }
  return model;
}

std::string TestCorpusDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return (fs::path(srcdir ? srcdir : ".") / (workspace ? workspace : "graphopt") / "models" /
          "corpus")
      .string();
}

std::vector<std::string> TestCorpusModelDirs() {
  std::vector<std::string> dirs;
  std::error_code error;
  for (const auto& e : fs::directory_iterator(TestCorpusDir(), error)) {
    dirs.push_back(e.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::string TestInputDimBounds(const CorpusModel& model) {
  std::map<std::string, int64_t> bounds;
  for (int i = 0; i < model.graph.inputs_size() && i < static_cast<int>(model.inputs.size()); ++i) {
    const v1::Shape& shape = model.graph.inputs(i).type().shape();
    const runtime::Tensor& t = model.inputs[i].second;
    for (int d = 0; d < shape.dims_size() && d < t.rank(); ++d) {
      if (!shape.dims(d).has_symbol()) continue;
      int64_t& b = bounds[shape.dims(d).symbol()];
      b = std::max(b, t.dim(d));
    }
  }
  std::string text;
  for (const auto& [symbol, size] : bounds) {
    absl::StrAppend(&text, text.empty() ? "" : ",", symbol, ":", size);
  }
  return text;
}

}  // namespace graphopt
