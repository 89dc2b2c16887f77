#ifndef GRAPHOPT_GRAPH_PROTO_UTIL_H_
#define GRAPHOPT_GRAPH_PROTO_UTIL_H_

#include <string>

#include "google/protobuf/message_lite.h"

namespace graphopt {

// Appends `message` serialized deterministically (map entries sorted by key) to `out`: equal
// messages always give equal bytes, which keys, caches and byte-identical output rely on.
void AppendSerializedDeterministic(const google::protobuf::MessageLite& message,
                                   std::string* out);

// `message` serialized deterministically.
std::string SerializeDeterministic(const google::protobuf::MessageLite& message);

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_PROTO_UTIL_H_
