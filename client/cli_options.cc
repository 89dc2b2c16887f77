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

absl::StatusOr<std::vector<v1::PassSpec>> ParsePassList(absl::string_view text) {
  std::vector<v1::PassSpec> passes;
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError("--passes: empty pass list");
  }
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    std::pair<absl::string_view, absl::string_view> name_and_options =
        absl::StrSplit(item, absl::MaxSplits(':', 1));
    const absl::string_view name = absl::StripAsciiWhitespace(name_and_options.first);
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--passes: empty pass name in '", text, "'"));
    }
    v1::PassSpec& spec = passes.emplace_back();
    spec.set_name(std::string(name));
    const absl::string_view options = absl::StripAsciiWhitespace(name_and_options.second);
    if (options.empty()) continue;
    for (absl::string_view option : absl::StrSplit(options, ';', absl::SkipWhitespace())) {
      const size_t equals = option.find('=');
      if (equals == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--passes: option '", absl::StripAsciiWhitespace(option), "' of pass '", name,
            "' is not key=value"));
      }
      const std::string key(absl::StripAsciiWhitespace(option.substr(0, equals)));
      const std::string value(absl::StripAsciiWhitespace(option.substr(equals + 1)));
      if (key.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--passes: option without a key for pass '", name, "'"));
      }
      if (!spec.mutable_options()->insert({key, value}).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("--passes: option '", key, "' given twice for pass '", name, "'"));
      }
    }
  }
  return passes;
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
