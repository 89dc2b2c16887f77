// Text operators with ONNX semantics: StringNormalizer and TfIdfVectorizer; kernels in
// runtime/kernels/misc_text.cc.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// StringNormalizer: [C] or [1, C]; stop words may remove strings (at least one stays, possibly
// empty), so the length is known only without stop words.
absl::Status StringNormalizerShape(InferenceContext& ctx) {
  absl::StatusOr<std::string> action = ctx.GetString("case_change_action");
  if (!action.ok()) return action.status();
  if (*action != "NONE" && *action != "LOWER" && *action != "UPPER") {
    return ctx.Error("attribute 'case_change_action' must be NONE, LOWER or UPPER, got '",
                     *action, "'");
  }
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  if (x->empty() || x->size() > 2 ||
      (x->size() == 2 && !MergeEqualDims((*x)[0], Dim::Known(1)).ok())) {
    return ctx.Error("input must be [C] or [1, C], got ", ShapeToString(x));
  }
  const v1::Attribute* stopwords = ctx.attr("stopwords");
  const bool filters = stopwords != nullptr && stopwords->value_case() == v1::Attribute::kStrings &&
                       stopwords->strings().values_size() > 0;
  Dims out = *x;
  if (filters) out.back() = Dim::Unknown();
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// TfIdfVectorizer: [max(ngram_indexes) + 1] or [N, max(ngram_indexes) + 1].
absl::Status TfIdfVectorizerShape(InferenceContext& ctx) {
  absl::StatusOr<std::vector<int64_t>> indexes = ctx.GetInts("ngram_indexes");
  if (!indexes.ok()) return indexes.status();
  absl::StatusOr<std::string> mode = ctx.GetString("mode");
  if (!mode.ok()) return mode.status();
  if (*mode != "TF" && *mode != "IDF" && *mode != "TFIDF") {
    return ctx.Error("attribute 'mode' must be TF, IDF or TFIDF, got '", *mode, "'");
  }
  if (indexes->empty() || *std::min_element(indexes->begin(), indexes->end()) < 0) {
    return ctx.Error("attribute 'ngram_indexes' ", IntsToString(*indexes),
                     " must be non-empty and non-negative");
  }
  const std::optional<int64_t> max_index =
      CheckedAdd(*std::max_element(indexes->begin(), indexes->end()), 1);
  const Dim width = max_index ? Dim::Known(*max_index) : Dim::Unknown();
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
  } else if (x->size() == 1) {
    ctx.set_output_shape(0, Dims{width});
  } else if (x->size() == 2) {
    ctx.set_output_shape(0, Dims{(*x)[0], width});
  } else {
    return ctx.Error("input must be 1-D or 2-D, got ", ShapeToString(x));
  }
  return absl::OkStatus();
}

}  // namespace

void AddMiscTextOps(std::vector<OpDef>* ops) {
  ops->push_back(OpBuilder("StringNormalizer", "Case-folds strings and removes stop words.")
                     .Input("X", "T")
                     .Output("Y", "T")
                     .StringAttr("case_change_action", "NONE", "NONE, LOWER or UPPER.")
                     .IntAttr("is_case_sensitive", 0)
                     .Attr("locale", v1::ATTR_STRING)
                     .Attr("stopwords", v1::ATTR_STRINGS)
                     .Constraint("T", {v1::DT_STRING})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(StringNormalizerShape)
                     .Build());
  ops->push_back(OpBuilder("TfIdfVectorizer", "N-gram counts (TF, IDF or TFIDF weighted) of the "
                                              "input sequences.")
                     .Input("X", "T")
                     .Output("Y", "T1")
                     .RequiredAttr("max_gram_length", v1::ATTR_INT)
                     .RequiredAttr("max_skip_count", v1::ATTR_INT)
                     .RequiredAttr("min_gram_length", v1::ATTR_INT)
                     .RequiredAttr("mode", v1::ATTR_STRING, "TF, IDF or TFIDF.")
                     .RequiredAttr("ngram_counts", v1::ATTR_INTS)
                     .RequiredAttr("ngram_indexes", v1::ATTR_INTS)
                     .Attr("pool_int64s", v1::ATTR_INTS)
                     .Attr("pool_strings", v1::ATTR_STRINGS)
                     .Attr("weights", v1::ATTR_FLOATS)
                     .Constraint("T", {v1::DT_STRING, v1::DT_INT32, v1::DT_INT64})
                     .Constraint("T1", {v1::DT_FLOAT32})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(TfIdfVectorizerShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
