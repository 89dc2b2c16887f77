#ifndef GRAPHOPT_CLIENT_MODEL_SUMMARY_H_
#define GRAPHOPT_CLIENT_MODEL_SUMMARY_H_

#include <string>

#include "absl/strings/string_view.h"
#include "proto/graph.pb.h"

namespace graphopt {

// The text `graphopt inspect` prints: the model's origin (producer, IR version, opsets), the
// graph inputs and outputs with their types, the parameter count and bytes of the
// initializers (by element type), the Constant nodes' data, and a histogram of op types (most
// frequent first, ties by name). `source` names the file and its format in the first line.
std::string FormatModelSummary(const v1::Graph& graph, absl::string_view source);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_MODEL_SUMMARY_H_
