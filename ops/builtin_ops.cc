#include "ops/builtin_ops.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"
#include "ops/grad_table.h"

namespace graphopt {
namespace builtin_internal {

// --- dtype sets -------------------------------------------------------------------------------

DTypes FloatTypes() {
  return {v1::DT_FLOAT16, v1::DT_FLOAT32, v1::DT_FLOAT64, v1::DT_BFLOAT16};
}

DTypes SignedIntTypes() { return {v1::DT_INT8, v1::DT_INT16, v1::DT_INT32, v1::DT_INT64}; }

DTypes IntTypes() {
  return {v1::DT_UINT8,  v1::DT_UINT16, v1::DT_UINT32, v1::DT_UINT64,
          v1::DT_INT8,   v1::DT_INT16,  v1::DT_INT32,  v1::DT_INT64};
}

DTypes NumericTypes() { return Join(IntTypes(), FloatTypes()); }

DTypes AllTypes() {
  return Join(NumericTypes(),
              {v1::DT_BOOL, v1::DT_STRING, v1::DT_COMPLEX64, v1::DT_COMPLEX128});
}

DTypes Join(DTypes a, const DTypes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

DTypes HalfSingleDouble() { return {v1::DT_FLOAT16, v1::DT_FLOAT32, v1::DT_FLOAT64}; }

DTypes NumericNoBfloat16() { return Join(IntTypes(), HalfSingleDouble()); }

// --- OpBuilder --------------------------------------------------------------------------------

OpBuilder::OpBuilder(absl::string_view name, absl::string_view doc) {
  def_.descriptor.set_name(std::string(name));
  def_.descriptor.set_version(1);
  def_.descriptor.set_doc(std::string(doc));
  def_.descriptor.mutable_shape_rule()->set_builtin(std::string(name));
}

v1::ArgSpec* OpBuilder::AddArg(bool input, absl::string_view name, absl::string_view constraint,
                               v1::Arity arity, absl::string_view doc) {
  v1::ArgSpec* a =
      input ? def_.descriptor.add_inputs() : def_.descriptor.add_outputs();
  a->set_name(std::string(name));
  a->set_type_constraint(std::string(constraint));
  a->set_arity(arity);
  a->set_doc(std::string(doc));
  return a;
}

OpBuilder& OpBuilder::Input(absl::string_view name, absl::string_view constraint,
                            absl::string_view doc) {
  AddArg(true, name, constraint, v1::ARITY_SINGLE, doc);
  return *this;
}

OpBuilder& OpBuilder::OptionalInput(absl::string_view name, absl::string_view constraint,
                                    absl::string_view doc) {
  AddArg(true, name, constraint, v1::ARITY_OPTIONAL, doc);
  return *this;
}

OpBuilder& OpBuilder::VariadicInput(absl::string_view name, absl::string_view constraint,
                                    int min_count, absl::string_view doc) {
  AddArg(true, name, constraint, v1::ARITY_VARIADIC, doc)->set_min_count(min_count);
  return *this;
}

OpBuilder& OpBuilder::Output(absl::string_view name, absl::string_view constraint,
                             absl::string_view doc) {
  AddArg(false, name, constraint, v1::ARITY_SINGLE, doc);
  return *this;
}

OpBuilder& OpBuilder::OptionalOutput(absl::string_view name, absl::string_view constraint,
                                     absl::string_view doc) {
  AddArg(false, name, constraint, v1::ARITY_OPTIONAL, doc);
  return *this;
}

OpBuilder& OpBuilder::VariadicOutput(absl::string_view name, absl::string_view constraint,
                                     int min_count, absl::string_view doc) {
  AddArg(false, name, constraint, v1::ARITY_VARIADIC, doc)->set_min_count(min_count);
  return *this;
}

OpBuilder& OpBuilder::OutputFromAttribute(absl::string_view name, absl::string_view attribute,
                                          absl::string_view doc) {
  AddArg(false, name, "", v1::ARITY_SINGLE, doc)
      ->set_dtype_from_attribute(std::string(attribute));
  return *this;
}

v1::AttributeSpec* OpBuilder::AddAttr(absl::string_view name, v1::AttributeType type,
                                      absl::string_view doc) {
  v1::AttributeSpec* a = def_.descriptor.add_attributes();
  a->set_name(std::string(name));
  a->set_type(type);
  a->set_doc(std::string(doc));
  return a;
}

OpBuilder& OpBuilder::Attr(absl::string_view name, v1::AttributeType type,
                           absl::string_view doc) {
  AddAttr(name, type, doc);
  return *this;
}

OpBuilder& OpBuilder::RequiredAttr(absl::string_view name, v1::AttributeType type,
                                   absl::string_view doc) {
  AddAttr(name, type, doc)->set_required(true);
  return *this;
}

OpBuilder& OpBuilder::IntAttr(absl::string_view name, int64_t default_value,
                              absl::string_view doc) {
  AddAttr(name, v1::ATTR_INT, doc)->mutable_default_value()->set_i(default_value);
  return *this;
}

OpBuilder& OpBuilder::FloatAttr(absl::string_view name, float default_value,
                                absl::string_view doc) {
  AddAttr(name, v1::ATTR_FLOAT, doc)->mutable_default_value()->set_f(default_value);
  return *this;
}

OpBuilder& OpBuilder::StringAttr(absl::string_view name, absl::string_view default_value,
                                 absl::string_view doc) {
  AddAttr(name, v1::ATTR_STRING, doc)->mutable_default_value()->set_s(std::string(default_value));
  return *this;
}

OpBuilder& OpBuilder::IntsAttr(absl::string_view name, const std::vector<int64_t>& default_value,
                               absl::string_view doc) {
  v1::IntList* list = AddAttr(name, v1::ATTR_INTS, doc)->mutable_default_value()->mutable_ints();
  for (int64_t v : default_value) list->add_values(v);
  return *this;
}

OpBuilder& OpBuilder::Constraint(absl::string_view name, const DTypes& allowed,
                                 absl::string_view doc) {
  v1::TypeConstraint* c = def_.descriptor.add_type_constraints();
  c->set_name(std::string(name));
  c->set_doc(std::string(doc));
  for (v1::DataType t : allowed) c->add_allowed(t);
  return *this;
}

OpBuilder& OpBuilder::Fusion(v1::FusionPattern pattern) {
  def_.descriptor.set_fusion_pattern(pattern);
  return *this;
}

OpBuilder& OpBuilder::InPlace(int input, int output) {
  v1::InPlacePair* p = def_.descriptor.add_inplace();
  p->set_input(input);
  p->set_output(output);
  return *this;
}

OpBuilder& OpBuilder::IgnoredInput(int input) {
  def_.descriptor.add_ignored_inputs(input);
  return *this;
}

OpBuilder& OpBuilder::Extension(absl::string_view name, v1::Attribute value) {
  (*def_.descriptor.mutable_extensions())[std::string(name)] = std::move(value);
  return *this;
}

OpBuilder& OpBuilder::ShapeFn(ShapeInferenceFn fn) {
  def_.shape_fn = std::move(fn);
  return *this;
}

OpBuilder& OpBuilder::TypeFn(TypeInferenceFn fn) {
  def_.type_fn = std::move(fn);
  return *this;
}

OpBuilder& OpBuilder::TakesContainers() {
  def_.takes_containers = true;
  return *this;
}

OpDef OpBuilder::Build() { return std::move(def_); }

// --- InferenceContext helpers -----------------------------------------------------------------

absl::Status NodeError(const InferenceContext& ctx, const absl::Status& status,
                       absl::string_view prefix) {
  return ctx.Error(prefix, status.message());
}

std::optional<Dims> InputShape(const InferenceContext& ctx, int i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (ctx.input_shape(i)) return ctx.input_shape(i);
  if (const v1::Tensor* t = ctx.input_constant(i)) return ShapeFromDimsList(*t);
  return std::nullopt;
}

std::optional<std::vector<int64_t>> InputInts(const InferenceContext& ctx, int i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (const v1::Tensor* t = ctx.input_constant(i)) {
    absl::StatusOr<std::vector<int64_t>> v = TensorToInts(*t);
    if (v.ok()) return *std::move(v);
    return std::nullopt;
  }
  if (const Dims* d = ctx.input_dims_value(i)) {
    std::vector<int64_t> out;
    out.reserve(d->size());
    for (const Dim& x : *d) {
      if (!x.is_known()) return std::nullopt;
      out.push_back(x.size());
    }
    return out;
  }
  return std::nullopt;
}

std::optional<Dims> InputDimsValue(const InferenceContext& ctx, int i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (const Dims* d = ctx.input_dims_value(i)) return *d;
  const v1::Tensor* t = ctx.input_constant(i);
  if (t == nullptr || t->dims_size() > 1) return std::nullopt;
  absl::StatusOr<std::vector<int64_t>> v = TensorToInts(*t, kMaxDimsValueElements);
  if (!v.ok()) return std::nullopt;
  Dims out;
  out.reserve(v->size());
  for (int64_t x : *v) out.push_back(Dim::Known(x));
  return out;
}

void SetDimsValue(InferenceContext& ctx, int i, Dims value) {
  if (static_cast<int64_t>(value.size()) <= kMaxDimsValueElements) {
    ctx.set_output_dims_value(i, std::move(value));
  }
}

absl::StatusOr<IntsOperand> IntsFromAttrOrInput(const InferenceContext& ctx,
                                                absl::string_view attribute, int input) {
  IntsOperand out;
  const bool has_attribute = ctx.has_attr(attribute);
  if (has_attribute && ctx.has_input(input)) {
    return ctx.Error("'", attribute, "' is given both as an attribute and as input ", input);
  }
  if (has_attribute) {
    absl::StatusOr<std::vector<int64_t>> v = ctx.GetInts(attribute);
    if (!v.ok()) return v.status();
    out.given = true;
    out.values = *std::move(v);
  } else if (ctx.has_input(input)) {
    out.given = true;
    out.values = InputInts(ctx, input);
  }
  return out;
}

std::string IntsToString(const std::vector<int64_t>& v) {
  return absl::StrCat("[", absl::StrJoin(v, ","), "]");
}

void ForwardDimsValue(InferenceContext& ctx) {
  if (std::optional<Dims> v = InputDimsValue(ctx, 0)) SetDimsValue(ctx, 0, *std::move(v));
}

std::optional<Dims> ShapeOperand(const InferenceContext& ctx, int i) {
  if (std::optional<Dims> v = InputDimsValue(ctx, i)) return v;
  if (std::optional<std::vector<int64_t>> ints = InputInts(ctx, i)) {
    Dims out;
    for (int64_t x : *ints) out.push_back(Dim::Known(x));
    return out;
  }
  std::optional<Dims> s = InputShape(ctx, i);
  if (s && s->size() == 1 && (*s)[0].is_known() && (*s)[0].size() >= 0 &&
      (*s)[0].size() <= kMaxDimsValueElements) {
    return UnknownDims((*s)[0].size());
  }
  return std::nullopt;
}

absl::Status SameShapeAsInput0(InferenceContext& ctx) {
  std::optional<Dims> shape = InputShape(ctx, 0);
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, shape);
  return absl::OkStatus();
}

absl::Status BroadcastAllInputs(InferenceContext& ctx) {
  std::vector<std::optional<Dims>> shapes;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i)) shapes.push_back(InputShape(ctx, i));
  }
  if (shapes.empty()) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<Dims>> out = BroadcastShapes(shapes);
  if (!out.ok()) return NodeError(ctx, out.status());
  ctx.set_output_shape(0, *std::move(out));
  return absl::OkStatus();
}

