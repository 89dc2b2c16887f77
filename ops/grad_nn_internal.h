#ifndef GRAPHOPT_OPS_GRAD_NN_INTERNAL_H_
#define GRAPHOPT_OPS_GRAD_NN_INTERNAL_H_

// Private to the builtin_ops target: what the nn family's gradient files (ops/grad_nn.cc,
// ops/grad_nn_norm.cc) share.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/gradient.h"
#include "ops/grad_table.h"

namespace graphopt {
namespace builtin_internal {

// Emits backward nodes through a GradientContext and keeps the first error: after one, every
// call returns an invalid id and emits nothing, so that a gradient function reads as its
// formula and checks status() once before handing its results over.
class GradEmitter {
 public:
  explicit GradEmitter(GradientContext& ctx) : ctx_(ctx) {}

  GradientContext& ctx() { return ctx_; }
  const absl::Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }
  void Fail(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
  }

  // One-output op.
  ValueId Op(absl::string_view type, std::initializer_list<ValueId> inputs,
             AttributeMap attrs = {}, absl::string_view domain = "");
  // An op's `n` outputs (empty after an error).
  std::vector<ValueId> OpN(absl::string_view type, std::initializer_list<ValueId> inputs,
                           int n, AttributeMap attrs = {}, absl::string_view domain = "");
  // The value of a helper's result (graph/gradient.h), recording its error.
  ValueId Take(absl::StatusOr<ValueId> r);

  // A scalar of `like`'s element type.
  ValueId Scalar(double v, ValueId like);
  ValueId Ints(absl::Span<const int64_t> v) { return Int64Constant(ctx_, v); }
  // x's shape as a 1-D int64 value: a constant when every dim is known, else Shape(x).
  ValueId ShapeValue(ValueId x);
  // Static rank of v, or -1.
  int Rank(ValueId v) const;
  // Static dims of v (every one known), or nullopt.
  std::optional<std::vector<int64_t>> StaticDims(ValueId v) const;

  ValueId ReduceSum(ValueId x, absl::Span<const int64_t> axes, bool keepdims) {
    return ok() ? Take(ReduceSumAxes(ctx_, x, axes, keepdims)) : ValueId();
  }
  // ReduceMean over `axes` in the form the graph's opset takes (axes an input from opset 18).
  ValueId ReduceMean(ValueId x, absl::Span<const int64_t> axes, bool keepdims);
  ValueId Unsqueeze(ValueId x, absl::Span<const int64_t> axes) {
    return ok() ? Take(UnsqueezeAxes(ctx_, x, axes)) : ValueId();
  }
  // The number of elements of `big` per element of `small` (a reduction's count) as a scalar of
  // `like`'s type: a constant for static shapes, else Size(big) / Size(small) cast.
  ValueId CountRatio(ValueId big, ValueId small, ValueId like);

  // The forward node's attributes named in `names` that it sets (defaults stay implicit).
  AttributeMap CopyAttrs(std::initializer_list<absl::string_view> names) const;

  // Hands `grad` to input i unless an error came first.
  absl::Status Give(int i, ValueId grad);

 private:
  GradientContext& ctx_;
  absl::Status status_;
};

// The pooling and normalisation gradients (ops/grad_nn_norm.cc).
void AddNnPoolNormGradients(GradientTable* table);

}  // namespace builtin_internal
}  // namespace graphopt

#endif  // GRAPHOPT_OPS_GRAD_NN_INTERNAL_H_
