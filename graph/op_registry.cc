#include "graph/op_registry.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace graphopt {
namespace {

// Matches an attribute value against a declared attribute type.
bool AttributeMatchesType(const v1::Attribute& a, v1::AttributeType type) {
  switch (type) {
    case v1::ATTR_INT:
      return a.value_case() == v1::Attribute::kI;
    case v1::ATTR_FLOAT:
      return a.value_case() == v1::Attribute::kF;
    case v1::ATTR_STRING:
      return a.value_case() == v1::Attribute::kS;
    case v1::ATTR_TENSOR:
      return a.value_case() == v1::Attribute::kT;
    case v1::ATTR_GRAPH:
      return a.value_case() == v1::Attribute::kG;
    case v1::ATTR_INTS:
      return a.value_case() == v1::Attribute::kInts;
    case v1::ATTR_FLOATS:
      return a.value_case() == v1::Attribute::kFloats;
    case v1::ATTR_STRINGS:
      return a.value_case() == v1::Attribute::kStrings;
    case v1::ATTR_TENSORS:
      return a.value_case() == v1::Attribute::kTensors;
    case v1::ATTR_GRAPHS:
      return a.value_case() == v1::Attribute::kGraphs;
    case v1::ATTR_DTYPE:
      // ONNX encodes data types as ints; accept both.
      return a.value_case() == v1::Attribute::kDtype || a.value_case() == v1::Attribute::kI;
    case v1::ATTR_SHAPE:
      return a.value_case() == v1::Attribute::kShape || a.value_case() == v1::Attribute::kInts;
    case v1::ATTR_OPAQUE:
      return a.value_case() == v1::Attribute::kOpaque;
    default:
      return false;
  }
}

absl::Status CheckArgs(const OpDef& def, bool inputs, int* min_count, int* max_count) {
  const auto& args = inputs ? def.descriptor.inputs() : def.descriptor.outputs();
  const char* what = inputs ? "inputs" : "outputs";
  const std::string op = OpLabel(def.descriptor.domain(), def.descriptor.name());
  *min_count = 0;
  *max_count = 0;
  bool seen_optional = false;
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < args.size(); ++i) {
    const v1::ArgSpec& a = args[i];
    std::string where = absl::StrCat("op ", op, ": ", what, "[", i, "]");
    if (a.name().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": empty name"));
    if (!names.insert(a.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": duplicate argument name '", a.name(), "'"));
    }
    if (!a.type_constraint().empty() && !def.type_constraints.contains(a.type_constraint())) {
      return absl::InvalidArgumentError(absl::StrCat(where, " '", a.name(),
                                                     "': unknown type constraint '",
                                                     a.type_constraint(), "'"));
    }
    if (!a.dtype_from_attribute().empty()) {
      const v1::AttributeSpec* spec = def.attribute_spec(a.dtype_from_attribute());
      if (inputs || spec == nullptr ||
          (spec->type() != v1::ATTR_INT && spec->type() != v1::ATTR_DTYPE)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " '", a.name(), "': dtype_from_attribute '",
                         a.dtype_from_attribute(),
                         "' must name an int or dtype attribute of the op (outputs only)"));
      }
    }
    switch (a.arity()) {
      case v1::ARITY_SINGLE:
        if (seen_optional && inputs) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, " '", a.name(), "': a required input cannot follow an optional one"));
        }
        ++*min_count;
        ++*max_count;
        break;
      case v1::ARITY_OPTIONAL:
        seen_optional = true;
        ++*max_count;
        break;
      case v1::ARITY_VARIADIC:
        if (i != args.size() - 1) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, " '", a.name(), "': only the last argument may be variadic"));
        }
        if (a.min_count() < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, " '", a.name(), "': negative min_count"));
        }
        *min_count += a.min_count();
        *max_count = OpDef::kUnbounded;
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat(where, " '", a.name(), "': unknown arity ", a.arity()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const v1::ArgSpec* OpDef::input_spec(int index) const {
  const auto& args = descriptor.inputs();
  if (index < 0 || args.empty()) return nullptr;
  if (index < args.size()) return &args[index];
  const v1::ArgSpec& last = args[args.size() - 1];
  return last.arity() == v1::ARITY_VARIADIC ? &last : nullptr;
}

const v1::ArgSpec* OpDef::output_spec(int index) const {
  const auto& args = descriptor.outputs();
  if (index < 0 || args.empty()) return nullptr;
  if (index < args.size()) return &args[index];
  const v1::ArgSpec& last = args[args.size() - 1];
  return last.arity() == v1::ARITY_VARIADIC ? &last : nullptr;
}

const v1::AttributeSpec* OpDef::attribute_spec(absl::string_view name) const {
  auto it = attribute_specs.find(name);
  return it == attribute_specs.end() ? nullptr : it->second;
}

bool HasEffects(const OpDef& op) {
  return op.descriptor.has_side_effects() || op.descriptor.mutated_inputs_size() > 0;
}

std::string OpLabel(absl::string_view domain, absl::string_view name) {
  if (domain.empty()) return std::string(name);
  return absl::StrCat(domain, "::", name);
}

bool AttributeValueMatches(const v1::Attribute& a, v1::AttributeType type) {
  return AttributeMatchesType(a, type);
}

absl::Status ValidateOpDef(const OpDef& def) {
  const v1::OpDescriptor& d = def.descriptor;
  const std::string op = OpLabel(d.domain(), d.name());
  if (d.name().empty()) return absl::InvalidArgumentError("op descriptor without a name");
  for (char c : d.name()) {
    if (!(absl::ascii_isalnum(c) || c == '_' || c == '.')) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", d.name(), "': name may only contain letters, digits, '_' and '.'"));
    }
  }
  if (!def.shape_fn && d.shape_rule().kind_case() == v1::Rule::KIND_NOT_SET) {
    return absl::InvalidArgumentError(
        absl::StrCat("op ", op, ": shape_rule is required (every op must state its shapes)"));
  }
  if (!def.shape_fn) {
    return absl::UnimplementedError(absl::StrCat(
        "op ", op, ": shape_rule '", d.shape_rule().ShortDebugString(),
        "' has no implementation in this server (rule-language descriptors are not supported yet)"));
  }
  absl::flat_hash_set<std::string> constraint_names;
  for (int i = 0; i < d.type_constraints_size(); ++i) {
    const v1::TypeConstraint& c = d.type_constraints(i);
    if (c.name().empty() || !constraint_names.insert(c.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op ", op, ": type_constraints[", i, "]: empty or duplicate name '", c.name(), "'"));
    }
    if (c.allowed().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "op ", op, ": type constraint '", c.name(), "' allows no data type"));
    }
  }
  for (int i = 0; i < d.attributes_size(); ++i) {
    const v1::AttributeSpec& a = d.attributes(i);
    std::string where = absl::StrCat("op ", op, ": attributes[", i, "] '", a.name(), "'");
    if (a.name().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": empty name"));
    if (a.type() == v1::ATTR_UNDEFINED) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": type is not set"));
    }
    if (a.has_default_value()) {
      if (a.required()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": a required attribute cannot have a default"));
      }
      if (!AttributeMatchesType(a.default_value(), a.type())) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": default value does not match the declared type ",
            v1::AttributeType_Name(a.type())));
      }
    }
  }
  const int num_inputs_declared = d.inputs_size();
  const int num_outputs_declared = d.outputs_size();
  for (const v1::InPlacePair& p : d.inplace()) {
    if (p.input() < 0 || p.input() >= num_inputs_declared || p.output() < 0 ||
        p.output() >= num_outputs_declared) {
      return absl::InvalidArgumentError(absl::StrCat("op ", op, ": in-place pair (input ",
                                                     p.input(), ", output ", p.output(),
                                                     ") is out of range"));
    }
  }
  for (int idx : d.mutated_inputs()) {
    if (idx < 0 || idx >= num_inputs_declared) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", op, ": mutated input ", idx, " is out of range"));
    }
  }
  for (int idx : d.ignored_inputs()) {
    if (idx < 0 || idx >= num_inputs_declared) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", op, ": ignored input ", idx, " is out of range"));
    }
  }
  if (d.outputs_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("op ", op, ": must declare an output"));
  }
  return absl::OkStatus();
}

