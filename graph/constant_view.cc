#include "graph/constant_view.h"

#include <cstring>

#include "graph/inference.h"
#include "runtime/float16.h"

namespace graphopt {
namespace {

template <typename T>
T Load(const std::string& raw, int64_t i) {
  T v;
  std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

std::optional<ConstantView> ConstantView::Of(const Graph& graph, ValueId value,
                                             int64_t max_elements) {
  const v1::Tensor* tensor = ConstantTensorOf(graph, value);
  if (tensor == nullptr) return std::nullopt;
  return Of(*tensor, max_elements);
}

std::optional<ConstantView> ConstantView::Of(const v1::Tensor& tensor, int64_t max_elements) {
  if (!tensor.blob().empty() || tensor.dtype() == v1::DT_STRING) return std::nullopt;
  const int width = DataTypeSize(tensor.dtype());
  if (width <= 0) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0 || (d > 0 && n > max_elements / d)) return std::nullopt;
    n *= d;
  }
  if (n > max_elements || static_cast<int64_t>(tensor.raw_data().size()) != n * width) {
    return std::nullopt;
  }
  return ConstantView(&tensor, n);
}

double ConstantView::AsDouble(int64_t i) const {
  const std::string& raw = tensor_->raw_data();
  switch (tensor_->dtype()) {
    case v1::DT_FLOAT32: return Load<float>(raw, i);
    case v1::DT_FLOAT64: return Load<double>(raw, i);
    case v1::DT_FLOAT16: return runtime::Float16::ToFloat(Load<uint16_t>(raw, i));
    case v1::DT_BFLOAT16: return runtime::BFloat16::ToFloat(Load<uint16_t>(raw, i));
    case v1::DT_INT8: return Load<int8_t>(raw, i);
    case v1::DT_INT16: return Load<int16_t>(raw, i);
    case v1::DT_INT32: return Load<int32_t>(raw, i);
    case v1::DT_INT64: return static_cast<double>(Load<int64_t>(raw, i));
    case v1::DT_UINT8: return Load<uint8_t>(raw, i);
    case v1::DT_UINT16: return Load<uint16_t>(raw, i);
    case v1::DT_UINT32: return Load<uint32_t>(raw, i);
    case v1::DT_UINT64: return static_cast<double>(Load<uint64_t>(raw, i));
    case v1::DT_BOOL: return Load<uint8_t>(raw, i) != 0;
    default: return 0;
  }
}

FloatTensorBuilder::FloatTensorBuilder(v1::DataType dtype, const std::vector<int64_t>& dims)
    : float32_(dtype == v1::DT_FLOAT32) {
  tensor_.set_dtype(dtype);
  int64_t n = 1;
  for (int64_t d : dims) {
    tensor_.add_dims(d);
    n *= d;
  }
  std::string* raw = tensor_.mutable_raw_data();
  raw->resize(n * (float32_ ? sizeof(float) : sizeof(double)));
  raw_ = raw->data();
}

}  // namespace graphopt
