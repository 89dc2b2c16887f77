#ifndef GRAPHOPT_RUNTIME_KERNELS_PACKED_MATMUL_H_
#define GRAPHOPT_RUNTIME_KERNELS_PACKED_MATMUL_H_

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

// Y[M, N] = alpha * A[M, K] x B (+ Y) in float32 for a B that is a constant of the plan ([K, N],
// or [N, K] transposed), on a oneDNN matmul primitive whose weights are B reordered once into
// the layout the primitive prefers. oneDNN's sgemm packs B again on every call, which at the
// small M of batch-1 inference costs more than the product itself. A primitive per M, made on
// first use; B reordered once
// per weights layout those primitives ask for (usually one), and shared between them.
// Thread-safe: each concurrent call takes a scratch of its own (stream, views, scratchpad).
class PackedMatMul {
 public:
  // nullptr where B is not a float32 matrix of at least kMinColumns columns, or oneDNN has no
  // CPU engine: the caller keeps to sgemm.
  static std::unique_ptr<PackedMatMul> Create(const KernelInfo& info, const Tensor& b,
                                              bool transposed);
  ~PackedMatMul();

  // Columns below which sgemm stays faster (a classifier's 10 outputs, say).
  static constexpr int64_t kMinColumns = 32;
  // Multiply-adds below which a product runs on the calling thread alone (Run).
  static constexpr int64_t kSerialMacs = int64_t{1} << 20;

  // Whether `b` is the tensor this was made from (same buffer and shape).
  bool Matches(const Tensor& b) const;
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

  // y (M x N, row-major) = alpha * a (M x K, row-major) x B, plus what y holds when
  // `accumulate`. False when oneDNN has only a reference kernel for this M (the caller then
  // uses sgemm); INTERNAL naming the node when oneDNN fails. A product of fewer than
  // kSerialMacs multiply-adds runs on the calling thread alone.
  absl::StatusOr<bool> Run(const KernelContext& ctx, int64_t m, const float* a, float alpha,
                           bool accumulate, float* y) const;

 private:
  struct Primitive;
  struct Scratch;
  PackedMatMul() = default;
  // Run with the OpenMP threads the caller has set.
  absl::StatusOr<bool> RunWithThreads(const KernelContext& ctx, int64_t m, const float* a,
                                      float alpha, bool accumulate, float* y) const;
  absl::StatusOr<std::shared_ptr<const Primitive>> GetPrimitive(const KernelContext& ctx,
                                                                int64_t m, float alpha,
                                                                bool accumulate) const;

  dnnl::engine engine_;
  Tensor b_;  // held: its buffer's address identifies it, and reorders read it
  int64_t k_ = 0, n_ = 0;
  bool transposed_ = false;
  mutable absl::Mutex mu_;
  // By (M, alpha's bits, accumulate).
  mutable absl::flat_hash_map<std::tuple<int64_t, uint32_t, bool>, std::shared_ptr<const Primitive>>
      primitives_ ABSL_GUARDED_BY(mu_);
  mutable std::vector<dnnl::memory> packed_ ABSL_GUARDED_BY(mu_);  // B, one per layout
  mutable std::vector<Scratch*> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_PACKED_MATMUL_H_
