// The builtin functions of the rule language (docs/rule-language.md, "Builtins"): those that
// read the node (inputs, attributes, opset) and those computed from their arguments' values.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "graph/types.h"
#include "rules/machine.h"

namespace graphopt {
namespace rules {

Val Machine::ReadInputShape(int i, int32_t pos) {
  if (ABSL_PREDICT_FALSE(!HasInput(i))) return Absent(i, pos);
  Val v;
  if (const std::optional<Dims>& shape = ctx_.input_shape(i)) {
    const size_t n = shape->size();
    const size_t off = heap_.AppendUninitialized(n);
    for (size_t k = 0; k < n; ++k) heap_[off + k] = DimVal((*shape)[k]);
    v = Val::List(off, n);
    if (!Charge(pos, static_cast<int64_t>(n))) return Val::Error();
  } else if (const v1::Tensor* t = ctx_.input_constant(i)) {
    const size_t off = heap_.size();
    for (int64_t d : t->dims()) heap_.push_back(Val::Int(d));
    v = Val::List(off, t->dims_size());
    if (!Charge(pos, t->dims_size())) return Val::Error();
  }
  if (i < kCached) {
    shape_cached_ |= 1u << i;
    ShapeCache(i) = v;
  }
  return v;
}

Val Machine::InputValue(int i, int32_t pos) {
  if (ABSL_PREDICT_FALSE(!HasInput(i))) return Absent(i, pos);
  if (const Dims* d = ctx_.input_dims_value(i)) {
    const size_t n = d->size();
    const size_t off = heap_.AppendUninitialized(n);
    for (size_t k = 0; k < n; ++k) heap_[off + k] = DimVal((*d)[k]);
    if (!Charge(pos, static_cast<int64_t>(n))) return Val::Error();
    return Val::List(off, n);
  }
  const v1::Tensor* t = ctx_.input_constant(i);
  if (t == nullptr || t->dims_size() > 1) return Val();
  absl::StatusOr<std::vector<int64_t>> ints = TensorToInts(*t, kMaxDimsValueElements);
  if (!ints.ok()) return Val();
  const size_t off = heap_.size();
  for (int64_t x : *ints) heap_.push_back(Val::Int(x));
  if (!Charge(pos, static_cast<int64_t>(ints->size()))) return Val::Error();
  return Val::List(off, ints->size());
}

bool Machine::VariadicIndex(const Insn& n, const Val& k, int* index) {
  if (k.tag() != Tag::kInt) {
    *index = -1;
    return true;
  }
  const int64_t first = n.imm;
  const int64_t count = std::max<int64_t>(0, num_inputs_ - first);
  const int64_t j = k.i < 0 ? k.i + count : k.i;
  if (j < 0 || j >= count) {
    Fail(n.pos, absl::StrCat("index ", k.i, " is out of range for the ", count, " inputs of '",
                             p_.input_names[first], "'"));
    return false;
  }
  *index = static_cast<int>(first + j);
  return true;
}

Val Machine::ReadAttr(const Insn& n, bool* absent) {
  const size_t index = static_cast<size_t>(n.imm);
  const AttrRef& ref = p_.attrs[index];
  const v1::Attribute* a = ctx_.attr(ref.name);
  if (a == nullptr) {
    if (n.num_kids == 1) {
      *absent = true;
      return Val();
    }
    return Fail(n.pos, absl::StrCat("attribute '", ref.name, "' is not set and has no default "
                                    "(use attr(\"",
                                    ref.name, "\", fallback) or has_attr(\"", ref.name,
                                    "\"))"));
  }
  const v1::Attribute::ValueCase vc = a->value_case();
  auto mismatch = [&](const char* want) {
    return Fail(n.pos, absl::StrCat("attribute '", ref.name, "' must be ", want, ", got ",
                                    AttributeKindName(*a)));
  };
  Val v;
  switch (ref.type) {
    case v1::ATTR_INT:
      if (vc == v1::Attribute::kI) {
        v = Val::Int(a->i());
      } else if (vc == v1::Attribute::kDtype) {
        v = Val::Int(a->dtype());
      } else {
        return mismatch("an int");
      }
      break;
    case v1::ATTR_DTYPE:
      if (vc == v1::Attribute::kDtype) {
        v = Val::DType(a->dtype());
      } else if (vc == v1::Attribute::kI) {
        v = Val::DType(a->i());
      } else {
        return mismatch("a dtype");
      }
      break;
    case v1::ATTR_STRING:
      if (vc != v1::Attribute::kS) return mismatch("a string");
      v = Val::Str(&a->s());
      break;
    case v1::ATTR_INTS:
    case v1::ATTR_SHAPE: {
      const size_t off = heap_.size();
      if (vc == v1::Attribute::kInts) {
        for (int64_t x : a->ints().values()) heap_.push_back(Val::Int(x));
      } else if (vc == v1::Attribute::kShape && ref.type == v1::ATTR_SHAPE) {
        for (const v1::Dim& d : a->shape().dims()) {
          if (d.value_case() == v1::Dim::kSize) {
            heap_.push_back(Val::Int(d.size()));
          } else if (d.value_case() == v1::Dim::kSymbol) {
            heap_.push_back(SymbolVal(&d.symbol()));
          } else {
            heap_.push_back(Val());
          }
        }
      } else {
        return mismatch(ref.type == v1::ATTR_SHAPE ? "a shape" : "a list of ints");
      }
      const size_t len = heap_.size() - off;
      if (!CheckLength(n.pos, static_cast<int64_t>(len))) return Val::Error();
      v = Val::List(off, len);
      break;
    }
    case v1::ATTR_STRINGS: {
      if (vc != v1::Attribute::kStrings) return mismatch("a list of strings");
      const size_t off = heap_.size();
      for (const std::string& s : a->strings().values()) heap_.push_back(Val::Str(&s));
      const size_t len = heap_.size() - off;
      if (!CheckLength(n.pos, static_cast<int64_t>(len))) return Val::Error();
      v = Val::List(off, len);
      break;
    }
    default:
      return Fail(n.pos, absl::StrCat("attribute '", ref.name, "' cannot be read"));
  }
  if (index < kCached) {
    attr_cached_ |= 1u << index;
    AttrCache(static_cast<int>(index)) = v;
  }
  return v;
}

Val Machine::Merge(int32_t pos, const Val& a, const Val& b) {
  const Tri eq = CompareInts(Op::kEq, a, b);
  if (eq == kTrue) return a;
  if (eq == kFalse) {
    return Fail(pos, absl::StrCat("merge(): sizes ", Format(a, Type::Int()), " and ",
                                  Format(b, Type::Int()), " differ"));
  }
  if (a.tag() == Tag::kInt) return a;
  if (b.tag() == Tag::kInt) return b;
  if (a.symbolic() && b.symbolic()) return Val();
  return a.symbolic() ? a : b;
}

Val Machine::Broadcast(const Insn& n, const Val* args, int count) {
  // Several shapes, or a single list of shapes (imm 1).
  const Val* shapes = args;
  size_t num = static_cast<size_t>(count);
  if (n.imm == 1) {
    if (args[0].unknown()) return Val();
    shapes = &heap_[args[0].i];
    num = args[0].len();
  }
  uint32_t rank = 0;
  for (size_t i = 0; i < num; ++i) {
    if (shapes[i].unknown()) return Val();
    rank = std::max(rank, shapes[i].len());
  }
  if (!Charge(n.pos, static_cast<int64_t>(rank) * static_cast<int64_t>(num))) {
    return Val::Error();
  }
  const size_t off = heap_.Append(rank, Val::Int(1));
  absl::InlinedVector<int, 8> decided_by(rank, -1);
  for (size_t i = 0; i < num; ++i) {
    const Val s = shapes[i];
    const uint32_t shift = rank - s.len();
    for (uint32_t k = 0; k < s.len(); ++k) {
      const Val a = heap_[off + shift + k];
      const Val b = HeapAt(s, k);
      Val r;
      if (a.tag() == Tag::kInt && b.tag() == Tag::kInt) {
        if (a.i == b.i || b.i == 1) {
          r = a;
        } else if (a.i == 1) {
          r = b;
        } else {
          const int j = std::max(decided_by[shift + k], 0);
          return Fail(n.pos, absl::StrCat("cannot broadcast shapes ",
                                          Format(shapes[j], Type::ListOf(Type::Int())),
                                          " (operand ", j, ") and ",
                                          Format(s, Type::ListOf(Type::Int())), " (operand ", i,
                                          "): dim ", a.i, " vs ", b.i, " at output axis ",
                                          shift + k));
        }
      } else if (a.tag() == Tag::kInt) {
        r = a.i == 1 ? b : a;
      } else if (b.tag() == Tag::kInt) {
        r = b.i == 1 ? a : b;
      } else if (a.symbolic() && b.symbolic() && CompareInts(Op::kEq, a, b) == kTrue) {
        r = a;
      }  // else unknown
      if (b.tag() == Tag::kInt && b.i != 1) decided_by[shift + k] = static_cast<int>(i);
      heap_[off + shift + k] = r;
    }
  }
  return Val::List(off, rank);
}

template <Fn kFn>
Val Machine::NodeBuiltin(const Insn& n, int input) {
  switch (kFn) {
    case Fn::kRank:
    case Fn::kShape:
    case Fn::kValue: {
      if (kFn == Fn::kValue) return InputValue(input, n.pos);
      const Val s = InputShape(input, n.pos);
      if (kFn == Fn::kShape || s.failed()) return s;
      return s.unknown() ? Val() : Val::Int(s.len());
    }
    case Fn::kHas:
      return Val::Bool(HasInput(input));
    case Fn::kDTypeOf: {
      if (n.ref == Ref::kConstraint) {
        for (int32_t d : p_.constraint_inputs[n.imm]) {
          const int last = d == p_.variadic_input ? num_inputs_ - 1 : d;
          for (int i = d; i <= last; ++i) {
            if (!HasInput(i)) continue;
            const v1::DataType dt = ctx_.input_type(i).dtype;
            if (dt != v1::DT_UNDEFINED) return Val::DType(dt);
          }
        }
        return Val();
      }
      if (ABSL_PREDICT_FALSE(!HasInput(input))) return Absent(input, n.pos);
      const v1::DataType dt = ctx_.input_type(input).dtype;
      return dt == v1::DT_UNDEFINED ? Val() : Val::DType(dt);
    }
    case Fn::kCount: {
      const int total = n.ref == Ref::kVariadicOutput ? ctx_.num_outputs() : num_inputs_;
      return Val::Int(std::max<int64_t>(0, total - n.imm));
    }
    case Fn::kShapes: {
      const int count = std::max(0, num_inputs_ - static_cast<int>(n.imm));
      if (!CheckLength(n.pos, count)) return Val::Error();
      const size_t base = scratch_.size();
      for (int i = static_cast<int>(n.imm); i < num_inputs_; ++i) {
        if (!HasInput(i)) continue;
        const Val s = InputShape(i, n.pos);
        if (s.failed()) return s;
        scratch_.push_back(s);
      }
      return ListFromScratch(base);
    }
    case Fn::kHasAttr: {
      const int64_t index = n.imm;
      if (index < kCached && (has_attr_cached_ >> index & 1) != 0) {
        return Val::Bool((has_attr_ >> index & 1) != 0);
      }
      const bool has = node_.attributes.contains(p_.attrs[index].name);
      if (index < kCached) {
        has_attr_cached_ |= 1u << index;
        if (has) has_attr_ |= 1u << index;
      }
      return Val::Bool(has);
    }
    case Fn::kAttrDType: {
      const std::string& name = p_.attrs[n.imm].name;
      const v1::Attribute* a = ctx_.attr(name);
      if (a == nullptr) return Val();
      int64_t dt;
      if (a->value_case() == v1::Attribute::kDtype) {
        dt = a->dtype();
      } else if (a->value_case() == v1::Attribute::kI) {
        dt = a->i();
      } else {
        return Fail(n.pos, absl::StrCat("attribute '", name, "' must be a dtype or an int, got ",
                                        AttributeKindName(*a)));
      }
      if (dt < std::numeric_limits<int>::min() || dt > std::numeric_limits<int>::max() ||
          !v1::DataType_IsValid(static_cast<int>(dt)) || dt == v1::DT_UNDEFINED) {
        return Fail(n.pos, absl::StrCat("attribute '", name, "' is not a data type: ", dt));
      }
      return Val::DType(dt);
    }
    case Fn::kOpset:
      if (opset_ < 0) opset_ = ctx_.opset_version();
      return Val::Int(opset_);
    case Fn::kNumInputs:
      return Val::Int(num_inputs_);
    case Fn::kNumOutputs:
      return Val::Int(ctx_.num_outputs());
    default:
      return Fail(n.pos, "internal: not a builtin of the node");
  }
}

// Indexed by Fn; the functions of argument values have none.
#define GRAPHOPT_RULES_NODE_BUILTIN(fn) \
  [](Machine& m, const Insn& n, int input) { return m.NodeBuiltin<fn>(n, input); }
const Machine::NodeBuiltinFn Machine::kNodeBuiltins[static_cast<int>(Fn::kDistinct) + 1] = {
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kRank),       // kRank
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kShape),      // kShape
    nullptr,                                      // kDim (DimAt)
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kHas),        // kHas
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kValue),      // kValue
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kDTypeOf),    // kDTypeOf
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kCount),      // kCount
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kShapes),     // kShapes
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kHasAttr),    // kHasAttr
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kAttrDType),  // kAttrDType
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kOpset),      // kOpset
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kNumInputs),  // kNumInputs
    GRAPHOPT_RULES_NODE_BUILTIN(Fn::kNumOutputs), // kNumOutputs
};
#undef GRAPHOPT_RULES_NODE_BUILTIN

