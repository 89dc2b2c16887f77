// Sequences and optionals (ONNX opsets 11-17): SequenceEmpty, SequenceConstruct,
// SequenceInsert, SequenceAt, SequenceErase, SequenceLength, SplitToSequence,
// ConcatFromSequence, SequenceMap, Optional, OptionalHasElement, OptionalGetElement.
//
// Values are Tensors holding a shared, immutable ContainerValue (runtime/tensor.h): building a
// new sequence copies the item handles, never the items' elements, and a tensor put into a
// sequence is copied once so that no item ever views an executor's arena (whose bytes are
// reused after the tensor's last reader in the graph, while the sequence may live on).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/onnx_type_bytes.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {
namespace {

// Input i as a sequence; INVALID_ARGUMENT naming the input otherwise.
absl::StatusOr<const Tensor*> RequireSequence(const KernelContext& ctx, int i) {
  absl::StatusOr<const Tensor*> t = RequireInput(ctx, i);
  if (!t.ok()) return t.status();
  if ((*t)->kind() != v1::VALUE_SEQUENCE) {
    return ctx.Invalid(absl::StrCat("input ", i, " must be a sequence, got ", (*t)->DebugString()));
  }
  return t;
}

absl::StatusOr<const Tensor*> RequireTensor(const KernelContext& ctx, int i) {
  absl::StatusOr<const Tensor*> t = RequireInput(ctx, i);
  if (!t.ok()) return t.status();
  if (!(*t)->is_tensor()) {
    return ctx.Invalid(absl::StrCat("input ", i, " must be a tensor, got ", (*t)->DebugString()));
  }
  return t;
}

// The position input i (an integer scalar or one-element tensor), checked against
// [-size, size - 1] (or [-size, size] when `end_allowed`) and made non-negative. `fallback`
// when the input is omitted.
absl::StatusOr<int64_t> Position(const KernelContext& ctx, int i, int64_t size, bool end_allowed,
                                 int64_t fallback) {
  const Tensor* p = ctx.input(i);
  if (p == nullptr) return fallback;
  if (!p->is_tensor() || !IsInteger(p->dtype()) || p->num_elements() != 1) {
    return ctx.Invalid(absl::StrCat("position must be one integer, got ", p->DebugString()));
  }
  const int64_t pos = p->ElementAsInt64(0);
  const int64_t last = end_allowed ? size : size - 1;
  if (pos < -size || pos > last) {
    return ctx.Invalid(absl::StrCat("position ", pos, " is out of range [", -size, ", ", last,
                                    "] for a sequence of ", size, " tensors"));
  }
  return pos < 0 ? pos + size : pos;
}

// A copy of `t` that owns its elements, charged to the run's budget: what goes into a sequence.
absl::StatusOr<Tensor> OwnedItem(const KernelContext& ctx, const Tensor& t) {
  return t.Clone(ctx.memory(), [&] { return absl::StrCat(ctx.info().label(), " sequence item"); });
}

// The dtype a new item must have: the sequence's, when it has one.
absl::Status CheckItemDType(const KernelContext& ctx, const Tensor& sequence, const Tensor& item) {
  const v1::DataType want = sequence.element_dtype();
  if (want != v1::DT_UNDEFINED && item.dtype() != want) {
    return ctx.Invalid(absl::StrCat("a ", DataTypeName(item.dtype()),
                                    " tensor cannot join a sequence of ", DataTypeName(want)));
  }
  return absl::OkStatus();
}

absl::Status SequenceEmptyKernel(KernelContext& ctx) {
  const int64_t dtype = ctx.info().GetInt("dtype", v1::DT_FLOAT32);
  if (!v1::DataType_IsValid(static_cast<int>(dtype)) || dtype == v1::DT_UNDEFINED) {
    return ctx.Invalid(absl::StrCat("attribute 'dtype' ", dtype, " is not a data type"));
  }
  ctx.SetOutput(0, Tensor::Sequence(static_cast<v1::DataType>(dtype), {}));
  return absl::OkStatus();
}

absl::Status SequenceConstructKernel(KernelContext& ctx) {
  std::vector<Tensor> items;
  items.reserve(ctx.num_inputs());
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    absl::StatusOr<const Tensor*> t = RequireTensor(ctx, i);
    if (!t.ok()) return t.status();
    if (i > 0 && (*t)->dtype() != items[0].dtype()) {
      return ctx.Invalid(absl::StrCat("input ", i, " is ", (*t)->DebugString(), " but input 0 is ",
                                      items[0].DebugString(), ": a sequence has one element type"));
    }
    absl::StatusOr<Tensor> owned = OwnedItem(ctx, **t);
    if (!owned.ok()) return owned.status();
    items.push_back(*std::move(owned));
  }
  if (items.empty()) return ctx.Invalid("needs at least one input");
  const v1::DataType dtype = items[0].dtype();
  ctx.SetOutput(0, Tensor::Sequence(dtype, std::move(items)));
  return absl::OkStatus();
}

