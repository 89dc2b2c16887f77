#include "client/cli_options.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace graphopt {

namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

bool IsBlank(char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); }

// "'x'", or a description of a character that would not print as itself.
std::string CharText(char c) {
  if (absl::ascii_isprint(static_cast<unsigned char>(c))) return absl::StrCat("'", std::string(1, c), "'");
  return absl::StrCat("byte 0x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
}

// One left-to-right scan of a --passes value: linear in its length, no backtracking.
class PassListParser {
 public:
  explicit PassListParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<v1::PassSpec>> Parse() {
    std::vector<v1::PassSpec> passes;
    if (absl::StripAsciiWhitespace(text_).empty()) {
      return absl::InvalidArgumentError("--passes: empty pass list");
    }
    while (true) {
      SkipBlanks();
      const size_t start = pos_;
      const std::string name = Word();
      SkipBlanks();
      if (name.empty()) {
        if (AtEnd() || Peek() == ',' || Peek() == ':') {
          return Error(start, "", "", "empty pass name (a stray ',' or a missing name)");
        }
        return Error(pos_, "", "",
                     absl::StrCat(CharText(Peek()), " cannot start a pass name (names are "
                                                    "letters, digits, '_', '.', '-')"));
      }
      if (!AtEnd() && Peek() != ',' && Peek() != ':') {
        return Error(pos_, name, "",
                     Peek() == '='
                         ? std::string("options follow ':' (name:key=value;key=value)")
                         : absl::StrCat(CharText(Peek()), " after the name (names are letters, "
                                                          "digits, '_', '.', '-'; options "
                                                          "follow ':')"));
      }
      v1::PassSpec& spec = passes.emplace_back();
      spec.set_name(name);
      if (!AtEnd() && Peek() == ':') {
        ++pos_;
        if (absl::Status s = Options(spec); !s.ok()) return s;
      }
      if (AtEnd()) break;
      ++pos_;  // ','
    }
    return passes;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  void SkipBlanks() {
    while (!AtEnd() && IsBlank(Peek())) ++pos_;
  }
  std::string Word() {
    const size_t start = pos_;
    while (!AtEnd() && IsNameChar(Peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  absl::Status Error(size_t pos, absl::string_view pass, absl::string_view key,
                     absl::string_view what) const {
    std::string where = absl::StrCat("--passes: column ", pos + 1, ": ");
    if (!pass.empty()) absl::StrAppend(&where, "pass '", pass, "': ");
    if (!key.empty()) absl::StrAppend(&where, "option '", key, "': ");
    return absl::InvalidArgumentError(absl::StrCat(where, what));
  }

  // The options after "name:", up to the ',' that ends the pass or the end of the text.
  absl::Status Options(v1::PassSpec& spec) {
    const std::string& pass = spec.name();
    while (true) {
      SkipBlanks();
      const size_t start = pos_;
      const std::string key = Word();
      SkipBlanks();
      if (key.empty()) {
        if (AtEnd() || Peek() == ',' || Peek() == ';') {
          return Error(start, pass, "", "empty option (a stray ':' or ';')");
        }
        if (Peek() == '=') return Error(pos_, pass, "", "option without a key");
        return Error(pos_, pass, "",
                     absl::StrCat(CharText(Peek()), " cannot start an option key (keys are "
                                                    "letters, digits, '_', '.', '-')"));
      }
      if (AtEnd() || Peek() != '=') {
        return Error(pos_, pass, key,
                     AtEnd() || Peek() == ',' || Peek() == ';'
                         ? std::string("is not key=value (a value holding ',' or ';' is "
                                       "quoted: key=\"a,b\")")
                         : absl::StrCat(CharText(Peek()), " after the key (keys are letters, "
                                                          "digits, '_', '.', '-')"));
      }
      ++pos_;  // '='
      absl::StatusOr<std::string> value = Value(pass, key);
      if (!value.ok()) return value.status();
      if (!spec.mutable_options()->insert({key, *std::move(value)}).second) {
        return Error(start, pass, key, "given twice");
      }
      if (AtEnd() || Peek() == ',') return absl::OkStatus();
      ++pos_;  // ';'
    }
  }

  // A value: unquoted characters, "quoted" pieces and \-escaped characters, up to an unquoted
  // ',' or ';' or the end. Blanks before and after it are not part of it.
  absl::StatusOr<std::string> Value(absl::string_view pass, absl::string_view key) {
    SkipBlanks();
    std::string value;
    size_t blanks = std::string::npos;  // where the current run of unquoted blanks started
    while (!AtEnd() && Peek() != ',' && Peek() != ';') {
      const char c = Peek();
      if (IsBlank(c)) {
        if (blanks == std::string::npos) blanks = pos_;
        ++pos_;
        continue;
      }
      if (blanks != std::string::npos) {
        return Error(blanks, pass, key,
                     "unquoted blank inside the value (list entries are separated by ',' "
                     "inside quotes, as in key=\"a,b\"; quote the value if the blank belongs "
                     "to it)");
      }
      if (c == '=') {
        return Error(pos_, pass, key,
                     "unquoted '=' inside the value (a missing ';' between options? quote the "
                     "value if '=' belongs to it)");
      }
      if (c == '\\') {
        if (pos_ + 1 >= text_.size()) return Error(pos_, pass, key, "trailing backslash");
        value += text_[pos_ + 1];
        pos_ += 2;
        continue;
      }
      if (c == '"') {
        const size_t open = pos_++;
        while (true) {
          if (AtEnd()) return Error(open, pass, key, "unterminated '\"'");
          const char q = Peek();
          if (q == '"') break;
          if (q == '\\') {
            if (pos_ + 1 >= text_.size()) return Error(open, pass, key, "unterminated '\"'");
            value += text_[pos_ + 1];
            pos_ += 2;
            continue;
          }
          value += q;
          ++pos_;
        }
        ++pos_;  // the closing '"'
        continue;
      }
      value += c;
      ++pos_;
    }
    return value;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<v1::PassSpec>> ParsePassList(absl::string_view text) {
  return PassListParser(text).Parse();
}

absl::StatusOr<std::map<std::string, int64_t>> ParseDimBindings(
    const std::vector<std::string>& bindings) {
  std::map<std::string, int64_t> result;
  for (const std::string& binding : bindings) {
    const size_t equals = binding.find('=');
    if (equals == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--bind: '", binding, "' is not symbol=N"));
    }
    const std::string symbol(absl::StripAsciiWhitespace(binding.substr(0, equals)));
    const absl::string_view number =
        absl::StripAsciiWhitespace(absl::string_view(binding).substr(equals + 1));
    int64_t size = 0;
    if (symbol.empty() || !absl::SimpleAtoi(number, &size)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--bind: '", binding, "' is not symbol=N with an integer N"));
    }
    if (!result.insert({symbol, size}).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--bind: symbol '", symbol, "' bound twice"));
    }
  }
  return result;
}

namespace {

bool IsFloatingPoint(v1::DataType dtype) {
  return dtype == v1::DT_FLOAT32 || dtype == v1::DT_FLOAT64 || dtype == v1::DT_FLOAT16 ||
         dtype == v1::DT_BFLOAT16;
}

// Appends `names` (checked against `known`) to `out`, skipping names already there.
absl::Status AppendChecked(absl::string_view option, const std::vector<std::string>& names,
                           const absl::flat_hash_set<std::string>& known,
                           std::vector<std::string>* out) {
  for (const std::string& name : names) {
    if (name.find_first_of(",;") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          option, ": the gradient pass cannot name '", name, "' (it holds ',' or ';')"));
    }
    if (!known.contains(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat(option, ": the model has no value '", name, "'"));
    }
    if (std::find(out->begin(), out->end(), name) == out->end()) out->push_back(name);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> GradientPassOptions(const v1::Graph& model,
                                                                       const GradNames& names) {
  absl::flat_hash_set<std::string> known;
  absl::flat_hash_set<std::string> initializers;
  for (const v1::ValueInfo& in : model.inputs()) known.insert(in.name());
  for (const v1::Tensor& t : model.initializers()) {
    known.insert(t.name());
    initializers.insert(t.name());
  }
  for (const v1::Node& node : model.nodes()) {
    for (const std::string& out : node.outputs()) {
      if (!out.empty()) known.insert(out);
    }
  }
  std::vector<std::string> wrt;
  for (const std::string& name : names.wrt) {
    std::vector<std::string> expanded;
    if (name == "params") {
      for (const v1::Tensor& t : model.initializers()) {
        if (IsFloatingPoint(t.dtype())) expanded.push_back(t.name());
      }
    } else if (name == "inputs") {
      for (const v1::ValueInfo& in : model.inputs()) {
        if (!initializers.contains(in.name()) && IsFloatingPoint(in.type().dtype())) {
          expanded.push_back(in.name());
        }
      }
    } else {
      expanded.push_back(name);
    }
    if (absl::Status s = AppendChecked("--wrt", expanded, known, &wrt); !s.ok()) return s;
  }
  if (wrt.empty()) {
    return absl::InvalidArgumentError(
        "--wrt: no value to differentiate with respect to (the model has no floating-point "
        "value of that kind)");
  }
  std::map<std::string, std::string> options;
  options["wrt"] = absl::StrJoin(wrt, ";");
  const std::pair<const char*, const std::vector<std::string>*> lists[] = {
      {"loss", &names.loss}, {"outputs", &names.outputs}, {"stop_gradient", &names.stop_gradient}};
  for (const auto& [key, list] : lists) {
    std::vector<std::string> checked;
    const std::string option =
        absl::StrCat("--", key == std::string("stop_gradient") ? "stop-gradient" : key);
    if (absl::Status s = AppendChecked(option, *list, known, &checked); !s.ok()) return s;
    if (!checked.empty()) options[key] = absl::StrJoin(checked, ";");
  }
  return options;
}

}  // namespace graphopt
