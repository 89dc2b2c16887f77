#include "runtime/kernel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "graph/proto_convert.h"
#include "graph/types.h"
#include "runtime/executor.h"
#include "runtime/thread_pool.h"

namespace graphopt::runtime {

KernelInfo::KernelInfo(const Node& node, std::string label, int64_t opset,
                       std::vector<TensorType> input_types, const KernelRegistry& registry,
                       const ExecutorOptions& options, DeviceKind device)
    : node_(node),
      label_(std::move(label)),
      opset_(opset),
      input_types_(std::move(input_types)),
      registry_(registry),
      options_(options),
      device_(device) {}

const TensorType& KernelInfo::input_type(int i) const {
  static const TensorType* const kUnknown = new TensorType();
  if (i < 0 || i >= static_cast<int>(input_types_.size())) return *kUnknown;
  return input_types_[i];
}

const v1::Attribute* KernelInfo::attr(absl::string_view name) const {
  auto it = node_.attributes.find(name);
  return it == node_.attributes.end() ? nullptr : &it->second;
}

int64_t KernelInfo::GetInt(absl::string_view name, int64_t default_value) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return default_value;
  if (a->value_case() == v1::Attribute::kI) return a->i();
  if (a->value_case() == v1::Attribute::kDtype) return a->dtype();
  return default_value;
}

float KernelInfo::GetFloat(absl::string_view name, float default_value) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return default_value;
  if (a->value_case() == v1::Attribute::kF) return a->f();
  if (a->value_case() == v1::Attribute::kI) return static_cast<float>(a->i());
  return default_value;
}

std::string KernelInfo::GetString(absl::string_view name, absl::string_view default_value) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr || a->value_case() != v1::Attribute::kS) return std::string(default_value);
  return a->s();
}

std::vector<int64_t> KernelInfo::GetInts(absl::string_view name,
                                         std::vector<int64_t> default_value) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr || a->value_case() != v1::Attribute::kInts) return default_value;
  return std::vector<int64_t>(a->ints().values().begin(), a->ints().values().end());
}

std::vector<float> KernelInfo::GetFloats(absl::string_view name,
                                         std::vector<float> default_value) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr || a->value_case() != v1::Attribute::kFloats) return default_value;
  return std::vector<float>(a->floats().values().begin(), a->floats().values().end());
}

std::vector<std::string> KernelInfo::GetStrings(absl::string_view name) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr || a->value_case() != v1::Attribute::kStrings) return {};
  return std::vector<std::string>(a->strings().values().begin(), a->strings().values().end());
}

absl::StatusOr<int64_t> KernelInfo::RequireInt(absl::string_view name) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr || a->value_case() != v1::Attribute::kI) {
    return Invalid(absl::StrCat("attribute '", name, "' (int) is required"));
  }
  return a->i();
}

absl::StatusOr<std::vector<int64_t>> KernelInfo::RequireInts(absl::string_view name) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr || a->value_case() != v1::Attribute::kInts) {
    return Invalid(absl::StrCat("attribute '", name, "' (ints) is required"));
  }
  return std::vector<int64_t>(a->ints().values().begin(), a->ints().values().end());
}

absl::StatusOr<Tensor> KernelInfo::GetTensor(absl::string_view name) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr || a->value_case() != v1::Attribute::kT) {
    return absl::NotFoundError(absl::StrCat(label_, ": no tensor attribute '", name, "'"));
  }
  return Tensor::FromProto(a->t(), absl::StrCat(label_, ": attribute '", name, "'"));
}

