#include "bench/synthetic_graph.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace graphopt {
namespace {

constexpr int64_t kNodesPerBlock = 8;
constexpr int64_t kWidth = 64;

void AddNode(v1::Graph& g, const char* op, std::initializer_list<std::string> inputs,
             std::string output) {
  v1::Node* n = g.add_nodes();
  n->set_op_type(op);
  for (const std::string& in : inputs) n->add_inputs(in);
  n->add_outputs(std::move(output));
}

}  // namespace

v1::Graph MakeSyntheticGraph(int64_t num_nodes) {
  v1::Graph g;
  g.set_name(absl::StrCat("synthetic_", num_nodes));
  v1::ValueInfo* x = g.add_inputs();
  x->set_name("x");
  x->mutable_type()->set_dtype(v1::DT_FLOAT32);
  x->mutable_type()->mutable_shape()->add_dims()->set_symbol("batch");
  x->mutable_type()->mutable_shape()->add_dims()->set_size(kWidth);
  v1::Tensor* w = g.add_initializers();
  w->set_name("w");
  w->set_dtype(v1::DT_FLOAT32);
  w->add_dims(kWidth);
  w->set_raw_data(std::string(kWidth * 4, '\0'));

  const int64_t blocks = num_nodes / kNodesPerBlock;
  g.mutable_nodes()->Reserve(static_cast<int>(blocks * kNodesPerBlock));
  std::string prev = "x";
  for (int64_t i = 0; i < blocks; ++i) {
    const std::string p = absl::StrCat("b", i, "_");
    AddNode(g, "Relu", {prev}, p + "a");
    AddNode(g, "Identity", {p + "a"}, p + "b");
    AddNode(g, "Add", {p + "b", "w"}, p + "c");
    AddNode(g, "Mul", {p + "a", p + "a"}, p + "d1");
    AddNode(g, "Mul", {p + "a", p + "a"}, p + "d2");
    AddNode(g, "Exp", {p + "d1"}, p + "dead");
    AddNode(g, "Add", {p + "c", p + "d2"}, p + "e");
    AddNode(g, "Dropout", {p + "e"}, p + "out");
    prev = p + "out";
  }
  g.add_outputs()->set_name(prev);
  return g;
}

}  // namespace graphopt
