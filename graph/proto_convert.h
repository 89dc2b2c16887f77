#ifndef GRAPHOPT_GRAPH_PROTO_CONVERT_H_
#define GRAPHOPT_GRAPH_PROTO_CONVERT_H_

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "proto/graph.pb.h"

namespace graphopt {

// Builds the IR from the wire form. Takes the proto by value so callers can move a large graph
// in (initializer data is moved, not copied). INVALID_ARGUMENT, naming the node or value, for:
// a value produced twice (by two nodes, or by a node and a graph input/initializer), an empty
// output name where a value is required, a node listing the same output twice, a duplicate
// graph input or initializer, an attribute without a name or without a value, duplicate
// attribute names on one node. Values read but never defined are kept (VerifyGraph reports
// them, naming the reader).
absl::StatusOr<Graph> GraphFromProto(v1::Graph proto);

struct ToProtoOptions {
  // Write value_info entries with the known types of intermediate values.
  bool value_info = true;
};

// Writes live nodes in Graph::TopologicalOrder() (node-id order when the graph has a cycle),
// inputs and outputs in their order, live initializers in their original order and value_info
// in value-id order: the same graph always serializes to the same bytes.
v1::Graph GraphToProto(const Graph& graph, const ToProtoOptions& options = {});
// The same, moving the initializer bytes out of `graph` instead of copying them (the graph is
// left without initializer data).
v1::Graph GraphToProto(Graph&& graph, const ToProtoOptions& options = {});

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_PROTO_CONVERT_H_
