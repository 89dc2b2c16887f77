// The effects of statements (asserts, type constraints) and the writing of a rule's results.

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "graph/types.h"
#include "rules/machine.h"

namespace graphopt {
namespace rules {

void Machine::AssertFailed(const Stmt& st, const Val* parts) {
  if (st.parts.empty()) {
    Fail(st.pos, absl::StrCat("assertion failed: ",
                              p_.source.substr(st.text_begin, st.text_end - st.text_begin)));
    return;
  }
  Fail(st.pos, FormatParts(st.parts.data(), parts, st.parts.size()));
}

bool Machine::CheckConstraint(const Stmt& st, const Val* dtypes) {
  absl::InlinedVector<int64_t, 8> allowed;
  for (size_t k = 0; k < st.parts.size(); ++k) {
    if (dtypes[k].tag() == Tag::kDType) allowed.push_back(dtypes[k].i);
  }
  for (int32_t declared : st.inputs) {
    const int last = declared == p_.variadic_input ? num_inputs_ - 1 : declared;
    for (int i = declared; i <= last; ++i) {
      if (!HasInput(i)) continue;
      const v1::DataType dt = ctx_.input_type(i).dtype;
      if (dt == v1::DT_UNDEFINED) continue;
      if (std::find(allowed.begin(), allowed.end(), dt) != allowed.end()) continue;
      std::string set;
      for (int64_t a : allowed) {
        absl::StrAppend(&set, set.empty() ? "" : ", ",
                        DataTypeName(static_cast<v1::DataType>(a)));
      }
      Fail(st.pos, absl::StrCat("input '", InputLabel(i), "' has type ", DataTypeName(dt),
                                ", which '", st.name, " in {...}' does not allow (allowed: ", set,
                                ")"));
      return false;
    }
  }
  return true;
}

bool Machine::CheckDims(const Val& v, int32_t pos, int output) {
  for (uint32_t k = 0; k < v.len(); ++k) {
    const Val d = HeapAt(v, k);
    if (ABSL_PREDICT_FALSE(d.tag() == Tag::kInt && d.i < 0)) {
      Fail(pos, absl::StrCat("output[", output, "] has a negative dim ", d.i, " at index ", k,
                             ": ", Format(v, Type::ListOf(Type::Int()))));
      return false;
    }
  }
  return true;
}

std::optional<Dims> Machine::ToDims(const Val& v) {
  if (v.unknown()) return std::nullopt;
  std::optional<Dims> out(std::in_place, v.len());
  Dims& dims = *out;
  for (uint32_t k = 0; k < v.len(); ++k) {
    const Val d = HeapAt(v, k);
    switch (d.tag()) {
      case Tag::kInt:
        dims[k] = Dim::Known(d.i);
        break;
      case Tag::kMono:
        if (d.i == 1) {
          dims[k] = Dim::Symbol(*atoms_[d.len()]);
        } else if (std::optional<std::string> s = MonoString(d)) {
          dims[k] = Dim::Symbol(*std::move(s));
        }
        break;
      case Tag::kSymRef:
        dims[k] = Dim::Symbol(*d.s);
        break;
      case Tag::kSym:
        if (std::optional<std::string> s = polys_[d.i].ToString()) {
          dims[k] = Dim::Symbol(*std::move(s));
        }
        break;
      default:
        break;  // unknown
    }
  }
  return out;
}

absl::Status Machine::WriteShapes(const Results& results, InferenceContext& ctx) {
  // Everything that can fail first: nothing is written when the rule fails.
  for (const auto& [st, v] : results) {
    if (v.unknown()) continue;
    switch (st->kind) {
      case StmtKind::kOutputAll:
        if (static_cast<int>(v.len()) != ctx.num_outputs()) {
          Fail(st->pos, absl::StrCat("output[*] has ", v.len(), " shapes but the node has ",
                                     ctx.num_outputs(), " outputs"));
          return Status();
        }
        for (int i = 0; i < ctx.num_outputs(); ++i) {
          if (!CheckDims(HeapAt(v, i), st->pos, i)) return Status();
        }
        break;
      case StmtKind::kOutput:
        if (!CheckDims(v, st->pos, st->output)) return Status();
        break;
      default:  // contents may hold negative entries (a Reshape target such as [N, -1])
        break;
    }
  }
  // Outputs the rule leaves alone get an unknown rank.
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const bool assigned = p_.assigns_all_outputs ||
                          (i < static_cast<int>(p_.assigns_output.size()) && p_.assigns_output[i]);
    if (!assigned) ctx.set_output_shape(i, std::nullopt);
  }
  for (const auto& [st, v] : results) {
    switch (st->kind) {
      case StmtKind::kOutputAll:
        for (int i = 0; i < ctx.num_outputs(); ++i) {
          ctx.set_output_shape(i, v.unknown() ? std::nullopt : ToDims(HeapAt(v, i)));
        }
        break;
      case StmtKind::kOutputValue:
        if (!v.unknown() && v.len() <= kMaxDimsValueElements) {
          ctx.set_output_dims_value(st->output, *ToDims(v));
        }
        break;
      default:
        ctx.set_output_shape(st->output, ToDims(v));
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status Machine::WriteTypes(const Results& results, InferenceContext& ctx) {
  for (const auto& [st, v] : results) {
    if (st->kind == StmtKind::kOutputAll) {
      if (v.unknown()) continue;
      if (static_cast<int>(v.len()) != ctx.num_outputs()) {
        Fail(st->pos, absl::StrCat("output[*] has ", v.len(), " types but the node has ",
                                   ctx.num_outputs(), " outputs"));
        return Status();
      }
      for (int i = 0; i < ctx.num_outputs(); ++i) {
        const Val d = HeapAt(v, i);
        if (d.tag() == Tag::kDType) ctx.set_output_dtype(i, static_cast<v1::DataType>(d.i));
      }
      continue;
    }
    if (v.tag() == Tag::kDType) ctx.set_output_dtype(st->output, static_cast<v1::DataType>(v.i));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<int64_t>> Machine::Cost(const Results& results) const {
  for (const auto& [st, v] : results) {
    if (st->kind == StmtKind::kResult && v.tag() == Tag::kInt) return std::optional<int64_t>(v.i);
  }
  return std::optional<int64_t>();
}

}  // namespace rules
}  // namespace graphopt
