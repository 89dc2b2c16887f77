// Einsum. The equation is parsed into labels per operand dim (letters are labels 0..51,
// ellipsis dims 52..); repeated labels within an operand take diagonals, ellipsis dims broadcast
// numpy-style, and an equation without "->" outputs the ellipsis dims and then the letters used
// once, in alphabetical order. Two operands of the matrix-product form are packed and
// multiplied; anything else is computed directly: for each output position, the sum over the
// contracted labels of the product of the operands.
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/reduction_util.h"

namespace graphopt::runtime {
namespace {

constexpr int kLetters = 52;

int LetterLabel(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

// One term of the equation: its letter labels, and where "..." sits among them (-1: nowhere).
struct Term {
  std::vector<int> letters;
  int ellipsis = -1;
};

absl::Status ParseTerm(absl::string_view s, Term* t, const KernelContext& ctx) {
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      if (s.substr(i, 3) != "..." || t->ellipsis >= 0) {
        return ctx.Invalid(absl::StrCat("bad ellipsis in equation term '", s, "'"));
      }
      t->ellipsis = static_cast<int>(t->letters.size());
      i += 2;
      continue;
    }
    const int l = LetterLabel(c);
    if (l < 0) return ctx.Invalid(absl::StrCat("bad character '", std::string(1, c),
                                               "' in equation term '", s, "'"));
    t->letters.push_back(l);
  }
  return absl::OkStatus();
}

// The parsed, shape-checked equation: per operand the label of each dim, the output labels and
// every label's size.
struct EinsumPlan {
  std::vector<std::vector<int>> operand_labels;
  std::vector<int> output_labels;
  std::vector<int64_t> sizes;  // per label; -1 when unused
};

absl::StatusOr<EinsumPlan> PlanEinsum(const std::string& equation,
                                      const std::vector<const Tensor*>& inputs,
                                      const KernelContext& ctx) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ' && c != '\t') eq.push_back(c);
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> parts = absl::StrSplit(lhs, ',');
  if (parts.size() != inputs.size()) {
    return ctx.Invalid(absl::StrCat("equation '", equation, "' has ", parts.size(),
                                    " operands but the node has ", inputs.size(), " inputs"));
  }
  std::vector<Term> terms(parts.size());
  int ell = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    absl::Status s = ParseTerm(parts[k], &terms[k], ctx);
    if (!s.ok()) return s;
    const int rank = inputs[k]->rank();
    const int n = static_cast<int>(terms[k].letters.size());
    if (terms[k].ellipsis < 0 ? rank != n : rank < n) {
      return ctx.Invalid(absl::StrCat("equation term '", parts[k], "' does not fit input ", k,
                                      " of shape ", ShapeString(inputs[k]->shape())));
    }
    ell = std::max(ell, rank - n);
  }
  EinsumPlan plan;
  plan.sizes.assign(kLetters + ell, -1);
  std::vector<int> uses(kLetters, 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    const Term& t = terms[k];
    const Tensor& x = *inputs[k];
    const int e = x.rank() - static_cast<int>(t.letters.size());
    std::vector<int>& labels = plan.operand_labels.emplace_back();
    for (int i = 0; i < static_cast<int>(t.letters.size()); ++i) {
      if (i == t.ellipsis) {
        for (int j = 0; j < e; ++j) labels.push_back(kLetters + (ell - e) + j);
      }
      labels.push_back(t.letters[i]);
      ++uses[t.letters[i]];
    }
    if (t.ellipsis == static_cast<int>(t.letters.size())) {
      for (int j = 0; j < e; ++j) labels.push_back(kLetters + (ell - e) + j);
    }
    for (int i = 0; i < x.rank(); ++i) {
      const int l = labels[i];
      int64_t& size = plan.sizes[l];
      const int64_t d = x.dim(i);
      if (size < 0 || size == d) {
        size = d;
      } else if (l >= kLetters && (size == 1 || d == 1)) {
        size = std::max(size, d);
      } else {
        return ctx.Invalid(absl::StrCat("label of dim ", i, " of input ", k, " has size ", d,
                                        " here and ", size, " elsewhere"));
      }
    }
  }
  if (arrow == std::string::npos) {
    for (int j = 0; j < ell; ++j) plan.output_labels.push_back(kLetters + j);
    for (int l = 0; l < kLetters; ++l) {
      if (uses[l] == 1) plan.output_labels.push_back(l);
    }
  } else {
    Term out;
    absl::Status s = ParseTerm(absl::string_view(eq).substr(arrow + 2), &out, ctx);
    if (!s.ok()) return s;
    std::vector<bool> seen(kLetters, false);
    for (int i = 0; i <= static_cast<int>(out.letters.size()); ++i) {
      if (i == out.ellipsis) {
        for (int j = 0; j < ell; ++j) plan.output_labels.push_back(kLetters + j);
      }
      if (i == static_cast<int>(out.letters.size())) break;
      const int l = out.letters[i];
      if (uses[l] == 0 || seen[l]) {
        return ctx.Invalid(absl::StrCat("output label ", i, " of equation '", equation,
                                        "' is repeated or not in any input"));
      }
      seen[l] = true;
      plan.output_labels.push_back(l);
    }
  }
  return plan;
}

