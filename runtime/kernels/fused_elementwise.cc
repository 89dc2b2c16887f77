#include "runtime/kernels/fused_elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "ops/fusion_patterns.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {
namespace {

// Elements per tile: the program's intermediates for one tile stay in L1/L2.
constexpr int64_t kTile = 1024;

struct OpInfo {
  const char* name;
  EwOp op;
  int arity;  // 1 or 2 data operands (Clip: 1, its bounds apart)
};

constexpr OpInfo kOps[] = {
    {"Add", EwOp::kAdd, 2},         {"Sub", EwOp::kSub, 2},
    {"Mul", EwOp::kMul, 2},         {"Div", EwOp::kDiv, 2},
    {"Pow", EwOp::kPow, 2},         {"Max", EwOp::kMax, 2},
    {"Min", EwOp::kMin, 2},         {"Relu", EwOp::kRelu, 1},
    {"LeakyRelu", EwOp::kLeakyRelu, 1}, {"Clip", EwOp::kClip, 1},
    {"HardSigmoid", EwOp::kHardSigmoid, 1}, {"Sigmoid", EwOp::kSigmoid, 1},
    {"Tanh", EwOp::kTanh, 1},       {"Exp", EwOp::kExp, 1},
    {"Log", EwOp::kLog, 1},         {"Sqrt", EwOp::kSqrt, 1},
    {"Neg", EwOp::kNeg, 1},         {"Abs", EwOp::kAbs, 1},
    {"Reciprocal", EwOp::kReciprocal, 1}, {"Erf", EwOp::kErf, 1},
    {"Floor", EwOp::kFloor, 1},     {"Ceil", EwOp::kCeil, 1},
    {"Softplus", EwOp::kSoftplus, 1}, {"Sign", EwOp::kSign, 1},
    {"Identity", EwOp::kIdentity, 1},
    {"Elu", EwOp::kElu, 1},         {"Selu", EwOp::kSelu, 1},
    {"Celu", EwOp::kCelu, 1},       {"HardSwish", EwOp::kHardSwish, 1},
    {"Softsign", EwOp::kSoftsign, 1}, {"ThresholdedRelu", EwOp::kThresholdedRelu, 1},
    {"PRelu", EwOp::kPRelu, 2},
};

const OpInfo* FindOp(const Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return nullptr;
  for (const OpInfo& info : kOps) {
    if (node.op_type == info.name) return &info;
  }
  return nullptr;
}

float FloatAttr(const Node& node, const char* name, float fallback) {
  auto it = node.attributes.find(name);
  return it != node.attributes.end() && it->second.value_case() == v1::Attribute::kF
             ? it->second.f()
             : fallback;
}

// --- Tile loops ---------------------------------------------------------------------------------

// y[i] = f(a[i * sa], b[i * sb]) for strides 0 or 1, each combination its own loop so that the
// compiler vectorises them.
template <typename F>
inline void Binary(int64_t n, const float* a, int sa, const float* b, int sb, float* y, F f) {
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  } else if (sa) {
    const float bv = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], bv);
  } else if (sb) {
    const float av = a[0];
    for (int64_t i = 0; i < n; ++i) y[i] = f(av, b[i]);
  } else {
    const float v = f(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

template <typename F>
inline void Unary(int64_t n, const float* a, int sa, float* y, F f) {
  if (sa) {
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i]);
  } else {
    const float v = f(a[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

// y = a, then fn(y, n) in place (the fast_math loops work in place).
inline void InPlace(int64_t n, const float* a, int sa, float* y, void (*fn)(float*, int64_t)) {
  if (sa) {
    if (y != a) std::memcpy(y, a, n * sizeof(float));
    fn(y, n);
  } else {
    float v = a[0];
    fn(&v, 1);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

// The same for a parameterised activation of fast_math.h.
inline void InPlaceActivation(int64_t n, const float* a, int sa, float* y, Activation act,
                              float alpha, float beta) {
  if (sa) {
    if (y != a) std::memcpy(y, a, n * sizeof(float));
    ActivationF32(act, alpha, beta, y, n);
  } else {
    float v = a[0];
    ActivationF32(act, alpha, beta, &v, 1);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

// Pow with one exponent for the whole tile: the exponents models use (squares, cubes, square
// roots, reciprocals) as plain arithmetic; pow(x, 0.5) and sqrt(x) differ only at -0 and -inf.
// False for any other exponent.
inline bool PowByConstant(int64_t n, const float* a, int sa, float e, float* y) {
  if (e == 1.0f) {
    Unary(n, a, sa, y, [](float u) { return u; });
  } else if (e == 2.0f) {
    Unary(n, a, sa, y, [](float u) { return u * u; });
  } else if (e == 3.0f) {
    Unary(n, a, sa, y, [](float u) { return u * u * u; });
  } else if (e == 0.0f) {
    Unary(n, a, sa, y, [](float) { return 1.0f; });
  } else if (e == -1.0f) {
    Unary(n, a, sa, y, [](float u) { return 1.0f / u; });
  } else if (e == 0.5f) {
    Unary(n, a, sa, y, [](float u) {
      return u == -std::numeric_limits<float>::infinity() ? -u : std::sqrt(u) + 0.0f;
    });
  } else {
    return false;
  }
  return true;
}

// Compiled for AVX-512 and AVX2 as well as the baseline, so that the tile loops above vectorise
// at the CPU's full width; the loops' arithmetic is the same in every version.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void Execute(const EwInstr& in, int64_t n, const float* const* ptr, const int* stride, float* y) {
  const float* a = ptr[in.a];
  const int sa = stride[in.a];
  const float* b = in.b >= 0 ? ptr[in.b] : nullptr;
  const int sb = in.b >= 0 ? stride[in.b] : 0;
  switch (in.op) {
    case EwOp::kAdd: return Binary(n, a, sa, b, sb, y, [](float u, float v) { return u + v; });
    case EwOp::kSub: return Binary(n, a, sa, b, sb, y, [](float u, float v) { return u - v; });
    case EwOp::kMul: return Binary(n, a, sa, b, sb, y, [](float u, float v) { return u * v; });
    case EwOp::kDiv: return Binary(n, a, sa, b, sb, y, [](float u, float v) { return u / v; });
    case EwOp::kMax:
      return Binary(n, a, sa, b, sb, y, [](float u, float v) {
        return std::isnan(u) || std::isnan(v) ? std::numeric_limits<float>::quiet_NaN()
                                              : std::max(u, v);
      });
    case EwOp::kMin:
      return Binary(n, a, sa, b, sb, y, [](float u, float v) {
        return std::isnan(u) || std::isnan(v) ? std::numeric_limits<float>::quiet_NaN()
                                              : std::min(u, v);
      });
    case EwOp::kPow:
      if (!sb && PowByConstant(n, a, sa, b[0], y)) return;
      return Binary(n, a, sa, b, sb, y, [](float u, float v) { return std::pow(u, v); });
    case EwOp::kRelu: return Unary(n, a, sa, y, [](float u) { return u > 0.0f ? u : (u == u ? 0.0f : u); });
    case EwOp::kLeakyRelu: {
      const float alpha = in.p0;
      return Unary(n, a, sa, y, [alpha](float u) { return u < 0.0f ? alpha * u : u; });
    }
    case EwOp::kClip: {
      const float lo = in.b >= 0 ? ptr[in.b][0] : in.p0;
      const float hi = in.c >= 0 ? ptr[in.c][0] : in.p1;
      return Unary(n, a, sa, y, [lo, hi](float u) { return u < lo ? lo : (u > hi ? hi : u); });
    }
    case EwOp::kHardSigmoid: {
      const float alpha = in.p0, beta = in.p1;
      return Unary(n, a, sa, y, [alpha, beta](float u) {
        const float r = alpha * u + beta;
        return r < 0.0f ? 0.0f : (r > 1.0f ? 1.0f : r);
      });
    }
    case EwOp::kSigmoid: return InPlace(n, a, sa, y, SigmoidF32);
    case EwOp::kTanh: return InPlace(n, a, sa, y, TanhF32);
    case EwOp::kExp: return InPlace(n, a, sa, y, ExpF32);
    case EwOp::kLog: return InPlaceActivation(n, a, sa, y, Activation::kLog, 0, 0);
    case EwOp::kSqrt: return Unary(n, a, sa, y, [](float u) { return std::sqrt(u); });
    case EwOp::kNeg: return Unary(n, a, sa, y, [](float u) { return -u; });
    case EwOp::kAbs: return Unary(n, a, sa, y, [](float u) { return std::fabs(u); });
    case EwOp::kReciprocal: return Unary(n, a, sa, y, [](float u) { return 1.0f / u; });
    case EwOp::kErf: return InPlace(n, a, sa, y, ErfF32);
    case EwOp::kFloor: return Unary(n, a, sa, y, [](float u) { return std::floor(u); });
    case EwOp::kCeil: return Unary(n, a, sa, y, [](float u) { return std::ceil(u); });
    case EwOp::kSoftplus: return InPlaceActivation(n, a, sa, y, Activation::kSoftplus, 0, 0);
    case EwOp::kElu: return InPlaceActivation(n, a, sa, y, Activation::kElu, in.p0, 0);
    case EwOp::kSelu: return InPlaceActivation(n, a, sa, y, Activation::kSelu, in.p0, in.p1);
    case EwOp::kCelu: return InPlaceActivation(n, a, sa, y, Activation::kCelu, in.p0, 0);
    case EwOp::kHardSwish: return InPlaceActivation(n, a, sa, y, Activation::kHardSwish, 0, 0);
    case EwOp::kSoftsign: return InPlaceActivation(n, a, sa, y, Activation::kSoftsign, 0, 0);
    case EwOp::kThresholdedRelu: {
      const float alpha = in.p0;
      return Unary(n, a, sa, y, [alpha](float u) { return u > alpha ? u : 0.0f; });
    }
    case EwOp::kPRelu:
      return Binary(n, a, sa, b, sb, y, [](float u, float s) { return u < 0.0f ? s * u : u; });
    case EwOp::kSign:
      return Unary(n, a, sa, y, [](float u) { return u > 0.0f ? 1.0f : (u < 0.0f ? -1.0f : u); });
    case EwOp::kIdentity: return Unary(n, a, sa, y, [](float u) { return u; });
    case EwOp::kGelu: return InPlace(n, a, sa, y, GeluF32);
  }
}

// A run of a program allocates nothing on the heap for its bookkeeping in the common case (a
// few operands of rank <= 6): small models run hundreds of thousands of programs a second.
template <typename T>
using Small = absl::InlinedVector<T, 8>;
using Dims = absl::InlinedVector<int64_t, 6>;

// Operand strides of the iteration after merging dims: shape[d] and, per operand, its stride
// at d (0 where it broadcasts).
struct Iteration {
  Dims shape;
  Small<Dims> strides;
};

// The iteration over `out` for operands of shapes `in` (each broadcasting to `out`), with
// adjacent dims merged wherever every operand walks them as one.
Iteration MakeIteration(const Shape& out, absl::Span<const Shape* const> in) {
  const size_t rank = out.size();
  Small<Dims> full(in.size(), Dims(rank, 0));
  for (size_t k = 0; k < in.size(); ++k) {
    const Shape& s = *in[k];
    int64_t stride = 1;
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t d = s.size() - 1 - i;
      const size_t o = rank - 1 - i;
      full[k][o] = s[d] == 1 && out[o] != 1 ? 0 : stride;
      stride *= s[d];
    }
  }
  Iteration it;
  it.strides.resize(in.size());
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool merge = !it.shape.empty();
    for (size_t k = 0; merge && k < in.size(); ++k) {
      merge = it.strides[k].back() == full[k][d] * out[d];
    }
    if (merge) {
      it.shape.back() *= out[d];
      for (size_t k = 0; k < in.size(); ++k) it.strides[k].back() = full[k][d];
    } else {
      it.shape.push_back(out[d]);
      for (size_t k = 0; k < in.size(); ++k) it.strides[k].push_back(full[k][d]);
    }
  }
  if (it.shape.empty()) {
    it.shape.push_back(1);
    for (auto& s : it.strides) s.push_back(0);
  }
  return it;
}

// RunProgram over an iteration [rows, inner] with several whole rows per tile, when every
// data operand is either walked contiguously (row stride inner, element stride 1), a row
// repeated for every row ([inner] broadcast over the rows: copied side by side to fill a
// tile once per call), or one element. nullopt (nothing done) for other operands.
std::optional<bool> RunRowGroups(const KernelContext& ctx, const EwProgram& p,
                                 const std::vector<EwInstr>& code, const Iteration& it,
                                 absl::Span<const Tensor* const> inputs,
                                 absl::Span<float* const> outputs) {
  const size_t num_inputs = p.inputs.size();
  const int64_t rows = it.shape[0], inner = it.shape[1];
  const int64_t group = kTile / inner;
  enum class Walk : uint8_t { kContiguous, kRepeatedRow, kElement };
  Small<Walk> walk(num_inputs);
  for (size_t k = 0; k < num_inputs; ++k) {
    const int64_t s0 = it.strides[k][0], s1 = it.strides[k][1];
    if (p.scalar_input[k] || (s0 == 0 && s1 == 0)) {
      walk[k] = Walk::kElement;
    } else if (s1 == 1 && s0 == inner) {
      walk[k] = Walk::kContiguous;
    } else if (s1 == 1 && s0 == 0) {
      walk[k] = Walk::kRepeatedRow;
    } else {
      return std::nullopt;
    }
  }
  // The repeated rows, `group` copies side by side.
  std::vector<float> repeated;
  Small<int64_t> repeated_at(num_inputs, -1);
  for (size_t k = 0; k < num_inputs; ++k) {
    if (walk[k] != Walk::kRepeatedRow) continue;
    repeated_at[k] = static_cast<int64_t>(repeated.size());
    const float* row = inputs[k]->data<float>();
    for (int64_t g = 0; g < group; ++g) repeated.insert(repeated.end(), row, row + inner);
  }
  Small<float*> output_of(p.num_values, nullptr);
  for (size_t k = 0; k < p.outputs.size(); ++k) output_of[p.output_value[k]] = outputs[k];
  const int num_temps = p.num_values - static_cast<int>(num_inputs);
  const int64_t tiles = (rows + group - 1) / group;
  const int64_t tile = group * inner;
  ctx.ParallelFor(tiles, std::max<int64_t>(1, 16384 / tile), [&](int64_t begin, int64_t end) {
    absl::InlinedVector<float, 2048> scratch(static_cast<size_t>(num_temps) * tile);
    Small<const float*> ptr(p.num_values);
    Small<int> stride(p.num_values, 1);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t row = t * group;
      const int64_t n = std::min(group, rows - row) * inner;
      for (size_t k = 0; k < num_inputs; ++k) {
        const float* base = inputs[k]->data<float>();
        switch (walk[k]) {
          case Walk::kContiguous: ptr[k] = base + row * inner; stride[k] = 1; break;
          case Walk::kRepeatedRow: ptr[k] = repeated.data() + repeated_at[k]; stride[k] = 1; break;
          case Walk::kElement: ptr[k] = base; stride[k] = 0; break;
        }
      }
      for (const EwInstr& in : code) {
        float* y = output_of[in.out] != nullptr
                       ? output_of[in.out] + row * inner
                       : scratch.data() + static_cast<size_t>(in.out - num_inputs) * tile;
        Execute(in, n, ptr.data(), stride.data(), y);
        ptr[in.out] = y;
        stride[in.out] = 1;
      }
    }
  });
  return true;
}

}  // namespace

bool IsProgramNode(const Graph& body, NodeId id, int64_t opset) {
  const Node& node = body.node(id);
  const OpInfo* info = FindOp(node);
  if (info == nullptr || node.outputs.size() != 1 || !node.outputs[0].valid()) return false;
  if (body.value(node.outputs[0]).type.dtype != v1::DT_FLOAT32) return false;
  // Opsets < 7 broadcast by attribute; Min/Max take any number of inputs.
  if (node.attributes.contains("broadcast")) return false;
  if (info->op == EwOp::kClip) {
    if (node.inputs.empty() || !node.inputs[0].valid() || node.inputs.size() > 3) return false;
    return !(opset > 0 && opset < 11 && node.inputs.size() > 1);
  }
  if (static_cast<int>(node.inputs.size()) != info->arity) return false;
  // Celu divides by alpha; its kernel reports 0 as invalid.
  if (info->op == EwOp::kCelu && FloatAttr(node, "alpha", 1.0f) == 0.0f) return false;
  for (ValueId v : node.inputs) {
    if (!v.valid()) return false;
  }
  return true;
}

EwProgram CompileProgram(const Graph& body, const std::vector<NodeId>& nodes, int64_t opset,
                         const std::vector<char>& needed) {
  EwProgram p;
  absl::flat_hash_map<int32_t, int> index;  // body value -> program value
  auto operand = [&](ValueId v) -> int {
    auto it = index.find(v.value());
    if (it != index.end()) return it->second;
    const int k = static_cast<int>(p.inputs.size());
    p.inputs.push_back(v);
    p.scalar_input.push_back(1);
    index[v.value()] = k;
    return k;
  };
  // Inputs first (in reading order), so that results number after them.
  std::vector<char> produced(body.num_value_slots(), 0);
  for (NodeId id : nodes) {
    const Node& node = body.node(id);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId v = node.inputs[i];
      if (!v.valid() || produced[v.value()]) continue;
      const int k = operand(v);
      // Clip's bounds are scalars; any other use is a data operand.
      const bool bound = FindOp(node)->op == EwOp::kClip && i > 0;
      if (!bound) p.scalar_input[k] = 0;
    }
    produced[node.outputs[0].value()] = 1;
  }
  int next = static_cast<int>(p.inputs.size());
  std::vector<int> last_read(p.inputs.size(), -1);
  for (NodeId id : nodes) {
    const Node& node = body.node(id);
    const OpInfo* info = FindOp(node);
    EwInstr in;
    in.op = info->op;
    in.a = index.at(node.inputs[0].value());
    if (info->op == EwOp::kClip) {
      in.b = node.inputs.size() > 1 && node.inputs[1].valid() ? index.at(node.inputs[1].value()) : -1;
      in.c = node.inputs.size() > 2 && node.inputs[2].valid() ? index.at(node.inputs[2].value()) : -1;
      const float inf = std::numeric_limits<float>::infinity();
      const bool attrs = opset > 0 && opset < 11;
      in.p0 = attrs ? FloatAttr(node, "min", -inf) : -inf;
      in.p1 = attrs ? FloatAttr(node, "max", inf) : inf;
    } else if (info->arity == 2) {
      in.b = index.at(node.inputs[1].value());
    }
    if (info->op == EwOp::kLeakyRelu) in.p0 = FloatAttr(node, "alpha", 0.01f);
    if (info->op == EwOp::kElu || info->op == EwOp::kCelu || info->op == EwOp::kThresholdedRelu) {
      in.p0 = FloatAttr(node, "alpha", 1.0f);
    }
    if (info->op == EwOp::kSelu) {
      in.p0 = FloatAttr(node, "alpha", 1.67326319217681884765625f);
      in.p1 = FloatAttr(node, "gamma", 1.05070102214813232421875f);
    }
    if (info->op == EwOp::kHardSigmoid) {
      in.p0 = FloatAttr(node, "alpha", 0.2f);
      in.p1 = FloatAttr(node, "beta", 0.5f);
    }
    in.out = next++;
    index[node.outputs[0].value()] = in.out;
    const int pc = static_cast<int>(p.code.size());
    for (int r : {in.a, in.b, in.c}) {
      if (r >= 0 && r < static_cast<int>(last_read.size())) last_read[r] = pc;
    }
    p.code.push_back(in);
  }
  p.num_values = next;
  for (size_t pc = 0; pc < nodes.size(); ++pc) {
    const ValueId v = body.node(nodes[pc]).outputs[0];
    if (!needed[v.value()]) continue;
    p.outputs.push_back(v);
    p.output_value.push_back(p.code[pc].out);
    int overwrite = -1;
    for (size_t k = 0; k < p.inputs.size() && overwrite < 0; ++k) {
      if (!p.scalar_input[k] && last_read[k] <= static_cast<int>(pc)) overwrite = static_cast<int>(k);
    }
    p.may_overwrite.push_back(overwrite);
  }
  // GELU patterns inside the run become single steps (their intermediates are not needed).
  std::vector<char> in_run(body.num_node_slots(), 0);
  for (NodeId id : nodes) in_run[id.value()] = 1;
  std::vector<char> replaced(body.num_node_slots(), 0);
  std::vector<std::pair<NodeId, EwInstr>> gelus;  // last node of the pattern -> its step
  for (NodeId id : nodes) {
    if (body.node(id).op_type != "Erf") continue;
    std::optional<FusionPatternMatch> m = MatchGelu(body, id);
    if (!m) continue;
    bool inside = index.contains(m->x.value());
    for (NodeId n : m->nodes) inside &= in_run[n.value()] && !replaced[n.value()];
    for (size_t i = 0; inside && i + 1 < m->nodes.size(); ++i) {
      inside = !needed[body.node(m->nodes[i]).outputs[0].value()];
    }
    for (const auto& [value, want] : m->scalars) inside &= index.contains(value.value()) &&
                                                          index.at(value.value()) < static_cast<int>(p.inputs.size());
    if (!inside) continue;
    for (NodeId n : m->nodes) replaced[n.value()] = 1;
    EwInstr g;
    g.op = EwOp::kGelu;
    g.a = index.at(m->x.value());
    g.out = index.at(body.node(m->nodes.back()).outputs[0].value());
    gelus.emplace_back(m->nodes.back(), g);
    for (const auto& [value, want] : m->scalars) p.guards.emplace_back(index.at(value.value()), want);
  }
  if (!gelus.empty()) {
    for (size_t pc = 0; pc < nodes.size(); ++pc) {
      const NodeId id = nodes[pc];
      if (!replaced[id.value()]) {
        p.fast.push_back(p.code[pc]);
        continue;
      }
      for (const auto& [last, g] : gelus) {
        if (last == id) p.fast.push_back(g);
      }
    }
  }
  return p;
}

absl::StatusOr<bool> RunProgram(const KernelContext& ctx, const EwProgram& p,
                                absl::Span<const Tensor* const> inputs,
                                const OutputAllocator& allocate) {
  const size_t num_inputs = p.inputs.size();
  if (inputs.size() != num_inputs) return false;
  for (size_t k = 0; k < num_inputs; ++k) {
    if (inputs[k] == nullptr || inputs[k]->dtype() != v1::DT_FLOAT32) return false;
    if (p.scalar_input[k] && inputs[k]->num_elements() != 1) return false;
  }
  for (const EwInstr& in : p.code) {
    if (in.op != EwOp::kClip) continue;
    for (int r : {in.b, in.c}) {
      if (r >= static_cast<int>(num_inputs) || (r >= 0 && inputs[r]->num_elements() != 1)) {
        return false;
      }
    }
  }
  bool fast = !p.fast.empty();
  for (const auto& [k, want] : p.guards) {
    const Tensor& t = *inputs[k];
    fast &= t.num_elements() == 1 && ScalarMatches(t.data<float>()[0], want);
  }
  const std::vector<EwInstr>& code = fast ? p.fast : p.code;
  // Shapes: every step's result must have the shape of the last one (the iteration's).
  Small<Shape> shapes(p.num_values);
  for (size_t k = 0; k < num_inputs; ++k) shapes[k] = inputs[k]->shape();
  for (const EwInstr& in : p.code) {
    const bool binary = in.b >= 0 && in.op != EwOp::kClip;
    const Shape operands[2] = {shapes[in.a], binary ? shapes[in.b] : Shape()};
    absl::StatusOr<Shape> s = BroadcastShapes(absl::MakeConstSpan(operands, binary ? 2 : 1));
    if (!s.ok()) return false;
    shapes[in.out] = *std::move(s);
  }
  const Shape out_shape = shapes[p.code.back().out];
  for (const EwInstr& in : p.code) {
    if (shapes[in.out] != out_shape) return false;
  }
  const int64_t total = ShapeNumElements(out_shape);
  // Data operands walk the iteration; scalar bounds are read at element 0.
  Small<const Shape*> operand_shapes;
  for (size_t k = 0; k < num_inputs; ++k) operand_shapes.push_back(&shapes[k]);
  const Iteration it = MakeIteration(out_shape, operand_shapes);
  Small<float*> outputs(p.outputs.size());
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    absl::StatusOr<Tensor*> t = allocate(static_cast<int>(k), out_shape);
    if (!t.ok()) return t.status();
    outputs[k] = (*t)->data<float>();
  }
  if (total == 0) return true;
  const int rank = static_cast<int>(it.shape.size());
  if (rank == 2 && it.shape[1] < kTile / 2) {
    // Short rows (a channels-last image's pixels, C channels each): the per-tile bookkeeping
    // would cost more than the work, so a tile spans whole rows when every operand allows it.
    if (std::optional<bool> done = RunRowGroups(ctx, p, code, it, inputs, outputs); done) {
      return *done;
    }
  }
  const int64_t inner = it.shape.back();
  const int64_t rows = total / inner;
  const int64_t tiles_per_row = (inner + kTile - 1) / kTile;
  Small<float*> output_of(p.num_values, nullptr);
  for (size_t k = 0; k < p.outputs.size(); ++k) output_of[p.output_value[k]] = outputs[k];
  const int num_temps = p.num_values - static_cast<int>(num_inputs);
  const int64_t tile = std::min(kTile, inner);
  ctx.ParallelFor(rows * tiles_per_row, std::max<int64_t>(1, 16384 / std::min(inner, kTile)),
                  [&](int64_t begin, int64_t end) {
    absl::InlinedVector<float, 2048> scratch(static_cast<size_t>(num_temps) * tile);
    Small<const float*> ptr(p.num_values);
    Small<int> stride(p.num_values, 1);
    Dims index(rank, 0);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t row = t / tiles_per_row;
      const int64_t start = (t % tiles_per_row) * kTile;
      const int64_t n = std::min(kTile, inner - start);
      // The row's multi-index over the outer dims.
      int64_t r = row;
      for (int d = rank - 2; d >= 0; --d) {
        index[d] = r % it.shape[d];
        r /= it.shape[d];
      }
      for (size_t k = 0; k < num_inputs; ++k) {
        const float* base = inputs[k]->data<float>();
        if (p.scalar_input[k]) {
          ptr[k] = base;
          stride[k] = 0;
          continue;
        }
        int64_t off = 0;
        for (int d = 0; d + 1 < rank; ++d) off += index[d] * it.strides[k][d];
        const int64_t s = it.strides[k][rank - 1];
        ptr[k] = base + off + s * start;
        stride[k] = s != 0 ? 1 : 0;
      }
      for (const EwInstr& in : code) {
        float* y = output_of[in.out] != nullptr
                       ? output_of[in.out] + row * inner + start
                       : scratch.data() + static_cast<size_t>(in.out - num_inputs) * tile;
        Execute(in, n, ptr.data(), stride.data(), y);
        ptr[in.out] = y;
        stride[in.out] = 1;
      }
    }
  });
  return true;
}

}  // namespace graphopt::runtime
