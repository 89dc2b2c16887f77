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

// A float32 or float64 tensor of `dims` with room for its elements (all zero), to be set with
// SetFloatElement.
v1::Tensor FloatTensor(v1::DataType dtype, const std::vector<int64_t>& dims);

// Sets element i of a FloatTensor to `v`, rounded once to float32 for that dtype.
inline void SetFloatElement(v1::Tensor& tensor, int64_t i, double v) {
  char* raw = tensor.mutable_raw_data()->data();
  if (tensor.dtype() == v1::DT_FLOAT32) {
    const float f = static_cast<float>(v);
    std::memcpy(raw + i * sizeof(float), &f, sizeof(float));
  } else {
    std::memcpy(raw + i * sizeof(double), &v, sizeof(double));
  }
}

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_CONSTANT_VIEW_H_
