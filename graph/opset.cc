#include "graph/opset.h"

namespace graphopt {

int64_t OpsetVersion(const Graph& graph, absl::string_view domain) {
  const bool default_domain = IsDefaultDomain(domain);
  for (const v1::OpsetImport& o : graph.opset_imports) {
    const bool match = default_domain ? IsDefaultDomain(o.domain()) : o.domain() == domain;
    if (match) return o.version();
  }
  return 0;
}

}  // namespace graphopt
