// Einsum with numpy.einsum semantics; kernel in runtime/kernels/reduction_einsum.cc.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// One operand (or the result) of an einsum equation: its labels, and where "..." stands among
// them (-1 when it does not).
struct EinsumTerm {
  std::string labels;
  int ellipsis = -1;
};

absl::StatusOr<EinsumTerm> ParseEinsumTerm(const InferenceContext& ctx, absl::string_view t) {
  EinsumTerm term;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.substr(i, 3) == "...") {
      if (term.ellipsis >= 0) {
        return ctx.Error("attribute 'equation': term '", t, "' has two '...'");
      }
      term.ellipsis = static_cast<int>(term.labels.size());
      i += 2;
    } else if (absl::ascii_isalpha(t[i])) {
      term.labels.push_back(t[i]);
    } else {
      return ctx.Error("attribute 'equation': unexpected character '", std::string(1, t[i]),
                       "' in term '", t, "'");
    }
  }
  return term;
}

// numpy.einsum's result shape: each label's dims broadcast over the operands, the "..." dims
// broadcast right-aligned; an implicit result lists "..." and then the labels seen once, in
// alphabetical order.
absl::Status EinsumShape(InferenceContext& ctx) {
  absl::StatusOr<std::string> eq = ctx.GetString("equation");
  if (!eq.ok()) return eq.status();
  std::string equation;
  for (char c : *eq) {
    if (c != ' ') equation.push_back(c);
  }
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<EinsumTerm> terms;
  for (absl::string_view t : absl::StrSplit(lhs, ',')) {
    absl::StatusOr<EinsumTerm> term = ParseEinsumTerm(ctx, t);
    if (!term.ok()) return term.status();
    terms.push_back(*std::move(term));
  }
  if (static_cast<int>(terms.size()) != ctx.num_inputs()) {
    return ctx.Error("attribute 'equation' '", *eq, "' has ", terms.size(),
                     " operands but the node has ", ctx.num_inputs(), " inputs");
  }
  // Label -> (dim, seen count); "..." dims of every operand.
  std::vector<std::optional<Dim>> label_dim(128);
  std::vector<int> label_count(128, 0);
  std::vector<std::optional<Dims>> ellipsis_shapes;
  bool ellipsis_rank_known = true;
  for (size_t k = 0; k < terms.size(); ++k) {
    const EinsumTerm& term = terms[k];
    for (char c : term.labels) ++label_count[static_cast<unsigned char>(c)];
    const std::optional<Dims> s = InputShape(ctx, static_cast<int>(k));
    if (!s) {
      if (term.ellipsis >= 0) ellipsis_rank_known = false;
      continue;
    }
    const size_t n = term.labels.size();
    if (term.ellipsis < 0 ? s->size() != n : s->size() < n) {
      return ctx.Error("input ", k, " ", ShapeToString(s), " does not fit the term '",
                       term.labels, term.ellipsis >= 0 ? "' with '...'" : "'",
                       " of attribute 'equation'");
    }
    const size_t ell = s->size() - n;
    if (term.ellipsis >= 0) {
      ellipsis_shapes.push_back(Dims(s->begin() + term.ellipsis,
                                     s->begin() + term.ellipsis + ell));
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t pos = term.ellipsis >= 0 && static_cast<int>(i) >= term.ellipsis ? i + ell : i;
      std::optional<Dim>& d = label_dim[static_cast<unsigned char>(term.labels[i])];
      if (!d) {
        d = (*s)[pos];
        continue;
      }
      std::optional<Dim> merged = BroadcastDim(*d, (*s)[pos]);
      if (!merged) {
        return ctx.Error("label '", std::string(1, term.labels[i]), "' has sizes ",
                         d->ToString(), " and ", (*s)[pos].ToString(), " in attribute 'equation' '",
                         *eq, "'");
      }
      d = *std::move(merged);
    }
  }
  EinsumTerm out;
  if (arrow != std::string::npos) {
    absl::StatusOr<EinsumTerm> t = ParseEinsumTerm(ctx, equation.substr(arrow + 2));
    if (!t.ok()) return t.status();
    out = *std::move(t);
    std::vector<bool> seen(128, false);
    for (char c : out.labels) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (label_count[u] == 0 || seen[u]) {
        return ctx.Error("attribute 'equation' '", *eq, "': output label '", std::string(1, c),
                         label_count[u] == 0 ? "' is not an input label" : "' is repeated");
      }
      seen[u] = true;
    }
  } else {
    bool any_ellipsis = false;
    for (const EinsumTerm& t : terms) any_ellipsis |= t.ellipsis >= 0;
    out.ellipsis = any_ellipsis ? 0 : -1;
    for (int c = 0; c < 128; ++c) {
      if (label_count[c] == 1) out.labels.push_back(static_cast<char>(c));
    }
  }
  Dims ellipsis_dims;
  if (out.ellipsis >= 0) {
    if (!ellipsis_rank_known) {
      ctx.set_output_shape(0, std::nullopt);
      return absl::OkStatus();
    }
    if (!ellipsis_shapes.empty()) {
      absl::StatusOr<std::optional<Dims>> b = BroadcastShapes(ellipsis_shapes);
      if (!b.ok()) return NodeError(ctx, b.status(), "the '...' dims do not broadcast: ");
      ellipsis_dims = **b;
    }
  }
  Dims result;
  for (size_t i = 0; i <= out.labels.size(); ++i) {
    if (static_cast<int>(i) == out.ellipsis) {
      result.insert(result.end(), ellipsis_dims.begin(), ellipsis_dims.end());
    }
    if (i == out.labels.size()) break;
    const std::optional<Dim>& d = label_dim[static_cast<unsigned char>(out.labels[i])];
    result.push_back(d ? *d : Dim::Unknown());
  }
  ctx.set_output_shape(0, std::move(result));
  return absl::OkStatus();
}

}  // namespace

void AddReductionEinsumOps(std::vector<OpDef>* ops) {
  ops->push_back(OpBuilder("Einsum", "Einstein summation over the inputs, as numpy.einsum.")
                     .VariadicInput("Inputs", "T", 1)
                     .Output("Output", "T")
                     .RequiredAttr("equation", v1::ATTR_STRING)
                     .Constraint("T", NumericNoBfloat16())
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(EinsumShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