absl::Status OpRegistry::Register(OpDef def) {
  // Derived tables first: validation reads them.
  def.attribute_specs.clear();
  def.type_constraints.clear();
  for (const v1::AttributeSpec& a : def.descriptor.attributes()) {
    if (!def.attribute_specs.try_emplace(a.name(), &a).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", OpLabel(def.descriptor.domain(), def.descriptor.name()),
                       ": duplicate attribute '", a.name(), "'"));
    }
  }
  for (const v1::TypeConstraint& c : def.descriptor.type_constraints()) {
    def.type_constraints.try_emplace(c.name(), &c);
  }
  if (absl::Status s = ValidateOpDef(def); !s.ok()) return s;
  if (absl::Status s = CheckArgs(def, true, &def.min_inputs, &def.max_inputs); !s.ok()) return s;
  if (absl::Status s = CheckArgs(def, false, &def.min_outputs, &def.max_outputs); !s.ok()) {
    return s;
  }
  auto key = std::make_pair(def.descriptor.domain(), def.descriptor.name());
  if (ops_.contains(key)) {
    return absl::AlreadyExistsError(
        absl::StrCat("op ", OpLabel(key.first, key.second), " is already registered"));
  }
  // The pointers in the derived tables point into `def.descriptor`; rebuild them after the move.
  auto owned = std::make_unique<OpDef>(std::move(def));
  owned->attribute_specs.clear();
  owned->type_constraints.clear();
  owned->required_attributes.clear();
  for (const v1::AttributeSpec& a : owned->descriptor.attributes()) {
    owned->attribute_specs.emplace(a.name(), &a);
    if (a.required()) owned->required_attributes.push_back(&a);
  }
  for (const v1::TypeConstraint& c : owned->descriptor.type_constraints()) {
    owned->type_constraints.emplace(c.name(), &c);
  }
  if (owned->descriptor.mutated_inputs_size() > 0) ++local_mutating_ops_;
  if (owned->descriptor.has_body()) ++local_ops_with_bodies_;
  index_[key.first][key.second] = owned.get();
  ops_.emplace(std::move(key), std::move(owned));
  return absl::OkStatus();
}

