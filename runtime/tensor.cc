#include "runtime/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/types.h"

namespace graphopt::runtime {

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return "cpu";
    case DeviceKind::kGpu:
      return "gpu";
  }
  return "unknown";
}

absl::StatusOr<std::shared_ptr<Buffer>> Buffer::AllocateCpu(size_t bytes, Pages pages) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  // Streamed buffers of a huge page or more start on one and ask the kernel for transparent
  // huge pages (measured: resnet50 at -O3, weights and arena so, 56.7 -> 55.5 ms on 1 thread).
  const bool huge = pages == Pages::kHugeWhenLarge && bytes >= kHugePageBytes;
  const size_t alignment = huge ? kHugePageBytes : kTensorAlignment;
  const size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded < bytes) return absl::ResourceExhaustedError("tensor size overflows");
  if (rounded > 0) {
    buffer->data_ = std::aligned_alloc(alignment, rounded);
    if (buffer->data_ == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes"));
    }
    // Advice only (without transparent huge pages, or with them always on, nothing changes),
    // and only for the huge pages the buffer covers whole: the tail keeps small pages, so that
    // no memory beyond the buffer becomes resident. Tried and not kept: mapping these buffers
    // from the kernel (MapHugePages, as the graph's slots are), which puts all of them on huge
    // pages: resnet50 at -O3 ran no faster (medians of 5 runs, 45.8 -> 46.9 ms, within noise)
    // and its peak RSS grew from 264 to 296 MiB.
    if (huge) madvise(buffer->data_, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  }
  buffer->bytes_ = bytes;
  return buffer;
}

std::shared_ptr<Buffer> Buffer::Strings(size_t count) {
  std::shared_ptr<Buffer> buffer(new Buffer());
  buffer->strings_.resize(count);
  return buffer;
}

Buffer::~Buffer() { std::free(data_); }

int64_t ShapeNumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

size_t Tensor::element_size() const {
  if (dtype_ == v1::DT_STRING) return sizeof(std::string);
  return static_cast<size_t>(DataTypeSize(dtype_));
}

absl::StatusOr<Tensor> Tensor::Allocate(v1::DataType dtype, Shape shape) {
  const int64_t n = ShapeNumElements(shape);
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid tensor shape ", ShapeString(shape), " (negative dim or overflow)"));
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.num_elements_ = n;
  if (dtype == v1::DT_STRING) {
    t.buffer_ = Buffer::Strings(static_cast<size_t>(n));
    return t;
  }
  const int size = DataTypeSize(dtype);
  if (size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported tensor element type ", DataTypeName(dtype)));
  }
  if (n > static_cast<int64_t>(std::numeric_limits<size_t>::max() / 2) / size) {
    return absl::ResourceExhaustedError(absl::StrCat("tensor of ", n, " elements is too large"));
  }
  absl::StatusOr<std::shared_ptr<Buffer>> buffer =
      Buffer::AllocateCpu(static_cast<size_t>(n) * size);
  if (!buffer.ok()) return buffer.status();
  t.buffer_ = *std::move(buffer);
  return t;
}

absl::StatusOr<Tensor> Tensor::InBuffer(std::shared_ptr<Buffer> buffer, size_t offset,
                                        v1::DataType dtype, Shape shape) {
  const int64_t n = ShapeNumElements(shape);
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid tensor shape ", ShapeString(shape), " (negative dim or overflow)"));
  }
  const int size = DataTypeSize(dtype);
  if (dtype == v1::DT_STRING || size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", DataTypeName(dtype), " tensor cannot view a byte buffer"));
  }
  if (buffer == nullptr || offset % kTensorAlignment != 0 || offset > buffer->bytes() ||
      n > static_cast<int64_t>((buffer->bytes() - offset) / size)) {
    return absl::OutOfRangeError(absl::StrCat(
        DataTypeName(dtype), ShapeString(shape), " at byte ", offset, " does not fit a buffer of ",
        buffer == nullptr ? 0 : buffer->bytes(), " bytes"));
  }
  Tensor t;
  t.buffer_ = std::move(buffer);
  t.offset_ = offset;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.num_elements_ = n;
  return t;
}

absl::StatusOr<Tensor> Tensor::Zeros(v1::DataType dtype, Shape shape) {
  absl::StatusOr<Tensor> t = Allocate(dtype, std::move(shape));
  if (t.ok() && dtype != v1::DT_STRING && t->byte_size() > 0) {
    std::memset(t->raw_data(), 0, t->byte_size());
  }
  return t;
}