absl::StatusOr<std::unique_ptr<Executor>> KernelInfo::CreateSubgraphExecutor(
    absl::string_view name) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr || a->value_case() != v1::Attribute::kG) {
    return Invalid(absl::StrCat("graph attribute '", name, "' is required"));
  }
  v1::Graph body = a->g();
  // A body imports the opsets of the graph around it: bodies carry no imports of their own, so
  // the node's domain (that of If/Loop/Scan: the default one) gets the node's opset.
  if (body.opset_imports_size() == 0 && opset_ > 0) {
    v1::OpsetImport* o = body.add_opset_imports();
    o->set_domain(node_.domain);
    o->set_version(opset_);
  }
  // Executors of bodies are built recursively (a body's If builds its branches): bounded.
  ExecutorOptions options = options_;
  if (++options.subgraph_depth > kMaxSubgraphDepth) {
    return Invalid(absl::StrCat("attribute '", name, "': bodies nest more than ",
                                kMaxSubgraphDepth, " levels deep"));
  }
  absl::StatusOr<Graph> graph = GraphFromProto(std::move(body));
  if (!graph.ok()) {
    return Invalid(absl::StrCat("attribute '", name, "': ", graph.status().message()));
  }
  absl::StatusOr<std::unique_ptr<Executor>> executor =
      Executor::Create(*std::move(graph), registry_, options);
  if (!executor.ok()) {
    return absl::Status(executor.status().code(),
                        absl::StrCat(label_, ": attribute '", name, "': ",
                                     executor.status().message()));
  }
  return executor;
}

absl::Status KernelInfo::Invalid(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(label_, ": ", message));
}

absl::Status KernelInfo::Unimplemented(absl::string_view message) const {
  return absl::UnimplementedError(absl::StrCat(label_, ": ", message));
}

KernelContext::KernelContext(const KernelInfo& info, absl::Span<const Tensor* const> inputs,
                             absl::Span<Tensor> outputs,
                             std::function<const Tensor*(absl::string_view)> outer_lookup,
                             int num_threads)
    : info_(info),
      inputs_(inputs),
      outputs_(outputs),
      outer_lookup_(std::move(outer_lookup)),
      num_threads_(num_threads) {}

bool StopRequested(const StopToken* token) { return token != nullptr && token->ShouldStop(); }

absl::Status KernelContext::StopStatus(absl::string_view where) const {
  stop_seen_.store(true, std::memory_order_relaxed);
  absl::Status s = stop_ != nullptr ? stop_->Check(where) : absl::OkStatus();
  // A kernel saw the token fire; should a later check disagree (the clock stepped back), the
  // run stops all the same.
  if (s.ok()) {
    return absl::DeadlineExceededError(
        absl::StrCat("the request's deadline passed (stopped in ", where, ")"));
  }
  return s;
}

const std::shared_ptr<MemoryBudget>& KernelContext::memory() const {
  static const std::shared_ptr<MemoryBudget>* const kNone = new std::shared_ptr<MemoryBudget>();
  return memory_ != nullptr ? *memory_ : *kNone;
}

absl::StatusOr<Tensor*> KernelContext::AllocateOutput(int i, v1::DataType dtype, Shape shape) {
  if (i < 0 || i >= num_outputs()) {
    return Invalid(absl::StrCat("output ", i, " does not exist (the node has ", num_outputs(),
                                " outputs)"));
  }
  if (i < static_cast<int>(planned_.size()) && planned_[i].arena >= 0 &&
      planned_[i].arena < static_cast<int>(arenas_.size())) {
    const PlannedOutput& p = planned_[i];
    const int64_t n = ShapeNumElements(shape);
    const int64_t element = DataTypeSize(dtype);
    // n * element <= p.size, without overflow.
    bool fits = dtype != v1::DT_STRING && element > 0 && n >= 0 && n <= p.size / element;
    if (fits && p.inplace_input >= 0) {
      const Tensor* in = input(p.inplace_input);
      fits = in != nullptr && in->byte_size() == static_cast<size_t>(n * element);
    }
    if (fits) {
      absl::StatusOr<Tensor> view =
          Tensor::InBuffer(arenas_[p.arena], static_cast<size_t>(p.offset), dtype, shape);
      if (view.ok()) {
        outputs_[i] = *std::move(view);
        return &outputs_[i];
      }
    }
  }
  const std::shared_ptr<MemoryBudget>& budget = memory();
  // Strings: the longest string any string input holds, per element (see the header).
  int64_t string_bytes = 0;
  if (dtype == v1::DT_STRING && budget != nullptr) {
    for (const Tensor* in : inputs_) {
      if (in != nullptr && in->dtype() == v1::DT_STRING && in->defined()) {
        string_bytes = std::max(string_bytes, in->buffer()->MaxStringLength());
      }
    }
  }
  absl::StatusOr<Tensor> t = Tensor::Allocate(
      dtype, std::move(shape), budget,
      [&] { return absl::StrCat(info_.label(), " output ", i); }, string_bytes);
  if (!t.ok()) {
    if (absl::StrContains(t.status().message(), info_.label())) return t.status();
    return absl::Status(t.status().code(), absl::StrCat(info_.label(), ": output ", i, ": ",
                                                        t.status().message()));
  }
  outputs_[i] = *std::move(t);
  if (dtype == v1::DT_STRING && budget != nullptr) {
    unsettled_strings_.emplace_back(i, outputs_[i].buffer());
  }
  return &outputs_[i];
}

