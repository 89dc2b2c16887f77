#include "runtime/kernels/kernel_test_util.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt::runtime {

const KernelRegistry& TestRegistry() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    absl::Status s = RegisterCpuKernels(*r);
    if (!s.ok()) {
      std::fprintf(stderr, "RegisterCpuKernels: %s\n", s.ToString().c_str());
      std::abort();
    }
    return r;
  }();
  return *registry;
}

absl::StatusOr<std::vector<Tensor>> RunNode(const std::string& op_type,
                                            const std::vector<std::string>& attributes,
                                            const std::vector<Tensor>& inputs, int num_outputs,
                                            int64_t opset, int num_threads) {
  return RunDomainNode("", op_type, attributes, inputs, num_outputs, opset, num_threads);
}

absl::StatusOr<std::vector<Tensor>> RunDomainNode(const std::string& domain,
                                                  const std::string& op_type,
                                                  const std::vector<std::string>& attributes,
                                                  const std::vector<Tensor>& inputs,
                                                  int num_outputs, int64_t opset,
                                                  int num_threads) {
  v1::Graph proto;
  v1::Node* node = proto.add_nodes();
  node->set_name("n");
  node->set_op_type(op_type);
  node->set_domain(domain);
  for (const std::string& text : attributes) {
    if (!google::protobuf::TextFormat::ParseFromString(text, node->add_attributes())) {
      return absl::InvalidArgumentError(absl::StrCat("bad attribute text: ", text));
    }
  }
  std::vector<Tensor> fed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      node->add_inputs("");
      continue;
    }
    const std::string name = absl::StrCat("in", i);
    node->add_inputs(name);
    proto.add_inputs()->set_name(name);
    fed.push_back(inputs[i]);
  }
  for (int i = 0; i < num_outputs; ++i) {
    const std::string name = absl::StrCat("out", i);
    node->add_outputs(name);
    proto.add_outputs()->set_name(name);
  }
  if (opset > 0) {
    v1::OpsetImport* o = proto.add_opset_imports();
    o->set_version(opset);
  }
  absl::StatusOr<Graph> graph = GraphFromProto(std::move(proto));
  if (!graph.ok()) return graph.status();
  ExecutorOptions options;
  options.num_threads = num_threads;
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::Create(*std::move(graph), TestRegistry(), options);
  if (!ex.ok()) return ex.status();
  absl::StatusOr<RunResult> r = (*ex)->RunPositional(fed);
  if (!r.ok()) return r.status();
  return std::move(r->outputs);
}

Tensor F32(std::vector<float> values, Shape shape) {
  return Tensor::FromVector<float>(v1::DT_FLOAT32, values, std::move(shape));
}

Tensor I64(std::vector<int64_t> values, Shape shape) {
  return Tensor::FromVector<int64_t>(v1::DT_INT64, values, std::move(shape));
}

std::vector<float> ToFloats(const Tensor& t) {
  std::vector<float> out(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) out[i] = static_cast<float>(t.ElementAsDouble(i));
  return out;
}

std::vector<int64_t> ToInts(const Tensor& t) {
  std::vector<int64_t> out(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) out[i] = t.ElementAsInt64(i);
  return out;
}

std::vector<float> Random(int64_t n, int seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

}  // namespace graphopt::runtime