absl::StatusOr<Tensor> Tensor::FromProto(const v1::Tensor& proto, const std::string& what) {
  if (!proto.blob().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": elements are a blob reference (", proto.blob(),
                     "), not attached to the tensor"));
  }
  Shape shape(proto.dims().begin(), proto.dims().end());
  absl::StatusOr<Tensor> t = Allocate(proto.dtype(), shape);
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", t.status().message()));
  if (proto.dtype() == v1::DT_STRING) {
    if (proto.string_data_size() != t->num_elements()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", proto.string_data_size(),
                                                     " strings for shape ", ShapeString(shape)));
    }
    for (int i = 0; i < proto.string_data_size(); ++i) t->strings()[i] = proto.string_data(i);
    return t;
  }
  if (proto.raw_data().size() != t->byte_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", proto.raw_data().size(), " bytes of data for ",
                     DataTypeName(proto.dtype()), ShapeString(shape), " (", t->byte_size(),
                     " expected)"));
  }
  if (t->byte_size() > 0) std::memcpy(t->raw_data(), proto.raw_data().data(), t->byte_size());
  return t;
}

void Tensor::ToProto(v1::Tensor* out) const {
  out->set_dtype(dtype_);
  out->clear_dims();
  for (int64_t d : shape_) out->add_dims(d);
  out->clear_raw_data();
  out->clear_string_data();
  if (!defined()) return;
  if (dtype_ == v1::DT_STRING) {
    for (int64_t i = 0; i < num_elements_; ++i) out->add_string_data(strings()[i]);
  } else {
    out->set_raw_data(static_cast<const char*>(raw_data()), byte_size());
  }
}

absl::StatusOr<Tensor> Tensor::Reshaped(Shape shape) const {
  const int64_t n = ShapeNumElements(shape);
  if (n != num_elements_) {
    return absl::InvalidArgumentError(absl::StrCat("cannot view ", DebugString(), " as shape ",
                                                   ShapeString(shape)));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

absl::StatusOr<Tensor> Tensor::Clone() const {
  absl::StatusOr<Tensor> t = Allocate(dtype_, shape_);
  if (!t.ok()) return t.status();
  if (dtype_ == v1::DT_STRING) {
    for (int64_t i = 0; i < num_elements_; ++i) t->strings()[i] = strings()[i];
  } else if (byte_size() > 0) {
    std::memcpy(t->raw_data(), raw_data(), byte_size());
  }
  return t;
}

std::string Tensor::DebugString() const {
  if (!defined()) return "undefined";
  return absl::StrCat(DataTypeName(dtype_), ShapeString(shape_));
}

double Tensor::ElementAsDouble(int64_t i) const {
  switch (dtype_) {
    case v1::DT_FLOAT32: return data<float>()[i];
    case v1::DT_FLOAT64: return data<double>()[i];
    case v1::DT_FLOAT16: return Float16::ToFloat(data<uint16_t>()[i]);
    case v1::DT_BFLOAT16: return BFloat16::ToFloat(data<uint16_t>()[i]);
    case v1::DT_INT8: return data<int8_t>()[i];
    case v1::DT_INT16: return data<int16_t>()[i];
    case v1::DT_INT32: return data<int32_t>()[i];
    case v1::DT_INT64: return static_cast<double>(data<int64_t>()[i]);
    case v1::DT_UINT8: return data<uint8_t>()[i];
    case v1::DT_UINT16: return data<uint16_t>()[i];
    case v1::DT_UINT32: return data<uint32_t>()[i];
    case v1::DT_UINT64: return static_cast<double>(data<uint64_t>()[i]);
    case v1::DT_BOOL: return data<uint8_t>()[i] != 0;
    default: return 0;
  }
}

int64_t Tensor::ElementAsInt64(int64_t i) const {
  switch (dtype_) {
    case v1::DT_INT8: return data<int8_t>()[i];
    case v1::DT_INT16: return data<int16_t>()[i];
    case v1::DT_INT32: return data<int32_t>()[i];
    case v1::DT_INT64: return data<int64_t>()[i];
    case v1::DT_UINT8: return data<uint8_t>()[i];
    case v1::DT_UINT16: return data<uint16_t>()[i];
    case v1::DT_UINT32: return data<uint32_t>()[i];
    case v1::DT_UINT64: return static_cast<int64_t>(data<uint64_t>()[i]);
    case v1::DT_BOOL: return data<uint8_t>()[i] != 0;
    default: return static_cast<int64_t>(ElementAsDouble(i));
  }
}

absl::StatusOr<std::vector<int64_t>> Tensor::ToInt64Vector() const {
  if (!IsInteger(dtype_) && dtype_ != v1::DT_BOOL) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected an integer tensor, got ", DebugString()));
  }
  std::vector<int64_t> out(static_cast<size_t>(num_elements_));
  for (int64_t i = 0; i < num_elements_; ++i) out[i] = ElementAsInt64(i);
  return out;
}

}  // namespace graphopt::runtime
