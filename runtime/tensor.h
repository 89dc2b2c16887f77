#ifndef GRAPHOPT_RUNTIME_TENSOR_H_
#define GRAPHOPT_RUNTIME_TENSOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "proto/graph.pb.h"
#include "runtime/float16.h"
#include "runtime/memory_budget.h"
#include "util/huge_pages.h"

namespace graphopt::runtime {

// Tensor dims; most tensors have rank <= 6, so they are kept inline.
using Shape = absl::InlinedVector<int64_t, 6>;

// Storage alignment: enough for AVX-512 loads and for oneDNN.
inline constexpr size_t kTensorAlignment = 64;

// Where a buffer lives. Only the CPU allocates today; a GPU device implements Device (device.h)
// and hands out buffers of its own kind.
enum class DeviceKind : uint8_t { kCpu = 0, kGpu = 1 };
const char* DeviceKindName(DeviceKind kind);

// Names what an allocation is for ("node 'big' (Tile) output 0"); called only to build the
// RESOURCE_EXHAUSTED message when a MemoryBudget refuses it.
using AllocationName = absl::FunctionRef<std::string()>;

// What one Buffer costs its MemoryBudget beyond its elements (the Buffer, its shared_ptr
// control block, the allocator's header): so that many empty tensors are not free.
inline constexpr int64_t kBufferOverheadBytes = 128;

// Heap bytes a std::string of `length` characters holds beyond its own object (none while it
// fits the object's inline buffer).
int64_t StringHeapBytes(size_t length);

// One allocation: `bytes` of `kTensorAlignment`-aligned memory, or, for DT_STRING tensors, a
// vector of strings. Shared by every tensor that views it.
//
// A buffer may be charged to a MemoryBudget: the charge is made before the memory is
// allocated and released when the buffer is destroyed, whoever holds it last.
class Buffer {
 public:
  // How the memory is paged.
  enum class Pages : uint8_t {
    kDefault,
    // For memory kernels stream through on every run (a plan's arena, reordered weights): from
    // kHugePageBytes up, aligned to a huge page and advised to use transparent huge pages, so
    // that every 4 KiB read does not cost a TLB miss. The tail of the last huge page may become
    // resident too: not for memory of one-off use.
    kHugeWhenLarge,
  };
  // Aligned, uninitialised CPU memory. RESOURCE_EXHAUSTED when it cannot be had.
  static absl::StatusOr<std::shared_ptr<Buffer>> AllocateCpu(size_t bytes,
                                                             Pages pages = Pages::kDefault);
  // The same, charged to `budget` first (null: not charged); RESOURCE_EXHAUSTED naming
  // `what` when the budget refuses it, before anything is allocated.
  static absl::StatusOr<std::shared_ptr<Buffer>> AllocateCpu(
      size_t bytes, Pages pages, const std::shared_ptr<MemoryBudget>& budget,
      AllocationName what);
  // `count` empty strings. The charge (with a budget) is the string objects plus
  // `heap_bytes`: an estimate of the heap bytes the writer will give the strings (see
  // StringHeapBytes), corrected by SettleStrings once they are written. RESOURCE_EXHAUSTED
  // when the count overflows, the budget refuses it or the memory cannot be had.
  static absl::StatusOr<std::shared_ptr<Buffer>> AllocateStrings(
      size_t count, const std::shared_ptr<MemoryBudget>& budget, int64_t heap_bytes,
      AllocationName what);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  DeviceKind device() const { return device_; }
  std::vector<std::string>& strings() { return strings_; }
  const std::vector<std::string>& strings() const { return strings_; }

  // The budget this buffer is charged to (null when none) and the bytes charged.
  const MemoryBudget* budget() const { return budget_.get(); }
  int64_t charged_bytes() const { return charged_; }
  // For a string buffer whose strings are written: charges (or releases) the difference
  // between the estimate it was charged and what its strings hold. RESOURCE_EXHAUSTED naming
  // `what` when the difference does not fit (the charge then stays as it was). Nothing for an
  // uncharged buffer.
  absl::Status SettleStrings(AllocationName what);
  // The longest string of a string buffer (0 for others), computed once: only to be asked
  // when its strings are written.
  int64_t MaxStringLength() const;