absl::Status SequenceInsertKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> seq = RequireSequence(ctx, 0);
  if (!seq.ok()) return seq.status();
  absl::StatusOr<const Tensor*> t = RequireTensor(ctx, 1);
  if (!t.ok()) return t.status();
  if (absl::Status s = CheckItemDType(ctx, **seq, **t); !s.ok()) return s;
  const std::vector<Tensor>& old = (*seq)->items();
  const int64_t n = static_cast<int64_t>(old.size());
  absl::StatusOr<int64_t> pos = Position(ctx, 2, n, /*end_allowed=*/true, n);
  if (!pos.ok()) return pos.status();
  absl::StatusOr<Tensor> owned = OwnedItem(ctx, **t);
  if (!owned.ok()) return owned.status();
  std::vector<Tensor> items;
  items.reserve(old.size() + 1);
  items.insert(items.end(), old.begin(), old.begin() + *pos);
  items.push_back(*std::move(owned));
  items.insert(items.end(), old.begin() + *pos, old.end());
  ctx.SetOutput(0, Tensor::Sequence((*t)->dtype(), std::move(items)));
  return absl::OkStatus();
}

absl::Status SequenceAtKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> seq = RequireSequence(ctx, 0);
  if (!seq.ok()) return seq.status();
  const int64_t n = static_cast<int64_t>((*seq)->items().size());
  if (ctx.input(1) == nullptr) return ctx.Invalid("input 1 (position) is required");
  absl::StatusOr<int64_t> pos = Position(ctx, 1, n, /*end_allowed=*/false, 0);
  if (!pos.ok()) return pos.status();
  ctx.SetOutput(0, (*seq)->items()[*pos]);
  return absl::OkStatus();
}

absl::Status SequenceEraseKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> seq = RequireSequence(ctx, 0);
  if (!seq.ok()) return seq.status();
  const std::vector<Tensor>& old = (*seq)->items();
  const int64_t n = static_cast<int64_t>(old.size());
  if (n == 0) return ctx.Invalid("cannot erase from an empty sequence");
  absl::StatusOr<int64_t> pos = Position(ctx, 1, n, /*end_allowed=*/false, n - 1);
  if (!pos.ok()) return pos.status();
  std::vector<Tensor> items;
  items.reserve(old.size() - 1);
  items.insert(items.end(), old.begin(), old.begin() + *pos);
  items.insert(items.end(), old.begin() + *pos + 1, old.end());
  ctx.SetOutput(0, Tensor::Sequence((*seq)->element_dtype(), std::move(items)));
  return absl::OkStatus();
}

absl::Status SequenceLengthKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> seq = RequireSequence(ctx, 0);
  if (!seq.ok()) return seq.status();
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_INT64, {});
  if (!out.ok()) return out.status();
  (*out)->data<int64_t>()[0] = static_cast<int64_t>((*seq)->items().size());
  return absl::OkStatus();
}

