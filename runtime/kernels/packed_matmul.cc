#include "runtime/kernels/packed_matmul.h"

#include <omp.h>

#include <memory>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/match.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {

using dnnl_tag = dnnl::memory::format_tag;
using dnnl_dt = dnnl::memory::data_type;

// One product shape: the primitive and B in its weights layout.
struct PackedMatMul::Primitive {
  dnnl::matmul prim;
  dnnl::memory::desc src, dst, pad;
  dnnl::memory weights;  // one of packed_ (owns its aligned buffer)
};

// What one call needs besides the primitive, kept between calls: the stream, views of the
// caller's A and Y (re-pointed per call), a scratchpad and the argument map.
struct PackedMatMul::Scratch {
  dnnl::stream stream;
  const Primitive* bound = nullptr;
  dnnl::memory src, dst, pad;  // pad owns its buffer
  std::unordered_map<int, dnnl::memory> args;
};

std::unique_ptr<PackedMatMul> PackedMatMul::Create(const KernelInfo& info, const Tensor& b,
                                                   bool transposed) {
  if (b.dtype() != v1::DT_FLOAT32 || b.rank() != 2 || b.num_elements() == 0) return nullptr;
  std::unique_ptr<PackedMatMul> p(new PackedMatMul());
  p->transposed_ = transposed;
  p->k_ = transposed ? b.dim(1) : b.dim(0);
  p->n_ = transposed ? b.dim(0) : b.dim(1);
  if (p->n_ < kMinColumns) return nullptr;
  p->b_ = b;
  absl::Status st = GuardDnnl(info, "engine creation", [&] {
    p->engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
    return absl::OkStatus();
  });
  return st.ok() ? std::move(p) : nullptr;
}

PackedMatMul::~PackedMatMul() {
  for (Scratch* s : idle_) delete s;
}

bool PackedMatMul::Matches(const Tensor& b) const {
  return b.raw_data() == b_.raw_data() && b.shape() == b_.shape() && b.dtype() == b_.dtype();
}

absl::StatusOr<std::shared_ptr<const PackedMatMul::Primitive>> PackedMatMul::GetPrimitive(
    const KernelContext& ctx, int64_t m, float alpha, bool accumulate) const {
  const auto key = std::make_tuple(m, absl::bit_cast<uint32_t>(alpha), accumulate);
  {
    absl::MutexLock lock(&mu_);
    auto it = primitives_.find(key);
    if (it != primitives_.end()) return it->second;
  }
  auto prim = std::make_shared<Primitive>();
  bool fast = false;
  absl::Status st = GuardDnnl(ctx.info(), "packed matmul creation", [&]() -> absl::Status {
    const dnnl::memory::desc src({m, k_}, dnnl_dt::f32, dnnl_tag::ab);
    const dnnl::memory::desc dst({m, n_}, dnnl_dt::f32, dnnl_tag::ab);
    const dnnl::memory::desc wei_any({k_, n_}, dnnl_dt::f32, dnnl_tag::any);
    const dnnl::memory::desc wei_user({k_, n_}, dnnl_dt::f32,
                                      transposed_ ? dnnl_tag::ba : dnnl_tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::desc desc(src, wei_any, dst);
    const dnnl::matmul::primitive_desc pd(desc, attr, engine_);
    // oneDNN's reference kernel would be slower than sgemm: leave this shape to it.
    fast = !absl::StrContains(pd.impl_info_str(), "ref");
    if (!fast) return absl::OkStatus();
    prim->prim = dnnl::matmul(pd);
    prim->src = pd.src_desc();
    prim->dst = pd.dst_desc();
    prim->pad = pd.scratchpad_desc();
    // B in the primitive's layout: reordered once per layout, shared by the primitives (of
    // other M) that ask for the same one.
    absl::MutexLock lock(&mu_);
    for (const dnnl::memory& w : packed_) {
      if (w.get_desc() == pd.weights_desc()) prim->weights = w;
    }
    if (!prim->weights) {
      prim->weights = dnnl::memory(pd.weights_desc(), engine_);
      dnnl::memory user(wei_user, engine_, const_cast<void*>(b_.raw_data()));
      dnnl::stream stream(engine_);
      dnnl::reorder(user, prim->weights).execute(stream, user, prim->weights);
      stream.wait();
      packed_.push_back(prim->weights);
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  std::shared_ptr<const Primitive> result = fast ? std::move(prim) : nullptr;
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = primitives_.emplace(key, std::move(result));
  return it->second;
}

absl::StatusOr<bool> PackedMatMul::Run(const KernelContext& ctx, int64_t m, const float* a,
                                       float alpha, bool accumulate, float* y) const {
  // A product too small to share out is made and run on this thread alone: oneDNN sizes its
  // team when the primitive is made and opens it on every call, and for attention's
  // projections at batch 1 (a few hundred thousand multiply-adds) starting the team and
  // waiting at its barrier took longer than the product. The same size always takes the same
  // path, so a cached primitive is only ever run with the threads it was made for.
  const int threads = omp_get_max_threads();
  const bool serial = threads > 1 && !omp_in_parallel() &&
                      static_cast<double>(m) * static_cast<double>(n_) * static_cast<double>(k_) <
                          static_cast<double>(kSerialMacs);
  if (serial) omp_set_num_threads(1);
  absl::StatusOr<bool> ran = RunWithThreads(ctx, m, a, alpha, accumulate, y);
  if (serial) omp_set_num_threads(threads);
  return ran;
}

absl::StatusOr<bool> PackedMatMul::RunWithThreads(const KernelContext& ctx, int64_t m,
                                                  const float* a, float alpha, bool accumulate,
                                                  float* y) const {
  absl::StatusOr<std::shared_ptr<const Primitive>> prim = GetPrimitive(ctx, m, alpha, accumulate);
  if (!prim.ok()) return prim.status();
  if (*prim == nullptr) return false;
  const Primitive& p = **prim;
  Scratch* scratch = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      scratch = idle_.back();
      idle_.pop_back();
    }
  }
  std::unique_ptr<Scratch> owned(scratch);
  absl::Status st = GuardDnnl(ctx.info(), "packed matmul", [&]() -> absl::Status {
    if (owned == nullptr) {
      owned = std::make_unique<Scratch>();
      owned->stream = dnnl::stream(engine_);
    }
    Scratch& s = *owned;
    if (s.bound != &p) {
      s.src = dnnl::memory(p.src, engine_, nullptr);
      s.dst = dnnl::memory(p.dst, engine_, nullptr);
      s.pad = dnnl::memory(p.pad, engine_);
      s.args = {{DNNL_ARG_SRC, s.src},
                {DNNL_ARG_WEIGHTS, p.weights},
                {DNNL_ARG_DST, s.dst},
                {DNNL_ARG_SCRATCHPAD, s.pad}};
      s.bound = &p;
    }
    s.src.set_data_handle(const_cast<float*>(a));
    s.dst.set_data_handle(y);
    p.prim.execute(s.stream, s.args);
    s.stream.wait();
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  // `bound` names a primitive that lives as long as this object (primitives_ keeps it).
  absl::MutexLock lock(&mu_);
  idle_.push_back(owned.release());
  return true;
}

}  // namespace graphopt::runtime