Val Machine::DimAt(const Insn& n, int input, const Val& s, const Val& k) {
  if (s.unknown() || k.tag() != Tag::kInt) return Val();
  const int64_t j = k.i < 0 ? k.i + s.len() : k.i;
  if (j < 0 || j >= s.len()) {
    return Fail(n.pos, absl::StrCat("dim(): index ", k.i, " is out of range for input '",
                                    InputLabel(input), "' of rank ", s.len(), " (shape ",
                                    Format(s, Type::ListOf(Type::Int())), ")"));
  }
  return HeapAt(s, j);
}

Val Machine::HasItem(const Insn& n, const Val& k) {
  if (k.tag() != Tag::kInt) return Val();
  const int64_t count = std::max<int64_t>(0, num_inputs_ - n.imm);
  const int64_t j = k.i < 0 ? k.i + count : k.i;
  return Val::Bool(j >= 0 && j < count && HasInput(static_cast<int>(n.imm + j)));
}

template <Fn kFn>
Val Machine::Apply(const Insn& n, const Val* args, int count) {
  switch (kFn) {
    case Fn::kBroadcast:
      return Broadcast(n, args, count);
    case Fn::kNormalizeAxis: {
      const Val axis = args[0];
      const Val rank = args[1];
      if (axis.tag() != Tag::kInt || rank.tag() != Tag::kInt) return Val();
      if (rank.i < 0 || axis.i < -rank.i || axis.i >= rank.i) {
        return Fail(n.pos, absl::StrCat("axis ", axis.i, " is out of range for rank ", rank.i,
                                        " (expected [", -rank.i, ", ", rank.i - 1, "])"));
      }
      return Val::Int(axis.i < 0 ? axis.i + rank.i : axis.i);
    }
    case Fn::kMerge:
    case Fn::kMin:
    case Fn::kMax: {
      // int..., or a single list (imm 1).
      const Val* vals = args;
      size_t num = static_cast<size_t>(count);
      if (n.imm == 1) {
        const Val l = args[0];
        if (l.unknown()) return Val();
        vals = &heap_[l.i];
        num = l.len();
        if (!Charge(n.pos, l.len())) return Val::Error();
      }
      if (num == 0) {
        return Fail(n.pos, absl::StrCat(kFn == Fn::kMerge ? "merge" : kFn == Fn::kMin ? "min"
                                                                                        : "max",
                                        "() of an empty list"));
      }
      Val r = vals[0];
      for (size_t k = 1; k < num; ++k) {
        const Val v = vals[k];
        if (kFn == Fn::kMerge) {
          r = Merge(n.pos, r, v);
          if (r.failed()) return r;
        } else if (r.unknown() || v.unknown()) {
          r = Val();
        } else if (r.tag() == Tag::kInt && v.tag() == Tag::kInt) {
          if (kFn == Fn::kMax ? v.i > r.i : v.i < r.i) r = v;
        } else {
          r = MinMax(kFn == Fn::kMax, r, v);
        }
      }
      return r;
    }
    case Fn::kAbs: {
      const Val a = args[0];
      if (a.tag() != Tag::kInt) return Val();
      if (a.i == kInt64Min) return Fail(n.pos, "integer overflow in abs()");
      return Val::Int(a.i < 0 ? -a.i : a.i);
    }
    case Fn::kCdiv:
      return IntOp(Arith::kCeilDiv, n.pos, args[0], args[1]);
    case Fn::kLen:
      return LenOf(args[0]);
    case Fn::kKnown:
      return KnownOf(args[0]);
    case Fn::kSum:
    case Fn::kProd: {
      const Val l = args[0];
      if (l.unknown()) return l;
      Val r = Val::Int(kFn == Fn::kSum ? 0 : 1);
      for (uint32_t k = 0; k < l.len(); ++k) {
        r = IntOp(kFn == Fn::kSum ? Arith::kAdd : Arith::kMul, n.pos, r, HeapAt(l, k));
        if (r.failed()) return r;
      }
      if (!Charge(n.pos, l.len())) return Val::Error();
      return r;
    }
    case Fn::kRange: {
      for (int k = 0; k < count; ++k) {
        if (args[k].tag() != Tag::kInt) return Val();
      }
      const int64_t start = count == 1 ? 0 : args[0].i;
      const int64_t stop = count == 1 ? args[0].i : args[1].i;
      const int64_t step = count == 3 ? args[2].i : 1;
      if (step == 0) return Fail(n.pos, "range() step must not be zero");
      // Element count, computed in 128 bits so that no bound overflows.
      __int128 num = 0;
      const __int128 span = static_cast<__int128>(stop) - start;
      if ((step > 0 && span > 0) || (step < 0 && span < 0)) {
        const __int128 st = step;
        num = (span + (step > 0 ? st - 1 : st + 1)) / st;
      }
      if (num > limits_.max_list_length) {
        return Fail(n.pos, absl::StrCat("range() of ", static_cast<int64_t>(std::min<__int128>(
                                                           num, INT64_MAX)),
                                        " elements exceeds the limit of ",
                                        limits_.max_list_length));
      }
      if (!Charge(n.pos, static_cast<int64_t>(num))) return Val::Error();
      const size_t off = heap_.AppendUninitialized(static_cast<size_t>(num));
      for (int64_t k = 0; k < static_cast<int64_t>(num); ++k) {
        heap_[off + k] = Val::Int(start + k * step);
      }
      return Val::List(off, static_cast<size_t>(num));
    }
    case Fn::kAll:
    case Fn::kAnyOf: {
      const Val l = args[0];
      if (l.unknown()) return l;
      const bool all = kFn == Fn::kAll;
      bool maybe = false;
      for (uint32_t k = 0; k < l.len(); ++k) {
        const Val x = HeapAt(l, k);
        if (x.unknown()) {
          maybe = true;
        } else if ((x.i != 0) != all) {
          return Val::Bool(!all);
        }
      }
      if (!Charge(n.pos, l.len())) return Val::Error();
      return maybe ? Val() : Val::Bool(all);
    }
    case Fn::kFlatten: {
      const Val l = args[0];
      if (l.unknown()) return l;
      int64_t total = 0;
      for (uint32_t k = 0; k < l.len(); ++k) {
        const Val x = HeapAt(l, k);
        if (x.unknown()) return Val();
        total += x.len();
      }
      if (!CheckLength(n.pos, total)) return Val::Error();
      const size_t off = heap_.AppendUninitialized(static_cast<size_t>(total));
      size_t w = off;
      for (uint32_t k = 0; k < l.len(); ++k) {
        const Val x = HeapAt(l, k);
        for (uint32_t e = 0; e < x.len(); ++e) heap_[w++] = HeapAt(x, e);
      }
      return Val::List(off, static_cast<size_t>(total));
    }
    case Fn::kDistinct: {
      // Kleene: false when two elements are provably equal, true when every pair provably
      // differs, else unknown.
      const Val l = args[0];
      if (l.unknown()) return l;
      if (!Charge(n.pos, static_cast<int64_t>(l.len()) * l.len() / 2)) return Val::Error();
      bool maybe = false;
      for (uint32_t a = 0; a < l.len(); ++a) {
        const Val x = HeapAt(l, a);
        for (uint32_t b = a + 1; b < l.len(); ++b) {
          const Val y = HeapAt(l, b);
          const Tri eq = x.tag() == Tag::kInt && y.tag() == Tag::kInt
                             ? (x.i == y.i ? kTrue : kFalse)
                             : CompareInts(Op::kEq, x, y);
          if (eq == kTrue) return Val::Bool(false);
          maybe |= eq == kMaybe;
        }
      }
      return maybe ? Val() : Val::Bool(true);
    }
    case Fn::kDTypeSize: {
      const Val d = args[0];
      const int size =
          d.tag() == Tag::kDType ? DataTypeSize(static_cast<v1::DataType>(d.i)) : 0;
      return size > 0 ? Val::Int(size) : Val();
    }
    default:
      return Fail(n.pos, "internal: not an applied function");
  }
}