absl::StatusOr<Tensor> KernelContext::AllocateTemp(v1::DataType dtype, Shape shape,
                                                   absl::string_view what) const {
  absl::StatusOr<Tensor> t = Tensor::Allocate(
      dtype, std::move(shape), memory(), [&] { return absl::StrCat(info_.label(), " ", what); });
  if (!t.ok() && !absl::StrContains(t.status().message(), info_.label())) {
    return absl::Status(t.status().code(),
                        absl::StrCat(info_.label(), " ", what, ": ", t.status().message()));
  }
  return t;
}

absl::StatusOr<MemoryReservation> KernelContext::ReserveScratch(int64_t bytes,
                                                                absl::string_view what) const {
  if (memory() == nullptr) return MemoryReservation();
  MemoryReservation reservation(memory());
  if (absl::Status s = reservation.Add(bytes, absl::StrCat(info_.label(), " ", what)); !s.ok()) {
    return s;
  }
  return reservation;
}

absl::Status KernelContext::SettleStringOutputs() {
  for (const auto& [index, buffer] : unsettled_strings_) {
    // A copy: C++17 lambdas cannot capture structured bindings (clang refuses it).
    const auto i = index;
    Tensor& t = outputs_[i];
    if (t.buffer() != buffer) continue;  // replaced by the kernel; that buffer is not ours
    if (absl::Status s =
            t.SettleStrings([&] { return absl::StrCat(info_.label(), " output ", i); });
        !s.ok()) {
      return s;
    }
  }
  unsettled_strings_.clear();
  return absl::OkStatus();
}

namespace {

// Whether this thread is running chunks of a ParallelFor (a pool worker, or the caller while
// its region runs): a ParallelFor inside one runs serially, as a nested OpenMP region did.
thread_local bool t_in_parallel_for = false;

// The workers of the ParallelFors this thread calls: one pool per calling thread, as OpenMP
// keeps one team per master thread, so that executions on several request threads never wait
// for each other's workers. Grown on demand; it ends with its thread.
ThreadPool& PoolOfThisThread(int workers) {
  thread_local std::unique_ptr<ThreadPool> pool;
  if (pool == nullptr || pool->workers() < workers) {
    pool.reset();
    pool = std::make_unique<ThreadPool>(workers, [] {
      t_in_parallel_for = true;
      // OpenMP code that a chunk calls (oneDNN, sgemm) stays on this thread.
      omp_set_num_threads(1);
    });
  }
  return *pool;
}

}  // namespace

