#ifndef GRAPHOPT_CLIENT_OP_FILE_H_
#define GRAPHOPT_CLIENT_OP_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/optimizer.pb.h"

namespace graphopt {

// Reads a file of op descriptors for `graphopt ops register` and `graphopt optimize --ops`:
// a graphopt.v1.OpDescriptorList in protobuf text format (`ops { name: ... }` blocks; rule
// text as adjacent string literals, one per line), or serialized binary when the name ends in
// .pb or .binpb. INVALID_ARGUMENT "<file>:<line>:<col>: <reason>" when it does not parse, or
// naming the file when it holds no descriptor.
absl::StatusOr<v1::OpDescriptorList> ReadOpDescriptorFile(const std::string& path);

// One line per descriptor: "domain::Name v3  (2 inputs, 1 output, shape rule, body)".
std::string FormatOpSummaryLine(const v1::OpDescriptor& op);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_OP_FILE_H_