// Copies `count` slices along `axis` of src (from slice src_begin) into dst (at slice
// dst_begin). src and dst have one dtype and agree on every dim but `axis`.
void CopySlices(const Tensor& src, int64_t src_begin, Tensor& dst, int64_t dst_begin,
                int64_t count, int axis) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= src.dim(d);
  for (int d = axis + 1; d < src.rank(); ++d) inner *= src.dim(d);
  const int64_t src_axis = src.rank() > axis ? src.dim(axis) : 1;
  const int64_t dst_axis = dst.rank() > axis ? dst.dim(axis) : 1;
  const int64_t run = count * inner;
  if (src.dtype() == v1::DT_STRING) {
    for (int64_t o = 0; o < outer; ++o) {
      const std::string* from = src.strings() + (o * src_axis + src_begin) * inner;
      std::string* to = dst.strings() + (o * dst_axis + dst_begin) * inner;
      std::copy(from, from + run, to);
    }
    return;
  }
  const size_t size = src.element_size();
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(to + ((o * dst_axis + dst_begin) * inner) * size,
                from + ((o * src_axis + src_begin) * inner) * size, run * size);
  }
}

absl::Status SplitToSequenceKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireTensor(ctx, 0);
  if (!x.ok()) return x.status();
  const Tensor& in = **x;
  if (in.rank() == 0) return ctx.Invalid("input 0 must have rank 1 or more");
  absl::StatusOr<int> axis = NormalizeAxis(ctx.info().GetInt("axis", 0), in.rank(), ctx.info());
  if (!axis.ok()) return axis.status();
  const int64_t dim = in.dim(*axis);
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (const Tensor* split = ctx.input(1)) {
    absl::StatusOr<std::vector<int64_t>> v = split->ToInt64Vector();
    if (!v.ok() || split->rank() > 1) {
      return ctx.Invalid(absl::StrCat("split must be an integer scalar or 1-D tensor, got ",
                                      split->DebugString()));
    }
    if (split->rank() == 0) {
      const int64_t chunk = (*v)[0];
      if (chunk <= 0) return ctx.Invalid(absl::StrCat("split ", chunk, " must be positive"));
      for (int64_t done = 0; done < dim; done += chunk) {
        sizes.push_back(std::min(chunk, dim - done));
      }
    } else {
      int64_t total = 0;
      for (int64_t s : *v) {
        if (s < 0) return ctx.Invalid(absl::StrCat("split sizes must not be negative, got ", s));
        total += s;
      }
      if (total != dim) {
        return ctx.Invalid(absl::StrCat("split sizes add up to ", total, " but axis ", *axis,
                                        " has ", dim));
      }
      sizes = *std::move(v);
    }
  } else {
    sizes.assign(static_cast<size_t>(dim), 1);
    squeeze = ctx.info().GetInt("keepdims", 1) == 0;
  }
  std::vector<Tensor> items;
  items.reserve(sizes.size());
  int64_t begin = 0;
  for (int64_t s : sizes) {
    Shape shape = in.shape();
    shape[*axis] = s;
    absl::StatusOr<Tensor> part = ctx.AllocateTemp(in.dtype(), shape, "sequence item");
    if (!part.ok()) return part.status();
    CopySlices(in, begin, *part, 0, s, *axis);
    begin += s;
    if (squeeze) {
      shape.erase(shape.begin() + *axis);
      absl::StatusOr<Tensor> squeezed = part->Reshaped(shape);
      if (!squeezed.ok()) return squeezed.status();
      *part = *std::move(squeezed);
    }
    items.push_back(*std::move(part));
  }
  ctx.SetOutput(0, Tensor::Sequence(in.dtype(), std::move(items)));
  return absl::OkStatus();
}

