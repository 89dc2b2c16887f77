// Writes the benchmark's synthetic graph (see synthetic_graph.h) as a binary graphopt.v1.Graph,
// for running big graphs through the CLI or a server by hand:
//   make_synthetic_graph NUM_NODES OUT.pb
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "bench/synthetic_graph.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s NUM_NODES OUT.pb\n", argv[0]);
    return 2;
  }
  char* end = nullptr;
  const long long n = std::strtoll(argv[1], &end, 10);
  if (end == argv[1] || *end != '\0' || n < 8 || n > 100000000) {
    std::fprintf(stderr, "NUM_NODES must be an integer in 8..100000000\n");
    return 2;
  }
  const graphopt::v1::Graph graph = graphopt::MakeSyntheticGraph(n);
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  if (!out || !graph.SerializeToOstream(&out)) {
    std::fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  std::printf("wrote %s: %d nodes\n", argv[2], graph.nodes_size());
  return 0;
}
