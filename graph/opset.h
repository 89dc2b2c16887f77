#ifndef GRAPHOPT_GRAPH_OPSET_H_
#define GRAPHOPT_GRAPH_OPSET_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "graph/graph.h"

namespace graphopt {

// Whether `domain` is the default ONNX domain, which has two spellings: "" and "ai.onnx".
inline bool IsDefaultDomain(absl::string_view domain) {
  return domain.empty() || domain == "ai.onnx";
}

// The opset version `graph` imports for `domain` (either spelling of the default domain matches
// the other), or 0 when it imports none for it: then the newest semantics apply, as inference,
// the passes and the runtime all assume. The first matching import wins.
int64_t OpsetVersion(const Graph& graph, absl::string_view domain);

// OpsetVersion of the default domain: the version the builtin ops' ONNX semantics follow.
inline int64_t DefaultDomainOpset(const Graph& graph) { return OpsetVersion(graph, ""); }

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_OPSET_H_
