#include "runtime/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/types.h"
#include "util/saturating_cast.h"

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

namespace {

// a + b and a * b, saturating at INT64_MAX (a budget then refuses the charge).
int64_t SaturatingAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}
int64_t SaturatingMul(int64_t a, int64_t b) {
  return b != 0 && a > std::numeric_limits<int64_t>::max() / b
             ? std::numeric_limits<int64_t>::max()
             : a * b;
}

// Characters a std::string holds inline (15 in libstdc++).
const size_t kInlineStringCapacity = std::string().capacity();

std::string UnnamedTensor() { return "tensor"; }

}  // namespace

int64_t StringHeapBytes(size_t length) {
  return length <= kInlineStringCapacity ? 0 : static_cast<int64_t>(length) + 1;
}

absl::StatusOr<std::shared_ptr<Buffer>> Buffer::NewCharged(
    const std::shared_ptr<MemoryBudget>& budget, int64_t charge, AllocationName what) {
  if (budget != nullptr && !budget->TryCharge(charge)) return budget->ExhaustedError(charge, what());
  std::shared_ptr<Buffer> buffer(new (std::nothrow) Buffer());
  if (buffer == nullptr) {
    if (budget != nullptr) budget->Release(charge);
    return absl::ResourceExhaustedError(absl::StrCat(what(), ": out of memory"));
  }
  if (budget != nullptr) {
    buffer->budget_ = budget;
    buffer->charged_ = charge;
  }
  return buffer;
}

absl::StatusOr<std::shared_ptr<Buffer>> Buffer::AllocateCpu(size_t bytes, Pages pages) {
  return AllocateCpu(bytes, pages, nullptr, UnnamedTensor);
}

absl::StatusOr<std::shared_ptr<Buffer>> Buffer::AllocateCpu(
    size_t bytes, Pages pages, const std::shared_ptr<MemoryBudget>& budget, AllocationName what) {
  // Streamed buffers of a huge page or more start on one and ask the kernel for transparent
  // huge pages: a CNN's weights and arena are read in full on every run, and fewer TLB misses
  // make those runs faster.
  const bool huge = pages == Pages::kHugeWhenLarge && bytes >= kHugePageBytes;
  const size_t alignment = huge ? kHugePageBytes : kTensorAlignment;
  const size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (rounded < bytes || rounded > static_cast<size_t>(std::numeric_limits<int64_t>::max() / 2)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what(), ": ", bytes, " bytes cannot be allocated (size overflows)"));
  }
  const int64_t charge = static_cast<int64_t>(rounded) + kBufferOverheadBytes;
  absl::StatusOr<std::shared_ptr<Buffer>> charged = NewCharged(budget, charge, what);
  if (!charged.ok()) return charged.status();
  std::shared_ptr<Buffer> buffer = *std::move(charged);
  if (rounded > 0) {
    buffer->data_ = std::aligned_alloc(alignment, rounded);
    if (buffer->data_ == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat(what(), ": cannot allocate ", bytes, " bytes"));
    }
    // Advice only (without transparent huge pages, or with them always on, nothing changes),
    // and only for the huge pages the buffer covers whole: the tail keeps small pages, so that
    // no memory beyond the buffer becomes resident. Not mapped from the kernel (MapHugePages,
    // as the graph's slots are), which would put all of them on huge pages: that makes runs no
    // faster and rounds every buffer's RSS up to whole huge pages.
    if (huge) madvise(buffer->data_, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  }
  buffer->bytes_ = bytes;
  return buffer;
}

absl::StatusOr<std::shared_ptr<Buffer>> ScratchPool::Acquire(size_t bytes) {
  absl::MutexLock lock(&mu_);
  // Idle: held by the pool alone. Nobody else can take a new reference to a kept buffer
  // without this lock, so an idle buffer stays idle until it is handed out here.
  std::shared_ptr<Buffer>* best = nullptr;
  size_t too_small = kept_.size();
  for (size_t i = 0; i < kept_.size(); ++i) {
    std::shared_ptr<Buffer>& b = kept_[i];
    if (b.use_count() != 1) continue;
    if (b->bytes() >= bytes) {
      if (best == nullptr || b->bytes() < (*best)->bytes()) best = &b;
    } else if (too_small == kept_.size() || b->bytes() > kept_[too_small]->bytes()) {
      too_small = i;
    }
  }
  if (best != nullptr) return *best;
  // Freed before the new one is allocated: the process never holds both.
  if (too_small < kept_.size()) kept_.erase(kept_.begin() + static_cast<ptrdiff_t>(too_small));
  absl::StatusOr<std::shared_ptr<Buffer>> b =
      Buffer::AllocateCpu(std::max<size_t>(bytes, 1), Buffer::Pages::kHugeWhenLarge);
  if (!b.ok()) return b.status();
  if (kept_.size() < kMaxKept) kept_.push_back(*b);
  return b;
}