absl::Status ConcatFromSequenceKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> seq = RequireSequence(ctx, 0);
  if (!seq.ok()) return seq.status();
  const std::vector<Tensor>& items = (*seq)->items();
  if (items.empty()) return ctx.Invalid("cannot concatenate an empty sequence");
  absl::StatusOr<int64_t> axis_attr = ctx.info().RequireInt("axis");
  if (!axis_attr.ok()) return axis_attr.status();
  const bool new_axis = ctx.info().GetInt("new_axis", 0) != 0;
  const Tensor& first = items[0];
  // With new_axis the items are stacked: each gets a dim of 1 at `axis` (range [-r-1, r]).
  const int rank = first.rank() + (new_axis ? 1 : 0);
  absl::StatusOr<int> axis = NormalizeAxis(*axis_attr, rank, ctx.info());
  if (!axis.ok()) return axis.status();
  if (first.rank() == 0 && !new_axis) return ctx.Invalid("cannot concatenate scalars");
  std::vector<Tensor> parts;
  parts.reserve(items.size());
  int64_t total = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    Tensor t = items[i];
    if (new_axis) {
      Shape s = t.shape();
      s.insert(s.begin() + *axis, 1);
      absl::StatusOr<Tensor> r = t.Reshaped(s);
      if (!r.ok()) return r.status();
      t = *std::move(r);
    }
    bool same = t.dtype() == first.dtype() && t.rank() == rank;
    for (int d = 0; same && d < rank; ++d) {
      same = d == *axis || t.dim(d) == (parts.empty() ? t.dim(d) : parts[0].dim(d));
    }
    if (!same) {
      return ctx.Invalid(absl::StrCat("item ", i, " ", items[i].DebugString(),
                                      " does not match item 0 ", first.DebugString(),
                                      " outside axis ", *axis));
    }
    total += t.dim(*axis);
    parts.push_back(std::move(t));
  }
  Shape shape = parts[0].shape();
  shape[*axis] = total;
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, first.dtype(), shape);
  if (!out.ok()) return out.status();
  int64_t at = 0;
  for (const Tensor& p : parts) {
    CopySlices(p, 0, **out, at, p.dim(*axis), *axis);
    at += p.dim(*axis);
  }
  return absl::OkStatus();
}

// SequenceMap: runs 'body' once per item of the first input (every sequence input has as many
// items), feeding item i of each sequence input and each tensor input whole; output k is the
// sequence of the body's output k.
class SequenceMapKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    auto k = std::unique_ptr<SequenceMapKernel>(new SequenceMapKernel());
    absl::StatusOr<std::unique_ptr<Executor>> body = info.CreateSubgraphExecutor("body");
    if (!body.ok()) return body.status();
    k->body_ = *std::move(body);
    const Graph& g = k->body_->graph();
    if (static_cast<int>(g.inputs().size()) != info.num_inputs() ||
        static_cast<int>(g.outputs().size()) != info.num_outputs()) {
      return info.Invalid(absl::StrCat("body has ", g.inputs().size(), " inputs and ",
                                       g.outputs().size(), " outputs; the node ",
                                       info.num_inputs(), " and ", info.num_outputs()));
    }
    for (ValueId v : g.outputs()) k->output_dtypes_.push_back(g.value(v).type.dtype);
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<const Tensor*> first = RequireSequence(ctx, 0);
    if (!first.ok()) return first.status();
    const size_t n = (*first)->items().size();
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      absl::StatusOr<const Tensor*> t = RequireInput(ctx, i);
      if (!t.ok()) return t.status();
      if ((*t)->kind() == v1::VALUE_SEQUENCE && (*t)->items().size() != n) {
        return ctx.Invalid(absl::StrCat("input ", i, " has ", (*t)->items().size(),
                                        " items but input 0 has ", n));
      }
    }
    RunOptions run;
    run.stop = ctx.stop();
    run.memory = ctx.memory();
    std::vector<std::vector<Tensor>> outputs(ctx.num_outputs());
    for (auto& o : outputs) o.reserve(n);
    std::vector<Tensor> feed(ctx.num_inputs());
    for (size_t item = 0; item < n; ++item) {
      if (ctx.ShouldStop()) {
        return ctx.StopStatus(absl::StrCat(ctx.info().label(), " item ", item));
      }
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        const Tensor& t = *ctx.input(i);
        feed[i] = t.kind() == v1::VALUE_SEQUENCE ? t.items()[item] : t;
      }
      absl::StatusOr<RunResult> r = body_->RunPositional(feed, run, ctx.outer_lookup());
      if (!r.ok()) return r.status();
      for (int k = 0; k < ctx.num_outputs(); ++k) {
        // A body's output may view its input, which may view an arena of this graph.
        absl::StatusOr<Tensor> owned = OwnedItem(ctx, r->outputs[k]);
        if (!owned.ok()) return owned.status();
        outputs[k].push_back(*std::move(owned));
      }
    }
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      const v1::DataType dtype =
          outputs[k].empty() ? output_dtypes_[k] : outputs[k][0].dtype();
      ctx.SetOutput(k, Tensor::Sequence(dtype, std::move(outputs[k])));
    }
    return absl::OkStatus();
  }

 private:
  SequenceMapKernel() = default;
  std::unique_ptr<Executor> body_;
  std::vector<v1::DataType> output_dtypes_;
};