 private:
  Buffer() = default;
  // An empty buffer holding `charge` bytes of `budget` (when given): RESOURCE_EXHAUSTED naming
  // `what` when they do not fit.
  static absl::StatusOr<std::shared_ptr<Buffer>> NewCharged(
      const std::shared_ptr<MemoryBudget>& budget, int64_t charge, AllocationName what);
  void* data_ = nullptr;
  size_t bytes_ = 0;
  DeviceKind device_ = DeviceKind::kCpu;
  std::vector<std::string> strings_;
  std::shared_ptr<MemoryBudget> budget_;
  int64_t charged_ = 0;
  mutable std::atomic<int64_t> max_string_length_{-1};
};

// Buffers lent to kernels for memory they use only while they compute (a fused group's
// intermediates), shared by every kernel of one executor. Kept per kernel, such scratch costs
// the sum over the kernels of a plan (hundreds of MiB on a transformer or a ConvNeXt, each
// group's scratch resident for the plan's lifetime); lent from one pool it costs the largest
// one per concurrent run. A lent buffer is the borrower's while any shared_ptr to it lives
// (a result that is a view of it keeps it from being lent again), so Acquire never hands out
// memory someone still reads. Thread-safe.
class ScratchPool {
 public:
  // At most this many buffers are kept between calls; more concurrent borrowers get buffers
  // of their own, freed when they are done.
  static constexpr size_t kMaxKept = 4;

  ScratchPool() = default;
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // A buffer of at least `bytes` (uninitialised; huge pages when large) that nobody else
  // holds: the smallest idle one that is large enough, else a new one, which replaces the
  // largest idle buffer too small for it (so the pool converges to the largest request instead
  // of keeping one buffer per size). RESOURCE_EXHAUSTED when the memory cannot be had.
  absl::StatusOr<std::shared_ptr<Buffer>> Acquire(size_t bytes);
  // Bytes of the buffers kept (lent or idle).
  int64_t kept_bytes() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<Buffer>> kept_ ABSL_GUARDED_BY(mu_);
};

struct ContainerValue;

// A dense row-major tensor: dtype, shape and a view into a shared Buffer. Copying a Tensor
// copies the view, not the elements; Reshaped views the same elements under another shape.
// Elements are little-endian in their natural width (bool as one byte, float16/bfloat16 as
// their 16 bits); DT_STRING tensors hold std::string elements.
//
// A Tensor is immutable once a kernel has produced it: kernels write only into outputs they
// allocated, so views may be shared freely between values and threads.
//
// The same object carries the runtime's non-tensor values (ONNX sequences and optionals, see
// v1::ValueKind): then it has no buffer, dtype() is DT_UNDEFINED and the value lives in a
// shared, immutable ContainerValue. Kernels of tensor ops never see one (type inference and the
// executor's input checks keep them to the ops that take them), so the tensor paths carry only
// the extra pointer. Items of a container own their elements (never a view of an executor's
// arena): the kernels that build containers copy what they put in.
class Tensor {
 public:
  Tensor() = default;  // undefined (no dtype, no storage)

  // A sequence of `items` (tensors of `element_dtype`; DT_UNDEFINED when not known).
  static Tensor Sequence(v1::DataType element_dtype, std::vector<Tensor> items);
  // An optional holding `element` (a tensor or a sequence).
  static Tensor OptionalOf(Tensor element);
  // An optional without a value, of `kind` VALUE_OPTIONAL_TENSOR or VALUE_OPTIONAL_SEQUENCE.
  static Tensor EmptyOptional(v1::ValueKind kind, v1::DataType element_dtype);
  // VALUE_TENSOR for a tensor (or an undefined Tensor), else the container's kind.
  v1::ValueKind kind() const;
  bool is_tensor() const { return container_ == nullptr; }
  // A sequence's items, an optional's element (none or one); empty for a tensor.
  const std::vector<Tensor>& items() const;
  // The dtype of a tensor, or of the tensors a container holds.
  v1::DataType element_dtype() const;

