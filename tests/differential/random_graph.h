#ifndef GRAPHOPT_TESTS_DIFFERENTIAL_RANDOM_GRAPH_H_
#define GRAPHOPT_TESTS_DIFFERENTIAL_RANDOM_GRAPH_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proto/graph.pb.h"
#include "runtime/tensor.h"

namespace graphopt::differential {

// A generated graph with inputs to run it on.
struct RandomCase {
  v1::Graph graph;
  std::vector<std::pair<std::string, runtime::Tensor>> inputs;
};

// A random, valid, float32 graph of `num_steps` generation steps (each adds one to four nodes)
// from `seed`. The same (seed, n) always gives the same graph, and the graph of (seed, k) for
// k < n is the first k steps of (seed, n) — what MinimalFailingSteps searches.
//
// Steps are drawn to give every optimization something to find: elementwise and broadcast
// chains, additions of 0 and multiplications by 1, double transposes, reshape chains,
// unsqueeze/squeeze pairs, same-type casts, Identity and inference Dropout, exact duplicates of
// earlier nodes, subgraphs of constants only, Shape of static shapes, Conv+BatchNormalization,
// Gemm/MatMul with bias and activations, the Erf form of GELU, decomposed LayerNormalization,
// reductions and softmax. Values stay finite: Exp only reads tanh outputs, Div only divides by
// constants in [1, 2], Sqrt reads Abs.
RandomCase GenerateRandomGraph(uint64_t seed, int num_steps);

}  // namespace graphopt::differential

#endif  // GRAPHOPT_TESTS_DIFFERENTIAL_RANDOM_GRAPH_H_
