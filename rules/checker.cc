#include "rules/checker.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "graph/types.h"

namespace graphopt {
namespace rules {
namespace {

struct FnInfo {
  const char* name;
  Fn fn;
};

constexpr FnInfo kFunctions[] = {
    {"rank", Fn::kRank},
    {"shape", Fn::kShape},
    {"dim", Fn::kDim},
    {"has", Fn::kHas},
    {"value", Fn::kValue},
    {"dtype", Fn::kDTypeOf},
    {"count", Fn::kCount},
    {"shapes", Fn::kShapes},
    {"has_attr", Fn::kHasAttr},
    {"attr_dtype", Fn::kAttrDType},
    {"opset", Fn::kOpset},
    {"num_inputs", Fn::kNumInputs},
    {"num_outputs", Fn::kNumOutputs},
    {"broadcast", Fn::kBroadcast},
    {"normalize_axis", Fn::kNormalizeAxis},
    {"merge", Fn::kMerge},
    {"fail", Fn::kFail},
    {"min", Fn::kMin},
    {"max", Fn::kMax},
    {"abs", Fn::kAbs},
    {"cdiv", Fn::kCdiv},
    {"len", Fn::kLen},
    {"sum", Fn::kSum},
    {"prod", Fn::kProd},
    {"range", Fn::kRange},
    {"known", Fn::kKnown},
    {"all", Fn::kAll},
    {"any", Fn::kAnyOf},
    {"flatten", Fn::kFlatten},
    {"dtype_size", Fn::kDTypeSize},
    {"distinct", Fn::kDistinct},
};

const char* OpSymbol(Op op) {
  switch (op) {
    case Op::kNeg:
      return "unary '-'";
    case Op::kNot:
      return "'not'";
    case Op::kAdd:
      return "'+'";
    case Op::kSub:
      return "'-'";
    case Op::kMul:
      return "'*'";
    case Op::kFloorDiv:
      return "'//'";
    case Op::kMod:
      return "'%'";
    case Op::kEq:
      return "'=='";
    case Op::kNe:
      return "'!='";
    case Op::kLt:
      return "'<'";
    case Op::kLe:
      return "'<='";
    case Op::kGt:
      return "'>'";
    case Op::kGe:
      return "'>='";
    case Op::kAnd:
      return "'and'";
    case Op::kOr:
      return "'or'";
    case Op::kConcat:
      return "'++'";
    case Op::kCoalesce:
      return "'|'";
    default:
      return "operator";
  }
}

// Data type names usable as values: "float32", "int64", ... and ONNX's "float", "double",
// "half" (lower case only).
bool LookupDType(const std::string& name, v1::DataType* out) {
  if (name != absl::AsciiStrToLower(name)) return false;
  absl::StatusOr<v1::DataType> dt = ParseDataType(name);
  if (!dt.ok()) return false;
  *out = *dt;
  return true;
}

std::string ReadableAttrType(v1::AttributeType t) {
  return absl::AsciiStrToLower(absl::StripPrefix(v1::AttributeType_Name(t), "ATTR_"));
}

class Checker {
 public:
  Checker(const v1::OpDescriptor& op, const Diag& diag, Program* p)
      : op_(op), diag_(diag), p_(p) {}

