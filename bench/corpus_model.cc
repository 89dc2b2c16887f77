#include "bench/corpus_model.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/onnx_import.h"

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
  absl::StatusOr<v1::Graph> graph = GraphFromOnnxBytes(Read(fs::path(dir) / "model.onnx"));
  if (!graph.ok()) return graph.status();
  model.graph = *std::move(graph);
  for (int i = 0; i < model.graph.inputs_size(); ++i) {
    const fs::path p = fs::path(dir) / "test_data_set_0" / absl::StrCat("input_", i, ".pb");
    if (!fs::exists(p)) break;
    onnx::TensorProto t;
    if (!t.ParseFromString(Read(p))) {
      return absl::InvalidArgumentError(absl::StrCat(p.string(), ": not an onnx.TensorProto"));
    }
    absl::StatusOr<v1::Tensor> v = TensorFromOnnx(std::move(t), p.string());
    if (!v.ok()) return v.status();
    absl::StatusOr<runtime::Tensor> tensor = runtime::Tensor::FromProto(*v, p.string());
    if (!tensor.ok()) return tensor.status();
    model.inputs.emplace_back(model.graph.inputs(i).name(), *std::move(tensor));
  }
  return model;
}

}  // namespace graphopt