absl::Status OutputDTypeFromAttribute(InferenceContext& ctx, int output,
                                      absl::string_view attribute, v1::DataType fallback) {
  v1::DataType dt = fallback;
  if (ctx.has_attr(attribute)) {
    absl::StatusOr<int64_t> v = ctx.GetInt(attribute);
    if (!v.ok()) return v.status();
    if (!v1::DataType_IsValid(static_cast<int>(*v)) || *v == v1::DT_UNDEFINED) {
      return ctx.Error("attribute '", attribute, "' is not a data type: ", *v);
    }
    dt = static_cast<v1::DataType>(*v);
  }
  if (dt == v1::DT_UNDEFINED) return absl::OkStatus();
  const v1::ArgSpec* spec = ctx.op().output_spec(output);
  if (spec != nullptr && !spec->type_constraint().empty()) {
    auto it = ctx.op().type_constraints.find(spec->type_constraint());
    if (it != ctx.op().type_constraints.end()) {
      bool allowed = false;
      for (int a : it->second->allowed()) allowed |= (a == dt);
      if (!allowed) {
        return ctx.Error("output ", output, " (", spec->name(), ") would have type ",
                         DataTypeName(dt), ", which ", it->second->name(), " does not allow");
      }
    }
  }
  ctx.set_output_dtype(output, dt);
  return absl::OkStatus();
}

