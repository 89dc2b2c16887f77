#include "client/graph_io.h"

#include <cerrno>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/message.h"
#include "google/protobuf/unknown_field_set.h"
#include "graph/proto_util.h"
#include "util/file_util.h"

namespace graphopt {
namespace {

// Collects the text parser's errors as "source:line:col: message" (1-based).
class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit ErrorCollector(absl::string_view source) : source_(source) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(absl::StrCat(source_, ":", line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int /*line*/, google::protobuf::io::ColumnNumber /*column*/,
                  const std::string& /*message*/) override {}

  std::string Summary() const {
    if (errors_.empty()) return absl::StrCat(source_, ": malformed text format");
    return absl::StrJoin(errors_, "; ");
  }

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

// Whether `message` or any message below it holds fields unknown to the schema.
bool HasUnknownFields(const google::protobuf::Message& message) {
  std::vector<const google::protobuf::Message*> pending = {&message};
  while (!pending.empty()) {
    const google::protobuf::Message* current = pending.back();
    pending.pop_back();
    const google::protobuf::Reflection* reflection = current->GetReflection();
    if (!reflection->GetUnknownFields(*current).empty()) return true;
    std::vector<const google::protobuf::FieldDescriptor*> fields;
    reflection->ListFields(*current, &fields);
    for (const google::protobuf::FieldDescriptor* field : fields) {
      if (field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) continue;
      if (field->is_repeated()) {
        const int size = reflection->FieldSize(*current, field);
        for (int i = 0; i < size; ++i) {
          pending.push_back(&reflection->GetRepeatedMessage(*current, field, i));
        }
      } else {
        pending.push_back(&reflection->GetMessage(*current, field));
      }
    }
  }
  return false;
}

absl::StatusOr<v1::Graph> ParseGraphBinary(const std::string& bytes, const std::string& path) {
  v1::Graph graph;
  if (!graph.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a valid binary graphopt.v1.Graph"));
  }
  return graph;
}

}  // namespace

GraphFormat FormatForPath(absl::string_view path) {
  const std::string lower = absl::AsciiStrToLower(path);
  for (const char* extension : {".pbtxt", ".txt", ".textproto", ".prototxt"}) {
    if (absl::EndsWith(lower, extension)) return GraphFormat::kText;
  }
  return GraphFormat::kBinary;
}

absl::StatusOr<v1::Graph> ParseGraphText(absl::string_view text, absl::string_view source) {
  v1::Graph graph;
  if (absl::Status s = ParseTextProto(text, source, &graph); !s.ok()) return s;
  return graph;
}

absl::Status ParseTextProto(absl::string_view text, absl::string_view source,
                            google::protobuf::Message* message) {
  ErrorCollector errors(source);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (text.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": text larger than 2 GiB, the protobuf limit"));
  }
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&input, message)) {
    return absl::InvalidArgumentError(errors.Summary());
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Graph> ReadGraphFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  if (FormatForPath(path) == GraphFormat::kText) return ParseGraphText(*bytes, path);

  absl::StatusOr<v1::Graph> binary = ParseGraphBinary(*bytes, path);
  if (binary.ok() && !HasUnknownFields(*binary)) return binary;
  absl::StatusOr<v1::Graph> text = ParseGraphText(*bytes, path);
  if (text.ok()) return text;
  if (binary.ok()) return binary;  // Unknown fields, but not text either: keep the binary.
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": neither a binary graphopt.v1.Graph nor text format (",
                   text.status().message(), ")"));
}

absl::Status WriteGraphFile(const std::string& path, const v1::Graph& graph) {
  std::string bytes;
  if (FormatForPath(path) == GraphFormat::kText) {
    if (!google::protobuf::TextFormat::PrintToString(graph, &bytes)) {
      return absl::InternalError(absl::StrCat(path, ": cannot print graph as text format"));
    }
  } else {
    if (graph.ByteSizeLong() > static_cast<size_t>(std::numeric_limits<int>::max())) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": graph is larger than 2 GiB, the protobuf limit"));
    }
    bytes = SerializeDeterministic(graph);
  }
  return WriteFileAtomically(path, bytes);
}

}  // namespace graphopt