// Optional: the input wrapped, or, without one, an empty optional of the 'type' attribute.
class OptionalKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    auto k = std::unique_ptr<OptionalKernel>(new OptionalKernel());
    if (const v1::Attribute* a = info.attr("type")) {
      absl::StatusOr<TensorType> t = TensorTypeFromTypeAttribute(*a);
      if (!t.ok()) return info.Invalid(t.status().message());
      if (!IsOptionalKind(t->kind) && t->kind != v1::VALUE_TENSOR &&
          t->kind != v1::VALUE_SEQUENCE) {
        return info.Invalid("attribute 'type' must be a tensor or sequence type");
      }
      k->empty_kind_ = t->kind == v1::VALUE_SEQUENCE ? v1::VALUE_OPTIONAL_SEQUENCE
                                                     : v1::VALUE_OPTIONAL_TENSOR;
      k->element_dtype_ = t->dtype;
    } else if (!info.has_input(0)) {
      return info.Invalid("needs input 0 or attribute 'type'");
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    if (const Tensor* x = ctx.input(0)) {
      if (IsOptionalKind(x->kind())) return ctx.Invalid("input 0 must not be an optional");
      ctx.SetOutput(0, Tensor::OptionalOf(*x));
    } else {
      ctx.SetOutput(0, Tensor::EmptyOptional(empty_kind_, element_dtype_));
    }
    return absl::OkStatus();
  }

 private:
  OptionalKernel() = default;
  v1::ValueKind empty_kind_ = v1::VALUE_OPTIONAL_TENSOR;
  v1::DataType element_dtype_ = v1::DT_UNDEFINED;
};

// OptionalHasElement: whether an optional holds a value (opset 18 also takes a tensor, which
// always does, or no input at all, which never does).
absl::Status OptionalHasElementKernel(KernelContext& ctx) {
  const Tensor* x = ctx.input(0);
  bool has = false;
  if (x != nullptr) has = IsOptionalKind(x->kind()) ? !x->items().empty() : true;
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_BOOL, {});
  if (!out.ok()) return out.status();
  (*out)->data<bool>()[0] = has;
  return absl::OkStatus();
}

// OptionalGetElement: the optional's value (an error when it has none); a tensor or sequence
// passes through unchanged.
absl::Status OptionalGetElementKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  if (!IsOptionalKind((*x)->kind())) {
    ctx.SetOutput(0, **x);
    return absl::OkStatus();
  }
  if ((*x)->items().empty()) return ctx.Invalid("the optional input has no value");
  ctx.SetOutput(0, (*x)->items()[0]);
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterSequenceKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("SequenceEmpty", SequenceEmptyKernel));
  s.Update(registry.Register("SequenceConstruct", SequenceConstructKernel));
  s.Update(registry.Register("SequenceInsert", SequenceInsertKernel));
  s.Update(registry.Register("SequenceAt", SequenceAtKernel));
  s.Update(registry.Register("SequenceErase", SequenceEraseKernel));
  s.Update(registry.Register("SequenceLength", SequenceLengthKernel));
  s.Update(registry.Register("SplitToSequence", SplitToSequenceKernel));
  s.Update(registry.Register("ConcatFromSequence", ConcatFromSequenceKernel));
  s.Update(registry.Register("SequenceMap", KernelFactory(SequenceMapKernel::Create)));
  s.Update(registry.Register("Optional", KernelFactory(OptionalKernel::Create)));
  s.Update(registry.Register("OptionalHasElement", OptionalHasElementKernel));
  s.Update(registry.Register("OptionalGetElement", OptionalGetElementKernel));
  return s;
}

}  // namespace graphopt::runtime
