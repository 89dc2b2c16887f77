#ifndef GRAPHOPT_GRAPH_CONSTANT_VIEW_H_
#define GRAPHOPT_GRAPH_CONSTANT_VIEW_H_

// Read-only access to the elements of a constant tensor (an initializer or a Constant node's
// value), without the runtime: rewriting passes read small constants (a BatchNormalization's
// statistics, an operand that may be all ones) through this view, so that only constant folding
// links the kernels.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/types.h"
#include "proto/graph.pb.h"

namespace graphopt {

class ConstantView {
 public:
  // The view of the constant defining `value` (ConstantTensorOf: an initializer that is not a
  // graph input, or a Constant node's 'value'); nullopt when there is none, or when it is not
  // viewable (see Of(tensor)).
  static std::optional<ConstantView> Of(const Graph& graph, ValueId value,
                                        int64_t max_elements = int64_t{1} << 26);
  // nullopt when the elements are a blob reference, the dtype is not numeric or bool, the dims
  // are negative or overflow, the data does not hold exactly the elements, or there are more
  // than `max_elements`. The view borrows `tensor`, which must outlive it.
  static std::optional<ConstantView> Of(const v1::Tensor& tensor,
                                        int64_t max_elements = int64_t{1} << 26);

  v1::DataType dtype() const { return tensor_->dtype(); }
  int rank() const { return tensor_->dims_size(); }
  int64_t dim(int i) const { return tensor_->dims(i); }
  std::vector<int64_t> dims() const {
    return std::vector<int64_t>(tensor_->dims().begin(), tensor_->dims().end());
  }
  int64_t num_elements() const { return num_elements_; }
  // Element i (row-major) as a double: exact for every float and for integers below 2^53.
  double AsDouble(int64_t i) const;

 private:
  ConstantView(const v1::Tensor* tensor, int64_t n) : tensor_(tensor), num_elements_(n) {}
  const v1::Tensor* tensor_;
  int64_t num_elements_;
};

// Builds a float32 or float64 wire tensor of `dims` element by element, each element rounded
// once to the dtype. Elements not set stay zero. The buffer and the dtype are resolved once, so
// Set is a store.
class FloatTensorBuilder {
 public:
  FloatTensorBuilder(v1::DataType dtype, const std::vector<int64_t>& dims);
  FloatTensorBuilder(const FloatTensorBuilder&) = delete;
  FloatTensorBuilder& operator=(const FloatTensorBuilder&) = delete;

  void Set(int64_t i, double v) {
    if (float32_) {
      const float f = static_cast<float>(v);
      std::memcpy(raw_ + i * sizeof(float), &f, sizeof(float));
    } else {
      std::memcpy(raw_ + i * sizeof(double), &v, sizeof(double));
    }
  }
  // The tensor; the builder is spent.
  v1::Tensor Finish() { return std::move(tensor_); }

 private:
  v1::Tensor tensor_;
  bool float32_;
  char* raw_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_CONSTANT_VIEW_H_
