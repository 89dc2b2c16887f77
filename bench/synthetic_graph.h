#ifndef GRAPHOPT_BENCH_SYNTHETIC_GRAPH_H_
#define GRAPHOPT_BENCH_SYNTHETIC_GRAPH_H_

#include <cstdint>

#include "proto/graph.pb.h"

namespace graphopt {

// A graph of about `num_nodes` nodes made of repeated blocks that give every default pass work:
//   a = Relu(prev); b = Identity(a); c = Add(b, w); d1 = Mul(a, a); d2 = Mul(a, a) (duplicate);
//   dead = Exp(d1) (unused); e = Add(c, d2); prev = Dropout(e)
// over an input of type float32[batch, 64] and one shared [64] weight.
v1::Graph MakeSyntheticGraph(int64_t num_nodes);

}  // namespace graphopt

#endif  // GRAPHOPT_BENCH_SYNTHETIC_GRAPH_H_