absl::Status CheckScalarInput(const InferenceContext& ctx, int i, absl::string_view what,
                              bool allow_1d) {
  const std::optional<Dims> s = InputShape(ctx, i);
  if (!s || s->empty()) return absl::OkStatus();
  if (allow_1d && s->size() == 1 && !((*s)[0].is_known() && (*s)[0].size() != 1)) {
    return absl::OkStatus();
  }
  return ctx.Error("input ", i, " (", what, ") must be a scalar",
                   allow_1d ? " or hold one element" : "", ", got shape ", ShapeToString(s));
}

std::optional<int64_t> ScalarInputInt(const InferenceContext& ctx, int i) {
  std::optional<std::vector<int64_t>> v = InputInts(ctx, i);
  if (!v || v->size() != 1) return std::nullopt;
  return (*v)[0];
}

std::optional<Dims> UnionShapes(const std::optional<Dims>& a, const std::optional<Dims>& b) {
  if (!a || !b || a->size() != b->size()) return std::nullopt;
  Dims out;
  out.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    out.push_back(Dim::SameSize((*a)[i], (*b)[i]) ? (*a)[i] : Dim::Unknown());
  }
  return out;
}

}  // namespace builtin_internal

absl::Status RegisterBuiltinOps(OpRegistry* registry) {
  std::vector<OpDef> ops;
  // Layered as the kernel families of runtime/kernels/cpu_kernels.cc: elementwise, nn, reduction,
  // tensor, rnn, control flow, sequence, misc, fused.
  for (auto add : {builtin_internal::AddElementwiseOps, builtin_internal::AddNnOps,
                   builtin_internal::AddReductionOps, builtin_internal::AddTensorOps,
                   builtin_internal::AddTensorIndexOps, builtin_internal::AddTensorShapeOps,
                   builtin_internal::AddRnnOps, builtin_internal::AddControlFlowOps,
                   builtin_internal::AddSequenceOps, builtin_internal::AddMiscOps,
                   builtin_internal::AddFusedOps, builtin_internal::AddNnGradOps}) {
    add(&ops);
  }
  // The builtin gradients, by op: descriptor.gradient names them, so that a client listing the
  // ops sees which it can differentiate through.
  builtin_internal::GradientTable gradients;
  for (auto add : {builtin_internal::AddElementwiseGradients, builtin_internal::AddNnGradients,
                   builtin_internal::AddReductionGradients, builtin_internal::AddTensorGradients}) {
    add(&gradients);
  }
  int64_t attached = 0;
  for (OpDef& op : ops) {
    const std::string key = op.descriptor.domain().empty()
                                ? op.descriptor.name()
                                : absl::StrCat(op.descriptor.domain(), "::", op.descriptor.name());
    if (auto it = gradients.find(key); it != gradients.end()) {
      op.gradient_fn = it->second.fn;
      op.descriptor.mutable_gradient()->set_builtin(key);
      for (int i : it->second.non_differentiable) op.descriptor.add_non_differentiable_inputs(i);
      ++attached;
    }
    if (absl::Status s = registry->Register(std::move(op)); !s.ok()) return s;
  }
  if (attached != static_cast<int64_t>(gradients.size())) {
    for (const auto& [key, gradient] : gradients) {
      const size_t sep = key.find("::");
      const std::string domain = sep == std::string::npos ? "" : key.substr(0, sep);
      const std::string name = sep == std::string::npos ? key : key.substr(sep + 2);
      if (registry->FindLocal(domain, name) == nullptr) {
        return absl::InternalError(absl::StrCat("builtin gradient for unknown op '", key, "'"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace graphopt