// Copies the elements of a label space (dims `sizes`, row-major) from src (element strides
// `src_strides`) to dst (strides `dst_strides`), converting S to D.
template <typename S, typename D>
void StridedCopy(const S* src, D* dst, const std::vector<int64_t>& sizes,
                 const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides) {
  int64_t total = 1;
  for (int64_t d : sizes) total *= d;
  if (total == 0) return;
  const int n = static_cast<int>(sizes.size());
  std::vector<int64_t> c(n, 0);
  int64_t so = 0, dof = 0;
  for (int64_t e = 0; e < total; ++e) {
    dst[dof] = static_cast<D>(ToCompute(src[so]));
    for (int j = n - 1; j >= 0; --j) {
      if (++c[j] < sizes[j]) {
        so += src_strides[j];
        dof += dst_strides[j];
        break;
      }
      so -= (sizes[j] - 1) * src_strides[j];
      dof -= (sizes[j] - 1) * dst_strides[j];
      c[j] = 0;
    }
  }
}

// Two operands whose labels are each batch (both operands and the output), rows (first operand
// and output), columns (second operand and output) or contracted (both operands, not the
// output), without diagonals or broadcasting: packed into [batch, rows, k] and
// [batch, k, cols], multiplied with contiguous inner loops and scattered into the output.
// False (nothing written) when the equation is not of that form.
template <typename T>
bool EinsumAsMatmul(const EinsumPlan& plan, const std::vector<const Tensor*>& inputs, Tensor& out,
                    const KernelContext& ctx) {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, ComputeType<T>>;
  if (inputs.size() != 2) return false;
  const int L = static_cast<int>(plan.sizes.size());
  std::vector<int> pos_a(L, -1), pos_b(L, -1), pos_o(L, -1);
  for (int k = 0; k < 2; ++k) {
    std::vector<int>& pos = k == 0 ? pos_a : pos_b;
    for (int i = 0; i < inputs[k]->rank(); ++i) {
      const int l = plan.operand_labels[k][i];
      if (pos[l] >= 0 || inputs[k]->dim(i) != plan.sizes[l]) return false;  // diagonal, broadcast
      pos[l] = i;
    }
  }
  for (size_t j = 0; j < plan.output_labels.size(); ++j) {
    pos_o[plan.output_labels[j]] = static_cast<int>(j);
  }
  std::vector<int> batch, rows, cols, red;
  for (int l : plan.output_labels) {
    if (pos_a[l] >= 0 && pos_b[l] >= 0) {
      batch.push_back(l);
    } else if (pos_a[l] >= 0) {
      rows.push_back(l);
    } else {
      cols.push_back(l);
    }
  }
  for (int l : plan.operand_labels[0]) {
    if (pos_o[l] < 0) {
      if (pos_b[l] < 0) return false;  // summed within the first operand only
      red.push_back(l);
    }
  }
  for (int l : plan.operand_labels[1]) {
    if (pos_o[l] < 0 && pos_a[l] < 0) return false;
  }
  auto product = [&](const std::vector<int>& ls) {
    int64_t p = 1;
    for (int l : ls) p *= plan.sizes[l];
    return p;
  };
  const int64_t nb = product(batch), nm = product(rows), nn = product(cols), nk = product(red);
  // Packs operand k in the label order `order` (contiguous).
  auto pack = [&](int k, const std::vector<int>& order, std::vector<Acc>* dst) {
    const std::vector<int64_t> st = Strides(inputs[k]->shape());
    const std::vector<int>& pos = k == 0 ? pos_a : pos_b;
    std::vector<int64_t> sizes, src, dstride;
    for (int l : order) {
      sizes.push_back(plan.sizes[l]);
      src.push_back(st[pos[l]]);
    }
    dstride = Strides(sizes);
    dst->assign(product(order), Acc(0));
    StridedCopy(inputs[k]->data<T>(), dst->data(), sizes, src, dstride);
  };
  std::vector<int> order_a = batch, order_b = batch;
  order_a.insert(order_a.end(), rows.begin(), rows.end());
  order_a.insert(order_a.end(), red.begin(), red.end());
  order_b.insert(order_b.end(), red.begin(), red.end());
  order_b.insert(order_b.end(), cols.begin(), cols.end());
  std::vector<Acc> a, b;
  pack(0, order_a, &a);
  pack(1, order_b, &b);
  std::vector<Acc> c(nb * nm * nn, Acc(0));
  ctx.ParallelFor(nb * nm, std::max<int64_t>(1, 16384 / std::max<int64_t>(nk * nn, 1)),
                  [&](int64_t begin, int64_t end) {
                    for (int64_t r = begin; r < end; ++r) {
                      const int64_t bi = r / std::max<int64_t>(nm, 1);
                      Acc* crow = c.data() + r * nn;
                      const Acc* arow = a.data() + r * nk;
                      for (int64_t p = 0; p < nk; ++p) {
                        const Acc av = arow[p];
                        const Acc* brow = b.data() + (bi * nk + p) * nn;
                        // Integer sums of products wrap around (two's complement), as
                        // numpy's einsum does.
                        for (int64_t j = 0; j < nn; ++j) {
                          crow[j] = WrapAdd(crow[j], WrapMul(av, brow[j]));
                        }
                      }
                    }
                  });
  // Scatter [batch, rows, cols] into the output's label order.
  std::vector<int> order_c = batch;
  order_c.insert(order_c.end(), rows.begin(), rows.end());
  order_c.insert(order_c.end(), cols.begin(), cols.end());
  const std::vector<int64_t> ost = Strides(out.shape());
  std::vector<int64_t> sizes, dst;
  for (int l : order_c) {
    sizes.push_back(plan.sizes[l]);
    dst.push_back(ost[pos_o[l]]);
  }
  T* y = out.data<T>();
  const Acc* cs = c.data();
  int64_t total = c.size();
  if (total == 0) return true;
  std::vector<int64_t> idx(sizes.size(), 0);
  int64_t so = 0, dof = 0;
  const int n = static_cast<int>(sizes.size());
  for (int64_t e = 0; e < total; ++e) {
    y[dof] = FromCompute<T>(cs[so]);
    ++so;
    for (int j = n - 1; j >= 0; --j) {
      if (++idx[j] < sizes[j]) {
        dof += dst[j];
        break;
      }
      dof -= (sizes[j] - 1) * dst[j];
      idx[j] = 0;
    }
  }
  return true;
}

