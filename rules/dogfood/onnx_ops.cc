#include "rules/dogfood/onnx_ops.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "rules/op_compiler.h"

namespace graphopt {
namespace dogfood {
namespace {

constexpr char kHeader[] =
    R"(# graphopt.v1.OpDescriptorList (protobuf text format): ten builtin ONNX ops whose shape
# functions are written in the rule language (docs/rule-language.md) instead of C++.
#
# Each descriptor is a copy of the builtin's (inputs, outputs, attributes, type constraints,
# fusion pattern, ...); only shape_rule differs: {expr: ...} instead of {builtin: ...}.
# //rules/dogfood:rule_agreement_test checks that each rule gives exactly what the C++ function
# gives (types, dims, shape-tensor contents and errors) on every node of the ONNX test corpus
# and of //models:corpus, also with symbolic input dims.
#
# Edit the rules here (one string literal per source line), then refresh the descriptor fields
# and the layout with
#   bazel run //rules/dogfood:sync_onnx_ops -- --file=$PWD/rules/dogfood/onnx_ops.pbtxt
# (onnx_ops_test fails when the file differs from what that writes).
)";

// Collects the text format parser's errors.
class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (errors_.empty()) errors_ = absl::StrCat(line + 1, ":", column + 1, ": ", message);
  }
  const std::string& errors() const { return errors_; }

 private:
  std::string errors_;
};

// `line` as the contents of a double-quoted text-format string.
std::string Quote(absl::string_view line) {
  std::string out;
  for (char c : line) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          absl::StrAppendFormat(&out, "\\%03o", static_cast<unsigned char>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

}  // namespace

const std::vector<std::string>& DogfoodOps() {
  static const auto* const kOps = new std::vector<std::string>{
      "Add",     "MatMul",     "Gemm",    "Conv",  "Transpose",
      "Concat",  "Reshape",    "ReduceMean", "Softmax", "Gather"};
  return *kOps;
}

absl::StatusOr<v1::OpDescriptorList> ParseOpDescriptorList(absl::string_view text) {
  v1::OpDescriptorList list;
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &list)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a graphopt.v1.OpDescriptorList in text format: ", errors.errors()));
  }
  return list;
}

absl::StatusOr<v1::OpDescriptorList> ReadOpDescriptorList(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<v1::OpDescriptorList> list = ParseOpDescriptorList(text.str());
  if (!list.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", list.status().message()));
  }
  return list;
}

absl::StatusOr<v1::OpDescriptorList> SyncWithBuiltins(const v1::OpDescriptorList& ops,
                                                      const OpRegistry& builtins) {
  v1::OpDescriptorList out;
  absl::flat_hash_set<std::string> seen;
  for (const v1::OpDescriptor& op : ops.ops()) {
    if (!seen.insert(op.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("op '", op.name(), "' is listed twice"));
    }
    const OpDef* builtin = builtins.Find("", op.name());
    if (builtin == nullptr) {
      return absl::NotFoundError(absl::StrCat("op '", op.name(), "' is not a builtin op"));
    }
    if (!op.shape_rule().has_expr()) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", op.name(), "' has no shape_rule { expr: ... }"));
    }
    v1::OpDescriptor* d = out.add_ops();
    *d = builtin->descriptor;
    d->mutable_shape_rule()->set_expr(op.shape_rule().expr());
  }
  return out;
}

std::string FormatOpDescriptorList(const v1::OpDescriptorList& ops) {
  std::string out = kHeader;
  google::protobuf::TextFormat::Printer printer;
  printer.SetInitialIndentLevel(1);
  for (const v1::OpDescriptor& op : ops.ops()) {
    v1::OpDescriptor rest = op;
    rest.clear_shape_rule();
    std::string fields;
    printer.PrintToString(rest, &fields);
    absl::StrAppend(&out, "\nops {\n", fields);
    if (op.shape_rule().has_builtin()) {
      absl::StrAppend(&out, "  shape_rule { builtin: \"", Quote(op.shape_rule().builtin()),
                      "\" }\n");
    } else if (op.shape_rule().has_expr()) {
      absl::StrAppend(&out, "  shape_rule {\n    expr:\n");
      // One literal per line, each keeping its newline; text format joins adjacent literals.
      absl::string_view expr = op.shape_rule().expr();
      while (!expr.empty()) {
        const size_t nl = expr.find('\n');
        const size_t len = nl == absl::string_view::npos ? expr.size() : nl + 1;
        absl::StrAppend(&out, "      \"", Quote(expr.substr(0, len)), "\"\n");
        expr.remove_prefix(len);
      }
      absl::StrAppend(&out, "  }\n");
    }
    absl::StrAppend(&out, "}\n");
  }
  return out;
}

absl::Status RegisterWithRuleOps(const OpRegistry& builtins, const v1::OpDescriptorList& ops,
                                 OpRegistry* out) {
  absl::flat_hash_map<std::pair<std::string, std::string>, const v1::OpDescriptor*> replaced;
  for (const v1::OpDescriptor& d : ops.ops()) {
    if (builtins.Find(d.domain(), d.name()) == nullptr) {
      return absl::NotFoundError(absl::StrCat("op '", OpLabel(d.domain(), d.name()),
                                              "' is not a builtin op"));
    }
    replaced[{d.domain(), d.name()}] = &d;
  }
  for (const OpDef* op : builtins.List()) {
    auto it = replaced.find({op->descriptor.domain(), op->descriptor.name()});
    if (it == replaced.end()) {
      if (absl::Status s = out->Register(*op); !s.ok()) return s;
      continue;
    }
    absl::StatusOr<OpDef> def = CompileOpDescriptor(*it->second, builtins);
    if (!def.ok()) return def.status();
    if (absl::Status s = out->Register(*std::move(def)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace dogfood
}  // namespace graphopt
