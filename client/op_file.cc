#include "client/op_file.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/graph_io.h"
#include "util/file_util.h"

namespace graphopt {

absl::StatusOr<v1::OpDescriptorList> ReadOpDescriptorFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  v1::OpDescriptorList list;
  if (absl::EndsWithIgnoreCase(path, ".pb") || absl::EndsWithIgnoreCase(path, ".binpb")) {
    if (!list.ParseFromString(*bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a valid binary graphopt.v1.OpDescriptorList"));
    }
  } else if (absl::Status s = ParseTextProto(*bytes, path, &list); !s.ok()) {
    return s;
  }
  if (list.ops_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no op descriptors (expected `ops { name: ... }` blocks)"));
  }
  return list;
}

std::string FormatOpSummaryLine(const v1::OpDescriptor& op) {
  std::vector<std::string> parts = {
      absl::StrCat(op.inputs_size(), op.inputs_size() == 1 ? " input" : " inputs"),
      absl::StrCat(op.outputs_size(), op.outputs_size() == 1 ? " output" : " outputs")};
  if (op.shape_rule().has_builtin()) {
    parts.push_back(absl::StrCat("shape rule: builtin ", op.shape_rule().builtin()));
  } else if (op.shape_rule().has_expr()) {
    parts.push_back("shape rule");
  }
  if (op.type_rule().has_expr()) parts.push_back("type rule");
  if (op.cost().flops().has_expr() || op.cost().bytes_moved().has_expr()) parts.push_back("cost");
  if (op.body().nodes_size() > 0) {
    parts.push_back(absl::StrCat("body of ", op.body().nodes_size(), " nodes"));
  }
  if (op.has_side_effects()) parts.push_back("side effects");
  if (!op.extensions().empty()) parts.push_back(absl::StrCat(op.extensions().size(), " extensions"));
  const std::string name = op.domain().empty() ? op.name() : absl::StrCat(op.domain(), "::", op.name());
  return absl::StrCat(name, " v", op.version(), "  (", absl::StrJoin(parts, ", "), ")");
}

}  // namespace graphopt
