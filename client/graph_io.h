#ifndef GRAPHOPT_CLIENT_GRAPH_IO_H_
#define GRAPHOPT_CLIENT_GRAPH_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "proto/graph.pb.h"

namespace graphopt {

// How a graph file is encoded.
enum class GraphFormat {
  kBinary,  // serialized graphopt.v1.Graph
  kText,    // protobuf text format of graphopt.v1.Graph
};

// The format a path's extension names: .pbtxt, .txt, .textproto and .prototxt are text
// (case-insensitive), anything else binary.
GraphFormat FormatForPath(absl::string_view path);

// Reads a graphopt.v1.Graph from `path`. A text extension (see FormatForPath) is parsed as
// text format only. Any other file is parsed as binary first; when that fails, or leaves
// fields the schema does not know (the usual sign of a text file read as bytes), it is parsed
// as text, and the text result wins if that parse succeeds. Every error names the file:
// NOT_FOUND / PERMISSION_DENIED / ... (from errno) when it cannot be read, INVALID_ARGUMENT
// with the parser's line and column when it does not parse.
absl::StatusOr<v1::Graph> ReadGraphFile(const std::string& path);

// Writes `graph` to `path` in the format its extension names (binary output uses
// deterministic serialization, so equal graphs give equal bytes). The file is written to
// `path`.tmp and renamed, so `path` never holds a partial graph. Errors name the file.
absl::Status WriteGraphFile(const std::string& path, const v1::Graph& graph);

// Parses text-format `text` as a graph; INVALID_ARGUMENT "<source>:<line>:<col>: <reason>".
absl::StatusOr<v1::Graph> ParseGraphText(absl::string_view text, absl::string_view source);

// Parses text-format `text` into `message` (any message type), with errors as above.
absl::Status ParseTextProto(absl::string_view text, absl::string_view source,
                            google::protobuf::Message* message);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_GRAPH_IO_H_