int64_t ScratchPool::kept_bytes() const {
  absl::MutexLock lock(&mu_);
  int64_t bytes = 0;
  for (const std::shared_ptr<Buffer>& b : kept_) bytes += static_cast<int64_t>(b->bytes());
  return bytes;
}

absl::StatusOr<std::shared_ptr<Buffer>> Buffer::AllocateStrings(
    size_t count, const std::shared_ptr<MemoryBudget>& budget, int64_t heap_bytes,
    AllocationName what) {
  if (count > std::vector<std::string>().max_size() ||
      count > static_cast<size_t>(std::numeric_limits<int64_t>::max()) / sizeof(std::string)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what(), ": ", count, " strings cannot be allocated"));
  }
  const int64_t charge =
      SaturatingAdd(SaturatingAdd(static_cast<int64_t>(count * sizeof(std::string)),
                                  std::max<int64_t>(heap_bytes, 0)),
                    kBufferOverheadBytes);
  absl::StatusOr<std::shared_ptr<Buffer>> charged = NewCharged(budget, charge, what);
  if (!charged.ok()) return charged.status();
  std::shared_ptr<Buffer> buffer = *std::move(charged);
  try {
    buffer->strings_.resize(count);
  } catch (const std::exception&) {  // bad_alloc, length_error
    return absl::ResourceExhaustedError(
        absl::StrCat(what(), ": cannot allocate ", count, " strings"));
  }
  return buffer;
}

absl::Status Buffer::SettleStrings(AllocationName what) {
  int64_t heap = 0;
  int64_t longest = 0;
  for (const std::string& s : strings_) {
    if (s.capacity() > kInlineStringCapacity) heap += static_cast<int64_t>(s.capacity()) + 1;
    longest = std::max<int64_t>(longest, static_cast<int64_t>(s.size()));
  }
  max_string_length_.store(longest, std::memory_order_relaxed);
  if (budget_ == nullptr) return absl::OkStatus();
  const int64_t actual =
      static_cast<int64_t>(strings_.size() * sizeof(std::string)) + heap + kBufferOverheadBytes;
  const int64_t diff = actual - charged_;
  if (diff > 0) {
    if (!budget_->TryCharge(diff)) return budget_->ExhaustedError(diff, what());
  } else {
    budget_->Release(-diff);
  }
  charged_ = actual;
  return absl::OkStatus();
}

int64_t Buffer::MaxStringLength() const {
  int64_t cached = max_string_length_.load(std::memory_order_relaxed);
  if (cached >= 0) return cached;
  int64_t longest = 0;
  for (const std::string& s : strings_) longest = std::max<int64_t>(longest, s.size());
  max_string_length_.store(longest, std::memory_order_relaxed);
  return longest;
}

Buffer::~Buffer() {
  std::free(data_);
  if (budget_ != nullptr) budget_->Release(charged_);
}

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
  return Allocate(dtype, std::move(shape), nullptr, UnnamedTensor);
}

