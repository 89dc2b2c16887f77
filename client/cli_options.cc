#include "client/cli_options.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

}  // namespace graphopt