bool OpRegistry::AnyLayerCounts(int OpRegistry::*count) const {
  for (const OpRegistry* r = this; r != nullptr; r = r->parent_) {
    if (r->*count > 0) return true;
  }
  return false;
}

bool OpRegistry::HasMutatingOps() const {
  return AnyLayerCounts(&OpRegistry::local_mutating_ops_);
}

bool OpRegistry::HasOpsWithBodies() const {
  return AnyLayerCounts(&OpRegistry::local_ops_with_bodies_);
}

const OpDef* OpRegistry::FindLocal(absl::string_view domain, absl::string_view name) const {
  auto d = index_.find(domain);
  if (d == index_.end()) return nullptr;
  auto it = d->second.find(name);
  return it == d->second.end() ? nullptr : it->second;
}

const OpDef* OpRegistry::Find(absl::string_view domain, absl::string_view name) const {
  // Iterative over the chain of parents: no recursion, no allocation.
  for (const OpRegistry* r = this; r != nullptr; r = r->parent_) {
    if (const OpDef* op = r->FindLocal(domain, name)) return op;
  }
  return nullptr;
}

std::vector<const OpDef*> OpRegistry::ListLocal() const {
  std::vector<const OpDef*> out;
  out.reserve(ops_.size());
  for (const auto& [key, def] : ops_) out.push_back(def.get());
  return out;
}

std::vector<const OpDef*> OpRegistry::List() const {
  if (parent_ == nullptr) return ListLocal();
  // Merge of two sorted lists; the local op wins on equal keys.
  std::vector<const OpDef*> inherited = parent_->List();
  std::vector<const OpDef*> out;
  out.reserve(inherited.size() + ops_.size());
  auto key = [](const OpDef* op) {
    return std::make_pair(absl::string_view(op->descriptor.domain()),
                          absl::string_view(op->descriptor.name()));
  };
  auto local = ops_.begin();
  for (const OpDef* op : inherited) {
    while (local != ops_.end() && key(local->second.get()) < key(op)) {
      out.push_back(local->second.get());
      ++local;
    }
    if (local != ops_.end() && key(local->second.get()) == key(op)) continue;  // shadowed
    out.push_back(op);
  }
  for (; local != ops_.end(); ++local) out.push_back(local->second.get());
  return out;
}

size_t OpRegistry::size() const {
  if (parent_ == nullptr) return ops_.size();
  size_t shadowed = 0;
  for (const auto& [key, def] : ops_) {
    if (parent_->Find(key.first, key.second) != nullptr) ++shadowed;
  }
  return parent_->size() + ops_.size() - shadowed;
}

}  // namespace graphopt