template <typename T>
absl::Status EinsumTyped(const EinsumPlan& plan, const std::vector<const Tensor*>& inputs,
                         Tensor& out, const KernelContext& ctx) {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  if (EinsumAsMatmul<T>(plan, inputs, out, ctx)) return absl::OkStatus();
  const int K = static_cast<int>(inputs.size());
  const int L = static_cast<int>(plan.sizes.size());
  // Per operand, per label: the element stride (summed over repeated labels; 0 when absent or
  // broadcast).
  std::vector<std::vector<int64_t>> stride(K, std::vector<int64_t>(L, 0));
  for (int k = 0; k < K; ++k) {
    const std::vector<int64_t> st = Strides(inputs[k]->shape());
    for (int i = 0; i < inputs[k]->rank(); ++i) {
      const int l = plan.operand_labels[k][i];
      if (inputs[k]->dim(i) == 1 && plan.sizes[l] != 1) continue;  // broadcast
      stride[k][l] += st[i];
    }
  }
  std::vector<bool> in_out(L, false);
  for (int l : plan.output_labels) in_out[l] = true;
  std::vector<int> sum_labels;
  for (int l = 0; l < L; ++l) {
    if (plan.sizes[l] >= 0 && !in_out[l]) sum_labels.push_back(l);
  }
  int64_t n_sum = 1;
  for (int l : sum_labels) n_sum *= plan.sizes[l];
  const int64_t inner_len = sum_labels.empty() ? 1 : plan.sizes[sum_labels.back()];
  const int64_t outer_sum = inner_len == 0 ? 0 : n_sum / inner_len;
  std::vector<int64_t> inner_stride(K, 0);
  if (!sum_labels.empty()) {
    for (int k = 0; k < K; ++k) inner_stride[k] = stride[k][sum_labels.back()];
  }
  std::vector<const T*> data(K);
  for (int k = 0; k < K; ++k) data[k] = inputs[k]->data<T>();
  T* y = out.data<T>();
  const int n_out_labels = static_cast<int>(plan.output_labels.size());
  const int n_outer_sum = static_cast<int>(sum_labels.size()) - 1;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(n_sum, 1));
  // The token is polled about every 2^16 products within one output element.
  const int64_t check_every = std::max<int64_t>(1, 65536 / std::max<int64_t>(inner_len, 1));
  ctx.ParallelFor(out.num_elements(), grain, [&](int64_t b, int64_t e) {
    std::vector<int64_t> base(K), off(K);
    for (int64_t idx = b; idx < e; ++idx) {
      std::fill(base.begin(), base.end(), 0);
      int64_t rem = idx;
      for (int j = n_out_labels - 1; j >= 0; --j) {
        const int l = plan.output_labels[j];
        const int64_t c = rem % plan.sizes[l];
        rem /= plan.sizes[l];
        for (int k = 0; k < K; ++k) base[k] += c * stride[k][l];
      }
      Acc acc = 0;
      for (int64_t so = 0; so < outer_sum; ++so) {
        // One output element may sum over every label of every operand (a product of the
        // inputs' sizes, "ij,kl->"): polled within it.
        if (so % check_every == 0 && ctx.ShouldStop()) return;
        off = base;
        int64_t r = so;
        for (int j = n_outer_sum - 1; j >= 0; --j) {
          const int l = sum_labels[j];
          const int64_t c = r % plan.sizes[l];
          r /= plan.sizes[l];
          for (int k = 0; k < K; ++k) off[k] += c * stride[k][l];
        }
        // Integer sums and products wrap around (WrapAdd and WrapMul are + and * for floats).
        if (K == 1) {
          const T* p = data[0] + off[0];
          const int64_t s0 = inner_stride[0];
          for (int64_t s = 0; s < inner_len; ++s) {
            acc = WrapAdd(acc, static_cast<Acc>(ToCompute(p[s * s0])));
          }
        } else if (K == 2) {
          const T* p = data[0] + off[0];
          const T* q = data[1] + off[1];
          const int64_t s0 = inner_stride[0], s1 = inner_stride[1];
          for (int64_t s = 0; s < inner_len; ++s) {
            acc = WrapAdd(acc, WrapMul(static_cast<Acc>(ToCompute(p[s * s0])),
                                       static_cast<Acc>(ToCompute(q[s * s1]))));
          }
        } else {
          for (int64_t s = 0; s < inner_len; ++s) {
            Acc prod = 1;
            for (int k = 0; k < K; ++k) {
              const T v = data[k][off[k] + s * inner_stride[k]];
              prod = WrapMul(prod, static_cast<Acc>(ToCompute(v)));
            }
            acc = WrapAdd(acc, prod);
          }
        }
      }
      y[idx] = FromCompute<T>(acc);
    }
  });
  return absl::OkStatus();
}