void KernelContext::ParallelFor(int64_t n, int64_t grain,
                                const std::function<void(int64_t, int64_t)>& fn) const {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = t_in_parallel_for ? 1 : std::max(num_threads_, 1);
  const int64_t chunks =
      std::min<int64_t>(static_cast<int64_t>(threads) * kChunksPerThread, (n + grain - 1) / grain);
  const StopToken* stop = stop_;
  // One chunk [begin, end): whole, or in pieces with the token polled before each.
  auto run_chunk = [&](int64_t begin, int64_t end) {
    if (stop == nullptr) {
      fn(begin, end);
      return;
    }
    const int64_t piece = grain > (end - begin) / kStopCheckGrains ? end - begin
                                                                     : grain * kStopCheckGrains;
    for (int64_t b = begin; b < end; b += piece) {
      if (ShouldStop()) return;
      fn(b, std::min(end, b + piece));
    }
  };
  if (threads <= 1 || chunks <= 1) {
    run_chunk(0, n);
    return;
  }
  ThreadPool& pool = PoolOfThisThread(threads - 1);
  // While this thread runs chunks beside the workers, OpenMP code inside fn runs on it alone
  // (as it did nested in an OpenMP region) instead of starting a team next to the workers.
  const int omp_threads = omp_get_max_threads();
  omp_set_num_threads(1);
  t_in_parallel_for = true;
  // An exception must not leave a worker (that terminates the process): the first one is kept
  // and rethrown here.
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  pool.Run(chunks, threads - 1, [&](int64_t c) {
    try {
      run_chunk(n * c / chunks, n * (c + 1) / chunks);
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
    }
  });
  t_in_parallel_for = false;
  omp_set_num_threads(omp_threads);
  if (error) std::rethrow_exception(error);
}

absl::Status KernelRegistry::Register(Key key, KernelFactory factory) {
  MapKey k{key.domain, key.op_type, static_cast<int>(key.device), static_cast<int>(key.dtype)};
  if (!kernels_.emplace(std::move(k), std::move(factory)).second) {
    return absl::AlreadyExistsError(absl::StrCat("kernel for op '", key.op_type, "' (domain '",
                                                 key.domain, "') on ", DeviceKindName(key.device),
                                                 " is registered twice"));
  }
  return absl::OkStatus();
}

namespace {
class FunctionKernel : public OpKernel {
 public:
  explicit FunctionKernel(KernelFunction fn) : fn_(fn) {}
  absl::Status Compute(KernelContext& ctx) const override { return fn_(ctx); }

 private:
  KernelFunction fn_;
};
}  // namespace

absl::Status KernelRegistry::Register(Key key, KernelFunction fn) {
  return Register(std::move(key),
                  [fn](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
                    return std::make_unique<FunctionKernel>(fn);
                  });
}

const KernelFactory* KernelRegistry::Find(absl::string_view domain, absl::string_view op_type,
                                          DeviceKind device, v1::DataType dtype) const {
  MapKey k{std::string(domain), std::string(op_type), static_cast<int>(device),
           static_cast<int>(dtype)};
  auto it = kernels_.find(k);
  if (it != kernels_.end()) return &it->second;
  std::get<3>(k) = static_cast<int>(v1::DT_UNDEFINED);
  it = kernels_.find(k);
  return it == kernels_.end() ? nullptr : &it->second;
}

bool KernelRegistry::Supports(absl::string_view domain, absl::string_view op_type,
                              DeviceKind device) const {
  MapKey k{std::string(domain), std::string(op_type), static_cast<int>(device), 0};
  auto it = kernels_.lower_bound(k);
  return it != kernels_.end() && std::get<0>(it->first) == domain &&
         std::get<1>(it->first) == op_type && std::get<2>(it->first) == static_cast<int>(device);
}

std::vector<KernelRegistry::Key> KernelRegistry::Keys() const {
  std::vector<Key> keys;
  for (const auto& [k, f] : kernels_) {
    keys.push_back(Key{std::get<0>(k), std::get<1>(k), static_cast<DeviceKind>(std::get<2>(k)),
                       static_cast<v1::DataType>(std::get<3>(k))});
  }
  return keys;
}

}  // namespace graphopt::runtime
