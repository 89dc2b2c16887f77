#ifndef GRAPHOPT_BENCH_CORPUS_MODEL_H_
#define GRAPHOPT_BENCH_CORPUS_MODEL_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/graph.pb.h"
#include "runtime/tensor.h"

namespace graphopt {

// A model of the real-model corpus (models/BUILD): DIR/model.onnx as a graph, and the inputs of
// DIR/test_data_set_0 (input_<i>.pb, ONNX TensorProtos) named after the graph's inputs, in
// order, for as many as there are files.
struct CorpusModel {
  v1::Graph graph;
  std::vector<std::pair<std::string, runtime::Tensor>> inputs;
};

absl::StatusOr<CorpusModel> LoadCorpusModel(const std::string& dir);

// In a Bazel test with //models:corpus among its data: the corpus directory in the runfiles
// ($TEST_SRCDIR/$TEST_WORKSPACE/models/corpus), and its model directories sorted by name.
std::string TestCorpusDir();
std::vector<std::string> TestCorpusModelDirs();

// plan_memory's dim_bounds for running the model on its test inputs: each symbolic dim of a graph
// input bounded by the largest size it has in those inputs ("batch:1,seq:16"; "" when none).
std::string TestInputDimBounds(const CorpusModel& model);

}  // namespace graphopt

#endif  // GRAPHOPT_BENCH_CORPUS_MODEL_H_