Val Machine::ApplyNode(const Insn& n, const Val* args, int count) {
  switch (FnOf(n)) {
    case Fn::kBroadcast:
      return Apply<Fn::kBroadcast>(n, args, count);
    case Fn::kNormalizeAxis:
      return Apply<Fn::kNormalizeAxis>(n, args, count);
    case Fn::kMerge:
      return Apply<Fn::kMerge>(n, args, count);
    case Fn::kMin:
      return Apply<Fn::kMin>(n, args, count);
    case Fn::kMax:
      return Apply<Fn::kMax>(n, args, count);
    case Fn::kAbs:
      return Apply<Fn::kAbs>(n, args, count);
    case Fn::kCdiv:
      return Apply<Fn::kCdiv>(n, args, count);
    case Fn::kSum:
      return Apply<Fn::kSum>(n, args, count);
    case Fn::kProd:
      return Apply<Fn::kProd>(n, args, count);
    case Fn::kRange:
      return Apply<Fn::kRange>(n, args, count);
    case Fn::kAll:
      return Apply<Fn::kAll>(n, args, count);
    case Fn::kAnyOf:
      return Apply<Fn::kAnyOf>(n, args, count);
    case Fn::kFlatten:
      return Apply<Fn::kFlatten>(n, args, count);
    case Fn::kDistinct:
      return Apply<Fn::kDistinct>(n, args, count);
    case Fn::kDTypeSize:
      return Apply<Fn::kDTypeSize>(n, args, count);
    default:
      return Fail(n.pos, "internal: not an applied function");
  }
}

}  // namespace rules
}  // namespace graphopt
