#include "graph/test_ops.h"

#include "graph/inference.h"

namespace graphopt {
namespace testing {
namespace {

void FillArg(const std::string& spec, v1::ArgSpec* arg) {
  std::string name = spec;
  if (!name.empty() && (name.back() == '?' || name.back() == '*')) {
    arg->set_arity(name.back() == '?' ? v1::ARITY_OPTIONAL : v1::ARITY_VARIADIC);
    if (name.back() == '*') arg->set_min_count(1);
    name.pop_back();
  }
  arg->set_name(name);
  arg->set_type_constraint("T");
}

}  // namespace

OpDef MakeTestOp(const std::string& name, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs,
                 const std::vector<v1::AttributeSpec>& attributes) {
  OpDef def;
  def.descriptor.set_name(name);
  for (const std::string& in : inputs) FillArg(in, def.descriptor.add_inputs());
  for (const std::string& out : outputs) FillArg(out, def.descriptor.add_outputs());
  for (const v1::AttributeSpec& a : attributes) *def.descriptor.add_attributes() = a;
  v1::TypeConstraint* t = def.descriptor.add_type_constraints();
  t->set_name("T");
  t->add_allowed(v1::DT_FLOAT32);
  t->add_allowed(v1::DT_INT64);
  def.descriptor.mutable_shape_rule()->set_builtin("same_as_first_input");
  // Every output takes the first input's shape.
  def.shape_fn = [](InferenceContext& ctx) {
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      ctx.set_output_shape(i, ctx.has_input(0) ? ctx.input_shape(0) : std::nullopt);
    }
    return absl::OkStatus();
  };
  return def;
}

v1::AttributeSpec AttrSpec(const std::string& name, v1::AttributeType type, bool required) {
  v1::AttributeSpec a;
  a.set_name(name);
  a.set_type(type);
  a.set_required(required);
  return a;
}

}  // namespace testing
}  // namespace graphopt