absl::Status EinsumKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  if (!info.has_attr("equation")) return ctx.Invalid("attribute 'equation' is required");
  const std::string equation = info.GetString("equation", "");
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    absl::StatusOr<const Tensor*> x = RequireInput(ctx, i);
    if (!x.ok()) return x.status();
    if ((*x)->dtype() != ctx.input(0)->dtype()) {
      return ctx.Invalid(absl::StrCat("input ", i, " is ", DataTypeName((*x)->dtype()),
                                      " but input 0 is ", DataTypeName(ctx.input(0)->dtype())));
    }
    inputs.push_back(*x);
  }
  if (inputs.empty()) return ctx.Invalid("Einsum needs at least one input");
  absl::StatusOr<EinsumPlan> plan = PlanEinsum(equation, inputs, ctx);
  if (!plan.ok()) return plan.status();
  Shape out_shape;
  for (int l : plan->output_labels) out_shape.push_back(plan->sizes[l]);
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, inputs[0]->dtype(), out_shape);
  if (!out.ok()) return out.status();
  absl::Status s = DispatchNumeric(inputs[0]->dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    return EinsumTyped<T>(*plan, inputs, **out, ctx);
  });
  if (!s.ok() && s.code() == absl::StatusCode::kUnimplemented) {
    return info.Unimplemented(absl::StrCat(info.op_type(), ": ", s.message()));
  }
  return s;
}

}  // namespace

absl::Status RegisterEinsumKernels(KernelRegistry& registry) {
  return registry.Register("Einsum", EinsumKernel);
}

}  // namespace graphopt::runtime
