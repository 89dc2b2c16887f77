#include "passes/pass.h"

#include "absl/strings/str_cat.h"

namespace graphopt {

absl::string_view AnalysisName(Analysis analysis) {
  switch (analysis) {
    case Analysis::kTypes:
      return "types";
    case Analysis::kShapes:
      return "shapes";
  }
  return "unknown";
}

std::vector<Analysis> AnalysisSet::ToVector() const {
  std::vector<Analysis> out;
  for (int i = 0; i < kNumAnalyses; ++i) {
    Analysis a = static_cast<Analysis>(i);
    if (contains(a)) out.push_back(a);
  }
  return out;
}

absl::Status PassContext::CheckStop(absl::string_view where) const {
  if (stop == nullptr || !stop->ShouldStop()) return absl::OkStatus();
  return stop->Check(where.empty() ? absl::StrCat("pass '", pass_name, "'")
                                   : absl::StrCat("pass '", pass_name, "' at ", where));
}

absl::Status PassRegistry::Register(PassInfo info) {
  if (info.name.empty() || !info.factory) {
    return absl::InvalidArgumentError(
        absl::StrCat("pass '", info.name, "': a pass needs a name and a factory"));
  }
  const std::string name = info.name;
  const AnalysisSet provides = info.provides;
  if (!passes_.emplace(name, std::move(info)).second) {
    return absl::AlreadyExistsError(absl::StrCat("pass '", name, "' is already registered"));
  }
  order_.push_back(name);
  for (Analysis a : provides.ToVector()) provider_[static_cast<int>(a)].push_back(name);
  return absl::OkStatus();
}

const PassInfo* PassRegistry::Find(absl::string_view name) const {
  auto it = passes_.find(name);
  return it == passes_.end() ? nullptr : &it->second;
}

std::vector<const PassInfo*> PassRegistry::List() const {
  std::vector<const PassInfo*> out;
  out.reserve(passes_.size());
  for (const auto& [name, info] : passes_) out.push_back(&info);
  return out;
}

std::vector<const PassInfo*> PassRegistry::InRegistrationOrder() const {
  std::vector<const PassInfo*> out;
  out.reserve(order_.size());
  for (const std::string& name : order_) out.push_back(Find(name));
  return out;
}

const PassInfo* PassRegistry::Provider(Analysis analysis) const {
  const std::vector<std::string>& names = provider_[static_cast<int>(analysis)];
  return names.empty() ? nullptr : Find(names.front());
}

}  // namespace graphopt
