#ifndef GRAPHOPT_PASSES_PLAN_MEMORY_TEST_UTIL_H_
#define GRAPHOPT_PASSES_PLAN_MEMORY_TEST_UTIL_H_

#include <cstdint>
#include <string>

#include "proto/graph.pb.h"

namespace graphopt {
namespace testing {

// A random graph for memory-planning tests, the same for the same seed: float32 values of shape
// [rows, cols] through unary activations (in place), Add/Mul with equal shapes or a broadcast
// bias, MatMul, Concat, Split, Transpose, views (Reshape, Flatten, Identity), and now and then
// an If whose branches read outer values; some intermediates are also graph outputs. With
// `symbolic_rows` the rows are the symbol "batch". Graph inputs are "x0" and "x1".
v1::Graph RandomPlanningGraph(uint32_t seed, int num_nodes, bool symbolic_rows = false);

// `graph` in protobuf text format (what PassTestEnv::Run takes).
std::string GraphText(const v1::Graph& graph);

}  // namespace testing
}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_PLAN_MEMORY_TEST_UTIL_H_