  absl::Status Run() {
    for (int i = 0; i < op_.inputs_size(); ++i) {
      const v1::ArgSpec& a = op_.inputs(i);
      p_->input_names.push_back(a.name());
      inputs_.try_emplace(a.name(), i);
      if (a.arity() == v1::ARITY_VARIADIC) p_->variadic_input = i;
    }
    for (int i = 0; i < op_.outputs_size(); ++i) {
      const v1::ArgSpec& a = op_.outputs(i);
      p_->output_names.push_back(a.name());
      outputs_.try_emplace(a.name(), i);
      if (a.arity() == v1::ARITY_VARIADIC) p_->variadic_output = i;
    }
    for (const v1::AttributeSpec& a : op_.attributes()) attr_specs_.try_emplace(a.name(), &a);
    for (int i = 0; i < op_.type_constraints_size(); ++i) {
      constraints_.try_emplace(op_.type_constraints(i).name(), i);
    }
    p_->constraint_names.resize(op_.type_constraints_size());
    p_->constraint_inputs.resize(op_.type_constraints_size());
    for (int i = 0; i < op_.type_constraints_size(); ++i) {
      p_->constraint_names[i] = op_.type_constraints(i).name();
    }
    for (int i = 0; i < op_.inputs_size(); ++i) {
      auto it = constraints_.find(op_.inputs(i).type_constraint());
      if (it != constraints_.end()) p_->constraint_inputs[it->second].push_back(i);
    }
    p_->assigns_output.assign(op_.outputs_size(), false);

    const int n = static_cast<int>(p_->stmts.size());
    bool has_result = false;
    for (int i = 0; i < n; ++i) {
      if (absl::Status s = CheckStmt(p_->stmts[i], i == n - 1); !s.ok()) return s;
      has_result |= p_->stmts[i].kind == StmtKind::kResult;
    }
    const int32_t end = static_cast<int32_t>(p_->source.size());
    if (p_->kind == RuleKind::kCost && !has_result) {
      return diag_.Error(end, "a cost rule must end with an int expression (the cost)");
    }
    if (p_->kind == RuleKind::kShape && !p_->assigns_all_outputs) {
      for (int i = 0; i < op_.outputs_size(); ++i) {
        const v1::ArgSpec& a = op_.outputs(i);
        const bool required = a.arity() == v1::ARITY_SINGLE ||
                              (a.arity() == v1::ARITY_VARIADIC && a.min_count() > 0);
        if (required && !p_->assigns_output[i]) {
          return diag_.Error(end, absl::StrCat("output[", i, "] (", a.name(),
                                               ") is never assigned (every required output "
                                               "needs an output[", i, "] = ... statement)"));
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  const char* KindName() const {
    switch (p_->kind) {
      case RuleKind::kShape:
        return "shape rule";
      case RuleKind::kType:
        return "type rule";
      case RuleKind::kCost:
        return "cost rule";
    }
    return "rule";
  }

  std::string InputList() const {
    if (p_->input_names.empty()) return "the op declares no inputs";
    return absl::StrCat("inputs: ", absl::StrJoin(p_->input_names, ", "));
  }
  std::string OutputList() const {
    return absl::StrCat("outputs: ", absl::StrJoin(p_->output_names, ", "));
  }
  std::string AttrList() const {
    if (op_.attributes_size() == 0) return "the op declares no attributes";
    std::vector<std::string> names;
    for (const v1::AttributeSpec& a : op_.attributes()) names.push_back(a.name());
    return absl::StrCat("attributes: ", absl::StrJoin(names, ", "));
  }
  std::string SourceOf(int32_t id) const {
    const Node& n = p_->nodes[id];
    int32_t begin = n.pos;
    // The leftmost token of the expression.
    std::vector<int32_t> stack = {id};
    while (!stack.empty()) {
      const Node& x = p_->nodes[stack.back()];
      stack.pop_back();
      begin = std::min(begin, x.pos);
      for (int k = 0; k < x.num_kids; ++k) stack.push_back(p_->kids[x.first_kid + k]);
    }
    return std::string(diag_.source().substr(begin, std::max(0, n.end - begin)));
  }

  absl::Status Error(int32_t id, absl::string_view msg) const {
    return diag_.Error(p_->nodes[id].pos, msg);
  }
  absl::Status Expecting(int32_t id, absl::string_view what, Type want, Type got) const {
    return Error(id, absl::StrCat(what, " expects ", TypeName(want), ", got ", TypeName(got)));
  }

  absl::Status Want(int32_t id, Type want, absl::string_view what) {
    absl::StatusOr<Type> t = CheckExpr(id);
    if (!t.ok()) return t.status();
    if (!Accepts(want, *t)) return Expecting(id, what, want, *t);
    return absl::OkStatus();
  }

  absl::Status DefineName(const std::string& name, int32_t pos, Type type, int32_t* slot) {
    if (scope_.contains(name)) {
      return diag_.Error(pos, absl::StrCat("'", name, "' is already defined"));
    }
    if (inputs_.contains(name)) {
      return diag_.Error(pos, absl::StrCat("'", name, "' is an input of the op; choose another "
                                           "name"));
    }
    *slot = p_->num_slots++;
    scope_[name] = {*slot, type};
    return absl::OkStatus();
  }

  absl::StatusOr<int32_t> ResolveOutput(Stmt& st) {
    if (!st.name.empty()) {
      auto it = outputs_.find(st.name);
      if (it == outputs_.end()) {
        return diag_.Error(st.pos, absl::StrCat("unknown output '", st.name, "' (",
                                                OutputList(), ")"));
      }
      st.output = it->second;
    }
    const int32_t declared = op_.outputs_size();
    if (st.output >= declared && p_->variadic_output < 0) {
      return diag_.Error(st.pos, absl::StrCat("output[", st.output, "] is out of range: op '",
                                              p_->op_label, "' declares ", declared, " output",
                                              declared == 1 ? "" : "s", " (",
                                              absl::StrJoin(p_->output_names, ", "), ")"));
    }
    return st.output;
  }

  absl::Status CheckStmt(Stmt& st, bool last) {
    switch (st.kind) {
      case StmtKind::kLet: {
        absl::StatusOr<Type> t = CheckExpr(st.expr);
        if (!t.ok()) return t.status();
        return DefineName(st.name, st.pos, *t, &st.slot);
      }
      case StmtKind::kAssert: {
        if (absl::Status s = Want(st.expr, Type::Bool(), "assert"); !s.ok()) return s;
        for (int32_t part : st.parts) {
          if (absl::StatusOr<Type> t = CheckExpr(part); !t.ok()) return t.status();
        }
        return absl::OkStatus();
      }
      case StmtKind::kOutput:
      case StmtKind::kOutputValue:
      case StmtKind::kOutputAll: {
        if (p_->kind == RuleKind::kCost) {
          return diag_.Error(st.pos, "a cost rule has no outputs to assign; it ends with its "
                                     "cost expression");
        }
        if (st.kind == StmtKind::kOutputValue && p_->kind != RuleKind::kShape) {
          return diag_.Error(st.pos, "output[I].value belongs in shape rules");
        }
        const Type want = p_->kind == RuleKind::kShape ? Type::ListOf(Type::Int())
                                                       : Type::DType();
        if (st.kind == StmtKind::kOutputAll) {
          if (p_->assigns_all_outputs || assigned_any_) {
            return diag_.Error(st.pos, "output[*] assigns every output; it cannot be combined "
                                       "with other output[...] statements");
          }
          p_->assigns_all_outputs = true;
          return Want(st.expr, Type::ListOf(want), "output[*]");
        }
        absl::StatusOr<int32_t> index = ResolveOutput(st);
        if (!index.ok()) return index.status();
        if (p_->assigns_all_outputs) {
          return diag_.Error(st.pos, "output[*] already assigns every output");
        }
        if (st.kind == StmtKind::kOutput) {
          if (!assigned_.insert(*index).second) {
            return diag_.Error(st.pos, absl::StrCat("output[", *index, "] is assigned twice"));
          }
          assigned_any_ = true;
          if (*index < static_cast<int32_t>(p_->assigns_output.size())) {
            p_->assigns_output[*index] = true;
          }
          return Want(st.expr, want, absl::StrCat("output[", *index, "]"));
        }
        if (!value_assigned_.insert(*index).second) {
          return diag_.Error(st.pos, absl::StrCat("output[", *index, "].value is assigned twice"));
        }
        return Want(st.expr, Type::ListOf(Type::Int()), absl::StrCat("output[", *index, "].value"));
      }
      case StmtKind::kConstraint: {
        if (p_->kind != RuleKind::kType) {
          return diag_.Error(st.pos, absl::StrCat("'", st.name, " in {...}' constrains types; "
                                                  "it belongs in type rules"));
        }
        if (auto it = inputs_.find(st.name); it != inputs_.end()) {
          st.inputs = {it->second};
        } else if (auto c = constraints_.find(st.name); c != constraints_.end()) {
          st.inputs = p_->constraint_inputs[c->second];
        } else {
          std::vector<std::string> names;
          for (const v1::TypeConstraint& c : op_.type_constraints()) names.push_back(c.name());
          return diag_.Error(st.pos, absl::StrCat("unknown input or type constraint '", st.name,
                                                  "' (", InputList(), "; type constraints: ",
                                                  absl::StrJoin(names, ", "), ")"));
        }
        for (int32_t part : st.parts) {
          if (absl::Status s = Want(part, Type::DType(), "a type set"); !s.ok()) return s;
        }
        return absl::OkStatus();
      }
      case StmtKind::kResult: {
        if (p_->kind != RuleKind::kCost) {
          return diag_.Error(st.pos, absl::StrCat("a ", KindName(), " is made of statements "
                                                  "(let, assert, output[I] = ...); found a bare "
                                                  "expression"));
        }
        if (!last) {
          return diag_.Error(st.pos, "the cost expression must be the last statement");
        }
        return Want(st.expr, Type::Int(), "a cost rule");
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Type> CheckExpr(int32_t id) {
    absl::StatusOr<Type> t = CheckExprInner(id);
    if (t.ok()) p_->nodes[id].type = *t;
    return t;
  }

  int32_t Kid(int32_t id, int k) const {
    const Node& n = p_->nodes[id];
    return p_->kids[n.first_kid + k];
  }

  absl::StatusOr<Type> CheckExprInner(int32_t id) {
    Node& n = p_->nodes[id];
    switch (n.op) {
      case Op::kInt:
        return Type::Int();
      case Op::kBool:
        return Type::Bool();
      case Op::kString:
        return Type::String();
      case Op::kDType:
        return Type::DType();
      case Op::kUnknown:
        return Type::Any();
      case Op::kName:
        return CheckName(id);
      case Op::kAttrName:
        return CheckAttr(id);
      case Op::kCallName:
        return CheckCall(id);
      case Op::kNeg: {
        if (absl::Status s = Want(Kid(id, 0), Type::Int(), OpSymbol(n.op)); !s.ok()) return s;
        return Type::Int();
      }
      case Op::kNot: {
        if (absl::Status s = Want(Kid(id, 0), Type::Bool(), OpSymbol(n.op)); !s.ok()) return s;
        return Type::Bool();
      }
      case Op::kAdd:
      case Op::kSub:
      case Op::kMul:
      case Op::kFloorDiv:
      case Op::kMod:
      case Op::kLt:
      case Op::kLe:
      case Op::kGt:
      case Op::kGe:
      case Op::kAnd:
      case Op::kOr: {
        const bool logical = n.op == Op::kAnd || n.op == Op::kOr;
        const Type operand = logical ? Type::Bool() : Type::Int();
        absl::StatusOr<Type> a = CheckExpr(Kid(id, 0));
        if (!a.ok()) return a;
        absl::StatusOr<Type> b = CheckExpr(Kid(id, 1));
        if (!b.ok()) return b;
        if (!Accepts(operand, *a) || !Accepts(operand, *b)) {
          return Error(id, absl::StrCat(OpSymbol(n.op), " expects ", TypeName(operand),
                                        " operands, got ", TypeName(*a), " and ",
                                        TypeName(*b)));
        }
        const bool arithmetic = n.op == Op::kAdd || n.op == Op::kSub || n.op == Op::kMul ||
                                n.op == Op::kFloorDiv || n.op == Op::kMod;
        return arithmetic ? Type::Int() : Type::Bool();
      }
      case Op::kEq:
      case Op::kNe:
      case Op::kConcat:
      case Op::kCoalesce: {
        absl::StatusOr<Type> a = CheckExpr(Kid(id, 0));
        if (!a.ok()) return a;
        absl::StatusOr<Type> b = CheckExpr(Kid(id, 1));
        if (!b.ok()) return b;
        Type u;
        if (!Unify(*a, *b, &u)) {
          return Error(id, absl::StrCat(OpSymbol(n.op), " needs operands of one type, got ",
                                        TypeName(*a), " and ", TypeName(*b)));
        }
        if (n.op == Op::kConcat) {
          if (!u.is_list() && u.base != Base::kAny) {
            return Error(id, absl::StrCat("'++' concatenates lists, got ", TypeName(*a),
                                          " and ", TypeName(*b)));
          }
          return u.base == Base::kAny && u.depth == 0 ? Type::ListOf(Type::Any()) : u;
        }
        return n.op == Op::kCoalesce ? u : Type::Bool();
      }
      case Op::kIn: {
        absl::StatusOr<Type> x = CheckExpr(Kid(id, 0));
        if (!x.ok()) return x;
        Type u = *x;
        for (int k = 1; k < n.num_kids; ++k) {
          absl::StatusOr<Type> m = CheckExpr(Kid(id, k));
          if (!m.ok()) return m;
          if (!Unify(u, *m, &u)) {
            return Error(Kid(id, k), absl::StrCat("'in' compares ", TypeName(*x),
                                                  " with a member of type ", TypeName(*m)));
          }
        }
        return Type::Bool();
      }
      case Op::kIf: {
        if (absl::Status s = Want(Kid(id, 0), Type::Bool(), "the condition of 'if'"); !s.ok()) {
          return s;
        }
        absl::StatusOr<Type> a = CheckExpr(Kid(id, 1));
        if (!a.ok()) return a;
        absl::StatusOr<Type> b = CheckExpr(Kid(id, 2));
        if (!b.ok()) return b;
        Type u;
        if (!Unify(*a, *b, &u)) {
          return Error(id, absl::StrCat("the branches of 'if' differ in type: ", TypeName(*a),
                                        " and ", TypeName(*b)));
        }
        return u;
      }
      case Op::kList: {
        Type u = Type::Any();
        for (int k = 0; k < n.num_kids; ++k) {
          absl::StatusOr<Type> e = CheckExpr(Kid(id, k));
          if (!e.ok()) return e;
          Type next;
          if (!Unify(u, *e, &next)) {
            return Error(Kid(id, k), absl::StrCat("list elements differ in type: ", TypeName(u),
                                                  " and ", TypeName(*e)));
          }
          u = next;
        }
        if (u.depth >= 30) return Error(id, "lists nest too deeply");
        return Type::ListOf(u);
      }
      case Op::kIndex:
      case Op::kSlice: {
        const int32_t base = Kid(id, 0);
        if (p_->nodes[base].op == Op::kName && inputs_.contains(p_->nodes[base].text)) {
          return Error(id, absl::StrCat("input '", p_->nodes[base].text,
                                        "' is not a list; its shape is shape(",
                                        p_->nodes[base].text, ")"));
        }
        absl::StatusOr<Type> l = CheckExpr(base);
        if (!l.ok()) return l;
        if (!l->is_list() && l->base != Base::kAny) {
          return Error(id, absl::StrCat("cannot ", n.op == Op::kIndex ? "index" : "slice", " ",
                                        TypeName(*l), " (only lists)"));
        }
        for (int k = 1; k < n.num_kids; ++k) {
          if (absl::Status s = Want(Kid(id, k), Type::Int(),
                                    n.op == Op::kIndex ? "an index" : "a slice bound");
              !s.ok()) {
            return s;
          }
        }
        if (n.op == Op::kSlice) return l->is_list() ? *l : Type::ListOf(Type::Any());
        return l->is_list() ? l->element() : Type::Any();
      }
      case Op::kComprehension: {
        absl::StatusOr<Type> iter = CheckExpr(Kid(id, 0));
        if (!iter.ok()) return iter;
        if (!iter->is_list() && iter->base != Base::kAny) {
          return Error(Kid(id, 0), absl::StrCat("a comprehension iterates over a list (e.g. "
                                                "range(n)), got ",
                                                TypeName(*iter)));
        }
        const Type var_type = iter->is_list() ? iter->element() : Type::Any();
        const std::string var = n.text;
        int32_t slot;
        if (absl::Status s = DefineName(var, n.pos, var_type, &slot); !s.ok()) return s;
        p_->nodes[id].imm = slot;
        absl::StatusOr<Type> elem = CheckExpr(Kid(id, 1));
        if (!elem.ok()) return elem;
        if (p_->nodes[id].num_kids > 2) {
          if (absl::Status s = Want(Kid(id, 2), Type::Bool(), "the filter of a comprehension");
              !s.ok()) {
            return s;
          }
        }
        scope_.erase(var);
        if (elem->depth >= 30) return Error(id, "lists nest too deeply");
        return Type::ListOf(*elem);
      }
      default:
        return Error(id, "internal: unexpected node");
    }
  }

  absl::StatusOr<Type> CheckName(int32_t id) {
    Node& n = p_->nodes[id];
    if (auto it = scope_.find(n.text); it != scope_.end()) {
      n.op = Op::kSlot;
      n.imm = it->second.first;
      return it->second.second;
    }
    if (inputs_.contains(n.text)) {
      return Error(id, absl::StrCat("input '", n.text, "' is not a value; use shape(", n.text,
                                    "), rank(", n.text, "), dim(", n.text, ", i), value(",
                                    n.text, ") or dtype(", n.text, ")"));
    }
    v1::DataType dt;
    if (LookupDType(n.text, &dt)) {
      n.op = Op::kDType;
      n.imm = dt;
      return Type::DType();
    }
    if (outputs_.contains(n.text)) {
      return Error(id, absl::StrCat("output '", n.text, "' cannot be read; rules compute "
                                    "outputs from inputs and attributes"));
    }
    if (attr_specs_.contains(n.text)) {
      return Error(id, absl::StrCat("unknown name '", n.text, "'; the attribute is read with "
                                    "attr.",
                                    n.text));
    }
    if (constraints_.contains(n.text)) {
      return Error(id, absl::StrCat("type constraint '", n.text, "' is not a value; its type "
                                    "is dtype(",
                                    n.text, ")"));
    }
    std::vector<std::string> names;
    for (const auto& [name, slot] : scope_) names.push_back(name);
    std::sort(names.begin(), names.end());
    return Error(id, absl::StrCat("unknown name '", n.text, "'",
                                  names.empty() ? ""
                                                : absl::StrCat(" (defined: ",
                                                               absl::StrJoin(names, ", "), ")")));
  }

  absl::StatusOr<int32_t> AttrIndex(int32_t id, const std::string& name, bool readable) {
    auto it = attr_specs_.find(name);
    if (it == attr_specs_.end()) {
      return Error(id, absl::StrCat("unknown attribute '", name, "' (", AttrList(), ")"));
    }
    const v1::AttributeType type = it->second->type();
    if (readable && type != v1::ATTR_INT && type != v1::ATTR_INTS && type != v1::ATTR_STRING &&
        type != v1::ATTR_STRINGS && type != v1::ATTR_DTYPE && type != v1::ATTR_SHAPE) {
      return Error(id, absl::StrCat("attribute '", name, "' is a ", ReadableAttrType(type),
                                    " attribute, which rules cannot read (they read int, ints, "
                                    "string, strings, dtype and shape attributes)"));
    }
    for (size_t i = 0; i < p_->attrs.size(); ++i) {
      if (p_->attrs[i].name == name) return static_cast<int32_t>(i);
    }
    p_->attrs.push_back(AttrRef{name, type});
    return static_cast<int32_t>(p_->attrs.size() - 1);
  }

  static Type AttrType(v1::AttributeType t) {
    switch (t) {
      case v1::ATTR_INT:
        return Type::Int();
      case v1::ATTR_INTS:
      case v1::ATTR_SHAPE:
        return Type::ListOf(Type::Int());
      case v1::ATTR_STRING:
        return Type::String();
      case v1::ATTR_STRINGS:
        return Type::ListOf(Type::String());
      case v1::ATTR_DTYPE:
        return Type::DType();
      default:
        return Type::Any();
    }
  }

  absl::StatusOr<Type> CheckAttr(int32_t id) {
    const std::string name = p_->nodes[id].text;
    absl::StatusOr<int32_t> index = AttrIndex(id, name, true);
    if (!index.ok()) return index.status();
    const Type t = AttrType(p_->attrs[*index].type);
    if (p_->nodes[id].num_kids == 1) {
      absl::StatusOr<Type> fb = CheckExpr(Kid(id, 0));
      if (!fb.ok()) return fb;
      if (!Accepts(t, *fb)) {
        return Error(Kid(id, 0), absl::StrCat("the fallback of attribute '", name, "' (",
                                              TypeName(t), ") has type ", TypeName(*fb)));
      }
    }
    Node& n = p_->nodes[id];
    n.op = Op::kAttr;
    n.imm = *index;
    return t;
  }

  absl::Status Arity(int32_t id, const char* name, int got, int min, int max) {
    if (got >= min && got <= max) return absl::OkStatus();
    std::string want;
    if (min == max) {
      want = absl::StrCat(min, " argument", min == 1 ? "" : "s");
    } else if (max > 100) {
      want = absl::StrCat("at least ", min, " argument", min == 1 ? "" : "s");
    } else {
      want = absl::StrCat(min, " to ", max, " arguments");
    }
    return Error(id, absl::StrCat(name, "() takes ", want, ", got ", got));
  }

  // Resolves the first argument of an input-reading builtin.
  struct InputArg {
    Ref ref = Ref::kNone;
    int64_t index = 0;
    int32_t item = -1;  // Xs[k]: the node of k
  };
  absl::StatusOr<InputArg> ResolveInput(int32_t arg, const char* fn) {
    const Node& a = p_->nodes[arg];
    InputArg out;
    const bool indexed = a.op == Op::kIndex && p_->nodes[Kid(arg, 0)].op == Op::kName &&
                         !scope_.contains(p_->nodes[Kid(arg, 0)].text);
    if (indexed) {
      const std::string& name = p_->nodes[Kid(arg, 0)].text;
      auto it = inputs_.find(name);
      if (it == inputs_.end()) {
        return Error(arg, absl::StrCat("unknown input '", name, "' (", InputList(), ")"));
      }
      if (op_.inputs(it->second).arity() != v1::ARITY_VARIADIC) {
        return Error(arg, absl::StrCat("input '", name, "' is not variadic; write ", fn, "(",
                                       name, ")"));
      }
      out.ref = Ref::kVariadicItem;
      out.index = it->second;
      out.item = Kid(arg, 1);
      if (absl::Status s = Want(out.item, Type::Int(), "an input index"); !s.ok()) return s;
      return out;
    }
    const bool plain_name = a.op == Op::kName && !scope_.contains(a.text);
    if (plain_name) {
      if (auto it = inputs_.find(a.text); it != inputs_.end()) {
        out.index = it->second;
        out.ref = op_.inputs(it->second).arity() == v1::ARITY_VARIADIC ? Ref::kVariadicAll
                                                                        : Ref::kInput;
        return out;
      }
      if (auto it = constraints_.find(a.text); it != constraints_.end()) {
        out.ref = Ref::kConstraint;
        out.index = it->second;
        return out;
      }
      if (auto it = outputs_.find(a.text); it != outputs_.end()) {
        if (op_.outputs(it->second).arity() == v1::ARITY_VARIADIC) {
          out.ref = Ref::kVariadicOutput;
          out.index = it->second;
          return out;
        }
        return Error(arg, absl::StrCat(fn, "() reads inputs; '", a.text, "' is an output"));
      }
      v1::DataType dt;
      if (!LookupDType(a.text, &dt)) {
        return Error(arg, absl::StrCat("unknown input '", a.text, "' (", InputList(), ")"));
      }
    }
    return Error(arg, absl::StrCat(fn, "() expects an input name (", InputList(), "), not '",
                                   SourceOf(arg), "'"));
  }

  absl::StatusOr<Type> CheckCall(int32_t id) {
    const std::string name = p_->nodes[id].text;
    const FnInfo* info = nullptr;
    for (const FnInfo& f : kFunctions) {
      if (name == f.name) info = &f;
    }
    if (info == nullptr) {
      if (inputs_.contains(name) || scope_.contains(name)) {
        return Error(id, absl::StrCat("'", name, "' is not a function"));
      }
      return Error(id, absl::StrCat("unknown function '", name, "'"));
    }
    std::vector<int32_t> args;
    {
      const Node& n = p_->nodes[id];
      for (int k = 0; k < n.num_kids; ++k) args.push_back(p_->kids[n.first_kid + k]);
    }
    const int argc = static_cast<int>(args.size());
    const Fn fn = info->fn;
    const char* fname = info->name;
    Type result = Type::Int();
    Ref ref = Ref::kNone;
    int64_t imm = 0;
    std::vector<int32_t> kids;  // the arguments the evaluator reads
    constexpr int kMany = 1 << 20;

    auto want_all = [&](Type t, int from) -> absl::Status {
      for (int k = from; k < argc; ++k) {
        if (absl::Status s = Want(args[k], t, absl::StrCat(fname, "()")); !s.ok()) return s;
        kids.push_back(args[k]);
      }
      return absl::OkStatus();
    };
    // int..., or a single list<int> (imm = 1).
    auto ints_or_list = [&]() -> absl::Status {
      if (absl::Status s = Arity(id, fname, argc, 1, kMany); !s.ok()) return s;
      if (argc == 1) {
        absl::StatusOr<Type> t = CheckExpr(args[0]);
        if (!t.ok()) return t.status();
        if (t->is_list()) {
          if (!Accepts(Type::ListOf(Type::Int()), *t)) {
            return Expecting(args[0], absl::StrCat(fname, "()"), Type::ListOf(Type::Int()),
                             *t);
          }
          imm = 1;
        } else if (!Accepts(Type::Int(), *t)) {
          return Expecting(args[0], absl::StrCat(fname, "()"), Type::Int(), *t);
        }
        kids.push_back(args[0]);
        return absl::OkStatus();
      }
      return want_all(Type::Int(), 0);
    };

    switch (fn) {
      case Fn::kRank:
      case Fn::kShape:
      case Fn::kValue:
      case Fn::kDim:
      case Fn::kHas:
      case Fn::kDTypeOf:
      case Fn::kCount:
      case Fn::kShapes: {
        const int nargs = fn == Fn::kDim ? 2 : 1;
        if (absl::Status s = Arity(id, fname, argc, nargs, nargs); !s.ok()) return s;
        absl::StatusOr<InputArg> in = ResolveInput(args[0], fname);
        if (!in.ok()) return in.status();
        ref = in->ref;
        imm = in->index;
        const std::string arg_name =
            in->ref == Ref::kConstraint ? p_->constraint_names[in->index]
            : in->ref == Ref::kVariadicOutput ? p_->output_names[in->index]
                                              : p_->input_names[in->index];
        const bool single = ref == Ref::kInput || ref == Ref::kVariadicItem;
        if (fn == Fn::kCount) {
          if (ref != Ref::kVariadicAll && ref != Ref::kVariadicOutput) {
            return Error(args[0], absl::StrCat("count() expects a variadic input or output; '",
                                               arg_name, "' is not variadic"));
          }
        } else if (fn == Fn::kShapes) {
          if (ref != Ref::kVariadicAll) {
            return Error(args[0], absl::StrCat("shapes() expects a variadic input; '", arg_name,
                                               "' is not variadic (use shape(", arg_name,
                                               "))"));
          }
        } else if (ref == Ref::kVariadicAll) {
          return Error(args[0], absl::StrCat("variadic input '", arg_name, "' needs an index: ",
                                             fname, "(", arg_name, "[k])",
                                             fn == Fn::kShape
                                                 ? absl::StrCat(", or shapes(", arg_name,
                                                                ") for all of them")
                                                 : ""));
        } else if (ref == Ref::kConstraint && fn != Fn::kDTypeOf) {
          return Error(args[0], absl::StrCat(fname, "() expects an input; '", arg_name,
                                             "' is a type constraint"));
        } else if (ref == Ref::kVariadicOutput || !(single || ref == Ref::kConstraint)) {
          return Error(args[0], absl::StrCat(fname, "() expects an input (", InputList(), ")"));
        }
        if (fn == Fn::kHas && ref == Ref::kInput &&
            op_.inputs(static_cast<int>(imm)).arity() != v1::ARITY_OPTIONAL) {
          return Error(args[0], absl::StrCat("has() is for optional inputs; input '", arg_name,
                                             "' is required"));
        }
        if (ref == Ref::kVariadicItem) kids.push_back(in->item);
        if (fn == Fn::kDim) {
          if (absl::Status s = Want(args[1], Type::Int(), "dim()"); !s.ok()) return s;
          kids.push_back(args[1]);
        }
        switch (fn) {
          case Fn::kShape:
          case Fn::kValue:
            result = Type::ListOf(Type::Int());
            break;
          case Fn::kHas:
            result = Type::Bool();
            break;
          case Fn::kDTypeOf:
            result = Type::DType();
            break;
          case Fn::kShapes:
            result = Type::ListOf(Type::ListOf(Type::Int()));
            break;
          default:
            result = Type::Int();
        }
        break;
      }
      case Fn::kHasAttr:
      case Fn::kAttrDType: {
        if (absl::Status s = Arity(id, fname, argc, 1, 1); !s.ok()) return s;
        const Node& a = p_->nodes[args[0]];
        if (a.op != Op::kString) {
          return Error(args[0], absl::StrCat(fname, "() takes the attribute name as a string "
                                             "literal, e.g. ",
                                             fname, "(\"axis\")"));
        }
        absl::StatusOr<int32_t> index = AttrIndex(args[0], a.text, false);
        if (!index.ok()) return index.status();
        if (fn == Fn::kAttrDType) {
          const v1::AttributeType t = p_->attrs[*index].type;
          if (t != v1::ATTR_INT && t != v1::ATTR_DTYPE) {
            return Error(args[0], absl::StrCat("attr_dtype() reads an int or dtype attribute; '",
                                               a.text, "' is a ", ReadableAttrType(t),
                                               " attribute"));
          }
        }
        p_->nodes[args[0]].type = Type::String();
        ref = Ref::kAttribute;
        imm = *index;
        result = fn == Fn::kHasAttr ? Type::Bool() : Type::DType();
        break;
      }
      case Fn::kOpset:
      case Fn::kNumInputs:
      case Fn::kNumOutputs:
        if (absl::Status s = Arity(id, fname, argc, 0, 0); !s.ok()) return s;
        break;
      case Fn::kBroadcast: {
        if (absl::Status s = Arity(id, fname, argc, 1, kMany); !s.ok()) return s;
        result = Type::ListOf(Type::Int());
        if (argc == 1) {
          absl::StatusOr<Type> t = CheckExpr(args[0]);
          if (!t.ok()) return t.status();
          if (t->depth == 2 && Accepts(Type::ListOf(result), *t)) {
            imm = 1;
          } else if (!Accepts(result, *t)) {
            return Expecting(args[0], "broadcast()", result, *t);
          }
          kids.push_back(args[0]);
          break;
        }
        if (absl::Status s = want_all(result, 0); !s.ok()) return s;
        break;
      }
      case Fn::kNormalizeAxis:
      case Fn::kCdiv:
        if (absl::Status s = Arity(id, fname, argc, 2, 2); !s.ok()) return s;
        if (absl::Status s = want_all(Type::Int(), 0); !s.ok()) return s;
        break;
      case Fn::kAbs:
        if (absl::Status s = Arity(id, fname, argc, 1, 1); !s.ok()) return s;
        if (absl::Status s = want_all(Type::Int(), 0); !s.ok()) return s;
        break;
      case Fn::kMerge:
      case Fn::kMin:
      case Fn::kMax:
        if (absl::Status s = ints_or_list(); !s.ok()) return s;
        break;
      case Fn::kFail: {
        if (absl::Status s = Arity(id, fname, argc, 1, kMany); !s.ok()) return s;
        if (absl::Status s = want_all(Type::Any(), 0); !s.ok()) return s;
        result = Type::Any();
        break;
      }
      case Fn::kLen: {
        if (absl::Status s = Arity(id, fname, argc, 1, 1); !s.ok()) return s;
        absl::StatusOr<Type> t = CheckExpr(args[0]);
        if (!t.ok()) return t.status();
        if (!t->is_list() && t->base != Base::kAny) {
          return Error(args[0], absl::StrCat("len() expects a list, got ", TypeName(*t)));
        }
        kids.push_back(args[0]);
        break;
      }
      case Fn::kSum:
      case Fn::kProd:
        if (absl::Status s = Arity(id, fname, argc, 1, 1); !s.ok()) return s;
        if (absl::Status s = want_all(Type::ListOf(Type::Int()), 0); !s.ok()) return s;
        break;
      case Fn::kRange:
        if (absl::Status s = Arity(id, fname, argc, 1, 3); !s.ok()) return s;
        if (absl::Status s = want_all(Type::Int(), 0); !s.ok()) return s;
        result = Type::ListOf(Type::Int());
        break;
      case Fn::kKnown:
        if (absl::Status s = Arity(id, fname, argc, 1, 1); !s.ok()) return s;
        if (absl::Status s = want_all(Type::Any(), 0); !s.ok()) return s;
        result = Type::Bool();
        break;
      case Fn::kDistinct:
        if (absl::Status s = Arity(id, fname, argc, 1, 1); !s.ok()) return s;
        if (absl::Status s = want_all(Type::ListOf(Type::Int()), 0); !s.ok()) return s;
        result = Type::Bool();
        break;
      case Fn::kAll:
      case Fn::kAnyOf:
        if (absl::Status s = Arity(id, fname, argc, 1, 1); !s.ok()) return s;
        if (absl::Status s = want_all(Type::ListOf(Type::Bool()), 0); !s.ok()) return s;
        result = Type::Bool();
        break;
      case Fn::kFlatten: {
        if (absl::Status s = Arity(id, fname, argc, 1, 1); !s.ok()) return s;
        absl::StatusOr<Type> t = CheckExpr(args[0]);
        if (!t.ok()) return t.status();
        if (t->depth < 2 && t->base != Base::kAny) {
          return Error(args[0], absl::StrCat("flatten() expects a list of lists, got ",
                                             TypeName(*t)));
        }
        kids.push_back(args[0]);
        result = t->depth >= 2 ? t->element() : Type::ListOf(Type::Any());
        break;
      }
      case Fn::kDTypeSize:
        if (absl::Status s = Arity(id, fname, argc, 1, 1); !s.ok()) return s;
        if (absl::Status s = want_all(Type::DType(), 0); !s.ok()) return s;
        break;
    }
    Node& n = p_->nodes[id];
    n.op = Op::kCall;
    n.fn = fn;
    n.ref = ref;
    n.imm = imm;
    n.first_kid = static_cast<int32_t>(p_->kids.size());
    n.num_kids = static_cast<int32_t>(kids.size());
    p_->kids.insert(p_->kids.end(), kids.begin(), kids.end());
    return result;
  }

  const v1::OpDescriptor& op_;
  const Diag& diag_;
  Program* p_;
  absl::flat_hash_map<std::string, int> inputs_;
  absl::flat_hash_map<std::string, int> outputs_;
  absl::flat_hash_map<std::string, const v1::AttributeSpec*> attr_specs_;
  absl::flat_hash_map<std::string, int> constraints_;
  // Let-bound names and comprehension variables in scope: slot and type.
  absl::flat_hash_map<std::string, std::pair<int32_t, Type>> scope_;
  absl::flat_hash_set<int32_t> assigned_;
  absl::flat_hash_set<int32_t> value_assigned_;
  bool assigned_any_ = false;
};

}  // namespace

absl::Status Check(const v1::OpDescriptor& op, const Diag& diag, Program* program) {
  Checker checker(op, diag, program);
  return checker.Run();
}

}  // namespace rules
}  // namespace graphopt