  // A new tensor with uninitialised elements (strings: empty). INVALID_ARGUMENT for a negative
  // dim or an unsupported dtype, RESOURCE_EXHAUSTED when the size overflows or cannot be had.
  static absl::StatusOr<Tensor> Allocate(v1::DataType dtype, Shape shape);
  // The same, charged to `budget` (null: not charged) before anything is allocated:
  // RESOURCE_EXHAUSTED naming `what`, the bytes, the limit and the bytes in use when it does
  // not fit. For DT_STRING the charge counts `string_bytes_each` characters per element, an
  // estimate settled later (Buffer::SettleStrings).
  static absl::StatusOr<Tensor> Allocate(v1::DataType dtype, Shape shape,
                                         const std::shared_ptr<MemoryBudget>& budget,
                                         AllocationName what, int64_t string_bytes_each = 0);
  // The same, elements set to zero.
  static absl::StatusOr<Tensor> Zeros(v1::DataType dtype, Shape shape);
  // Decodes a wire tensor (raw_data or string_data); INVALID_ARGUMENT naming `what` when the
  // bytes do not match dtype and dims, FAILED_PRECONDITION for a blob reference.
  static absl::StatusOr<Tensor> FromProto(const v1::Tensor& proto, const std::string& what = "tensor");
  // A view of `bytes` of `buffer` from byte `offset` (a multiple of kTensorAlignment) holding
  // `shape` of `dtype`, without initialising them: how an executor places a tensor in its
  // memory-plan arena. INVALID_ARGUMENT for DT_STRING, an unsupported dtype or a bad shape;
  // OUT_OF_RANGE when the elements would not lie inside the buffer.
  static absl::StatusOr<Tensor> InBuffer(std::shared_ptr<Buffer> buffer, size_t offset,
                                         v1::DataType dtype, Shape shape);
  // A scalar (rank 0) or 1-D tensor holding a copy of `values`.
  template <typename T>
  static Tensor FromVector(v1::DataType dtype, const std::vector<T>& values, Shape shape);

  // Writes dtype, dims and raw_data (string_data for strings); `name` is left as it is.
  void ToProto(v1::Tensor* out) const;

  bool defined() const { return buffer_ != nullptr || container_ != nullptr; }
  v1::DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t num_elements() const { return num_elements_; }
  size_t element_size() const;
  size_t byte_size() const { return static_cast<size_t>(num_elements_) * element_size(); }
  DeviceKind device() const { return buffer_ ? buffer_->device() : DeviceKind::kCpu; }
  // The buffer this tensor views (null when undefined) and where in it the elements start
  // (bytes; elements for strings).
  const Buffer* buffer() const { return buffer_.get(); }
  size_t byte_offset() const { return offset_; }

  void* raw_data() { return static_cast<char*>(buffer_->data()) + offset_; }
  const void* raw_data() const { return static_cast<const char*>(buffer_->data()) + offset_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  absl::Span<const T> span() const {
    return absl::Span<const T>(data<T>(), static_cast<size_t>(num_elements_));
  }
  template <typename T>
  absl::Span<T> mutable_span() {
    return absl::Span<T>(data<T>(), static_cast<size_t>(num_elements_));
  }
  // DT_STRING elements.
  std::string* strings() { return buffer_->strings().data() + offset_; }
  const std::string* strings() const { return buffer_->strings().data() + offset_; }

  // See Buffer::SettleStrings (for a DT_STRING tensor whose elements are written).
  absl::Status SettleStrings(AllocationName what) {
    return buffer_ != nullptr ? buffer_->SettleStrings(what) : absl::OkStatus();
  }

  // The same elements under `shape` (same element count, else INVALID_ARGUMENT). No copy.
  absl::StatusOr<Tensor> Reshaped(Shape shape) const;
  // A copy that owns its elements.
  absl::StatusOr<Tensor> Clone() const;
  // The same, charged to `budget` (strings by their exact contents) before anything is copied.
  absl::StatusOr<Tensor> Clone(const std::shared_ptr<MemoryBudget>& budget,
                               AllocationName what) const;

  // "float32[2,3]".
  std::string DebugString() const;

  // Element i converted to double / int64 (for small shape-like tensors; any numeric dtype).
  double ElementAsDouble(int64_t i) const;
  int64_t ElementAsInt64(int64_t i) const;
  // All elements as int64 (int32/int64/uint8.. tensors), INVALID_ARGUMENT for others.
  absl::StatusOr<std::vector<int64_t>> ToInt64Vector() const;

 private:
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;  // bytes, or elements for strings
  v1::DataType dtype_ = v1::DT_UNDEFINED;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<const ContainerValue> container_;
};

// A sequence or optional value (see Tensor).
struct ContainerValue {
  v1::ValueKind kind = v1::VALUE_SEQUENCE;
  v1::DataType element_dtype = v1::DT_UNDEFINED;
  std::vector<Tensor> items;
};

// Product of dims, or nullopt-like -1 on overflow or a negative dim.
int64_t ShapeNumElements(absl::Span<const int64_t> shape);
// "[2,3]".
std::string ShapeString(absl::Span<const int64_t> shape);

template <typename T>
Tensor Tensor::FromVector(v1::DataType dtype, const std::vector<T>& values, Shape shape) {
  Tensor t = Allocate(dtype, std::move(shape)).value();
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.num_elements()); ++i) {
    out[i] = values[i];
  }
  return t;
}

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_TENSOR_H_