absl::StatusOr<Tensor> Tensor::Allocate(v1::DataType dtype, Shape shape,
                                        const std::shared_ptr<MemoryBudget>& budget,
                                        AllocationName what, int64_t string_bytes_each) {
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
    absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::AllocateStrings(
        static_cast<size_t>(n), budget,
        SaturatingMul(n, StringHeapBytes(static_cast<size_t>(std::max<int64_t>(string_bytes_each, 0)))),
        what);
    if (!buffer.ok()) return buffer.status();
    t.buffer_ = *std::move(buffer);
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
      Buffer::AllocateCpu(static_cast<size_t>(n) * size, Buffer::Pages::kDefault, budget, what);
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
  // The element count must match the data before anything is allocated: dims alone may ask
  // for any size.
  const int64_t n = ShapeNumElements(shape);
  if (n < 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": invalid tensor shape ",
                                                   ShapeString(shape),
                                                   " (negative dim or overflow)"));
  }
  if (proto.dtype() == v1::DT_STRING && proto.string_data_size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", proto.string_data_size(),
                                                   " strings for shape ", ShapeString(shape)));
  }
  const int width = DataTypeSize(proto.dtype());
  if (proto.dtype() != v1::DT_STRING && width > 0 &&
      (n > static_cast<int64_t>(proto.raw_data().size()) / width ||
       static_cast<size_t>(n) * width != proto.raw_data().size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", proto.raw_data().size(), " bytes of data for ", DataTypeName(proto.dtype()),
        ShapeString(shape), " (", n, " elements of ", width, " bytes expected)"));
  }
  absl::StatusOr<Tensor> t = Allocate(proto.dtype(), shape);
  if (!t.ok()) {
    return absl::Status(t.status().code() == absl::StatusCode::kResourceExhausted
                            ? absl::StatusCode::kResourceExhausted
                            : absl::StatusCode::kInvalidArgument,
                        absl::StrCat(what, ": ", t.status().message()));
  }
  if (proto.dtype() == v1::DT_STRING) {
    for (int i = 0; i < proto.string_data_size(); ++i) t->strings()[i] = proto.string_data(i);
    return t;
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

Tensor Tensor::Sequence(v1::DataType element_dtype, std::vector<Tensor> items) {
  auto c = std::make_shared<ContainerValue>();
  c->kind = v1::VALUE_SEQUENCE;
  c->element_dtype = element_dtype;
  c->items = std::move(items);
  Tensor t;
  t.container_ = std::move(c);
  return t;
}

Tensor Tensor::OptionalOf(Tensor element) {
  auto c = std::make_shared<ContainerValue>();
  c->kind = element.kind() == v1::VALUE_SEQUENCE ? v1::VALUE_OPTIONAL_SEQUENCE
                                                 : v1::VALUE_OPTIONAL_TENSOR;
  c->element_dtype = element.element_dtype();
  c->items.push_back(std::move(element));
  Tensor t;
  t.container_ = std::move(c);
  return t;
}

Tensor Tensor::EmptyOptional(v1::ValueKind kind, v1::DataType element_dtype) {
  auto c = std::make_shared<ContainerValue>();
  c->kind = kind;
  c->element_dtype = element_dtype;
  Tensor t;
  t.container_ = std::move(c);
  return t;
}

v1::ValueKind Tensor::kind() const {
  return container_ == nullptr ? v1::VALUE_TENSOR : container_->kind;
}

const std::vector<Tensor>& Tensor::items() const {
  static const std::vector<Tensor>* const kNone = new std::vector<Tensor>();
  return container_ == nullptr ? *kNone : container_->items;
}

v1::DataType Tensor::element_dtype() const {
  return container_ == nullptr ? dtype_ : container_->element_dtype;
}

absl::StatusOr<Tensor> Tensor::Clone() const { return Clone(nullptr, UnnamedTensor); }

absl::StatusOr<Tensor> Tensor::Clone(const std::shared_ptr<MemoryBudget>& budget,
                                     AllocationName what) const {
  // A container is immutable and its items own their elements: sharing it is a copy.
  if (container_ != nullptr) return *this;
  absl::StatusOr<Tensor> t;
  if (dtype_ == v1::DT_STRING) {
    // A copy's strings hold exactly their characters: the charge is exact, nothing to settle.
    int64_t heap = 0;
    for (int64_t i = 0; i < num_elements_; ++i) heap += StringHeapBytes(strings()[i].size());
    absl::StatusOr<std::shared_ptr<Buffer>> buffer =
        Buffer::AllocateStrings(static_cast<size_t>(num_elements_), budget, heap, what);
    if (!buffer.ok()) return buffer.status();
    Tensor copy;
    copy.buffer_ = *std::move(buffer);
    copy.dtype_ = dtype_;
    copy.shape_ = shape_;
    copy.num_elements_ = num_elements_;
    t = std::move(copy);
  } else {
    t = Allocate(dtype_, shape_, budget, what);
  }
  if (!t.ok()) return t.status();
  if (dtype_ == v1::DT_STRING) {
    for (int64_t i = 0; i < num_elements_; ++i) t->strings()[i] = strings()[i];
  } else if (byte_size() > 0) {
    std::memcpy(t->raw_data(), raw_data(), byte_size());
  }
  return t;
}

std::string Tensor::DebugString() const {
  if (container_ != nullptr) {
    const std::string element = DataTypeName(container_->element_dtype);
    switch (container_->kind) {
      case v1::VALUE_SEQUENCE:
        return absl::StrCat("sequence(", element, ", ", container_->items.size(), " items)");
      default:
        return container_->items.empty()
                   ? absl::StrCat("optional(", element, ", empty)")
                   : absl::StrCat("optional(", container_->items[0].DebugString(), ")");
    }
  }
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
    // Saturated: a kernel may read a float where it wants an integer (a count, a zero point)
    // before it checks the type.
    default: return SaturatingCast<int64_t>(ElementAsDouble(i));
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
