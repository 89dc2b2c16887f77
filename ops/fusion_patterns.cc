#include "ops/fusion_patterns.h"

#include <cmath>
#include <cstring>

namespace graphopt {
namespace {

bool IsOp(const Graph& graph, NodeId id, const char* op) {
  if (!id.valid()) return false;
  const Node& n = graph.node(id);
  return n.alive && n.domain.empty() && n.op_type == op;
}

// The node producing `value`, or an invalid id.
NodeId Producer(const Graph& graph, ValueId value) {
  return value.valid() ? graph.value(value).producer : NodeId();
}

// The only node reading `value` when it has exactly one use and is not a graph output.
NodeId SoleUser(const Graph& graph, ValueId value) {
  if (!value.valid()) return NodeId();
  const Value& v = graph.value(value);
  if (v.uses.size() != 1 || v.graph_output_count > 0) return NodeId();
  return v.uses[0].node;
}

// A node with exactly `inputs` present inputs and one output; false for an invalid id (the
// producer of a graph input or initializer).
bool Shape(const Graph& graph, NodeId id, size_t inputs) {
  if (!id.valid()) return false;
  const Node& n = graph.node(id);
  if (n.inputs.size() != inputs || n.outputs.size() != 1 || !n.outputs[0].valid()) return false;
  for (ValueId v : n.inputs) {
    if (!v.valid()) return false;
  }
  // Opsets < 7 broadcast differently when asked to; such nodes are left alone.
  return !n.attributes.contains("broadcast");
}

ValueId Out(const Graph& graph, NodeId id) { return graph.node(id).outputs[0]; }
ValueId In(const Graph& graph, NodeId id, int i) { return graph.node(id).inputs[i]; }

// The operand of binary node `id` other than `known`, or invalid when `known` is not one of them
// (or is both).
ValueId OtherOperand(const Graph& graph, NodeId id, ValueId known) {
  const ValueId a = In(graph, id, 0), b = In(graph, id, 1);
  if (a == known && b != known) return b;
  if (b == known && a != known) return a;
  return ValueId();
}

// The reduced axes of a ReduceMean over the last axis only, keeping dims; false otherwise.
bool ReducesLastAxis(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  if (n.inputs.size() != 1 || !n.inputs[0].valid() || n.outputs.size() != 1) return false;
  auto keep = n.attributes.find("keepdims");
  if (keep != n.attributes.end() && keep->second.i() != 1) return false;
  auto axes = n.attributes.find("axes");
  if (axes == n.attributes.end() || axes->second.ints().values_size() != 1) return false;
  const int64_t axis = axes->second.ints().values(0);
  if (axis == -1) return true;
  const TensorType& t = graph.value(n.inputs[0]).type;
  return t.shape.has_value() && axis == static_cast<int64_t>(t.shape->size()) - 1;
}

}  // namespace

std::optional<double> ScalarOf(const v1::Tensor& tensor) {
  const std::string& raw = tensor.raw_data();
  auto read = [&](auto zero) -> std::optional<double> {
    if (raw.size() != sizeof(zero)) return std::nullopt;
    std::memcpy(&zero, raw.data(), sizeof(zero));
    return static_cast<double>(zero);
  };
  switch (tensor.dtype()) {
    case v1::DT_FLOAT32: return read(float{0});
    case v1::DT_FLOAT64: return read(double{0});
    case v1::DT_INT32: return read(int32_t{0});
    case v1::DT_INT64: return read(int64_t{0});
    default: return std::nullopt;
  }
}

bool ScalarMatches(double got, double want) {
  return std::fabs(got - want) <= 1e-5 * std::fabs(want);
}

std::optional<FusionPatternMatch> MatchGelu(const Graph& graph, NodeId erf) {
  if (!IsOp(graph, erf, "Erf") || !Shape(graph, erf, 1)) return std::nullopt;
  // In front of Erf: x / sqrt(2) or x * (1/sqrt(2)), read only by Erf.
  const NodeId scale = Producer(graph, In(graph, erf, 0));
  if (SoleUser(graph, In(graph, erf, 0)) != erf || !Shape(graph, scale, 2)) return std::nullopt;
  const bool div = IsOp(graph, scale, "Div");
  if (!div && !IsOp(graph, scale, "Mul")) return std::nullopt;
  // 1 + erf(..), read only by the first Mul.
  const NodeId add = SoleUser(graph, Out(graph, erf));
  if (!IsOp(graph, add, "Add") || !Shape(graph, add, 2)) return std::nullopt;
  const ValueId one = OtherOperand(graph, add, Out(graph, erf));
  const NodeId m1 = SoleUser(graph, Out(graph, add));
  if (!one.valid() || !IsOp(graph, m1, "Mul") || !Shape(graph, m1, 2)) return std::nullopt;
  const ValueId o = OtherOperand(graph, m1, Out(graph, add));
  if (!o.valid()) return std::nullopt;
  // x is the Div's dividend; for a Mul in front it is whichever operand the rest reads again.
  for (int xi = 0; xi < (div ? 1 : 2); ++xi) {
    FusionPatternMatch m;
    m.x = In(graph, scale, xi);
    const ValueId c = In(graph, scale, 1 - xi);
    if (c == m.x) continue;
    m.scalars = {{c, div ? std::sqrt(2.0) : std::sqrt(0.5)}, {one, 1.0}};
    const NodeId half_mul = Producer(graph, o);
    if (o == m.x) {
      // (x * (1 + e)) * 0.5
      const NodeId m2 = SoleUser(graph, Out(graph, m1));
      if (!IsOp(graph, m2, "Mul") || !Shape(graph, m2, 2)) continue;
      const ValueId half = OtherOperand(graph, m2, Out(graph, m1));
      if (!half.valid() || half == m.x) continue;
      m.scalars.push_back({half, 0.5});
      m.nodes = {scale, erf, add, m1, m2};
    } else if (IsOp(graph, half_mul, "Mul") && Shape(graph, half_mul, 2) &&
               SoleUser(graph, o) == m1 && OtherOperand(graph, half_mul, m.x).valid()) {
      // (x * 0.5) * (1 + e)
      m.scalars.push_back({OtherOperand(graph, half_mul, m.x), 0.5});
      m.nodes = {half_mul, scale, erf, add, m1};
    } else {
      // ((1 + e) * 0.5) * x
      const NodeId m2 = SoleUser(graph, Out(graph, m1));
      if (!IsOp(graph, m2, "Mul") || !Shape(graph, m2, 2) ||
          OtherOperand(graph, m2, Out(graph, m1)) != m.x) {
        continue;
      }
      m.scalars.push_back({o, 0.5});
      m.nodes = {scale, erf, add, m1, m2};
    }
    return m;
  }
  return std::nullopt;
}

std::optional<FusionPatternMatch> MatchLayerNorm(const Graph& graph, NodeId mean) {
  if (!IsOp(graph, mean, "ReduceMean") || !ReducesLastAxis(graph, mean)) return std::nullopt;
  FusionPatternMatch m;
  m.x = In(graph, mean, 0);
  const NodeId sub = SoleUser(graph, Out(graph, mean));
  if (!IsOp(graph, sub, "Sub") || !Shape(graph, sub, 2) || In(graph, sub, 0) != m.x ||
      In(graph, sub, 1) != Out(graph, mean)) {
    return std::nullopt;
  }
  // d = x - mean is read twice: squared (Pow(d, 2) or Mul(d, d)), and divided by the deviation.
  const ValueId d = Out(graph, sub);
  const Value& dv = graph.value(d);
  if (dv.graph_output_count > 0) return std::nullopt;
  NodeId square, div;
  for (const Use& u : dv.uses) {
    if (IsOp(graph, u.node, "Div") && u.input_index == 0) {
      div = u.node;
    } else if ((IsOp(graph, u.node, "Pow") && u.input_index == 0) ||
               (IsOp(graph, u.node, "Mul") && In(graph, u.node, 0) == d &&
                In(graph, u.node, 1) == d)) {
      square = u.node;
    } else {
      return std::nullopt;
    }
  }
  if (!square.valid() || !div.valid() || !Shape(graph, square, 2) || !Shape(graph, div, 2)) {
    return std::nullopt;
  }
  const bool pow = IsOp(graph, square, "Pow");
  if (dv.uses.size() != (pow ? 2u : 3u)) return std::nullopt;
  if (pow) m.scalars.push_back({In(graph, square, 1), 2.0});
  const NodeId var = SoleUser(graph, Out(graph, square));
  if (!IsOp(graph, var, "ReduceMean") || !ReducesLastAxis(graph, var)) return std::nullopt;
  const NodeId add_eps = SoleUser(graph, Out(graph, var));
  if (!IsOp(graph, add_eps, "Add") || !Shape(graph, add_eps, 2)) return std::nullopt;
  m.epsilon = OtherOperand(graph, add_eps, Out(graph, var));
  const NodeId sqrt = SoleUser(graph, Out(graph, add_eps));
  if (!m.epsilon.valid() || !IsOp(graph, sqrt, "Sqrt") || !Shape(graph, sqrt, 1) ||
      SoleUser(graph, Out(graph, sqrt)) != div || In(graph, div, 1) != Out(graph, sqrt)) {
    return std::nullopt;
  }
  m.nodes = {mean, sub, square, var, add_eps, sqrt, div};
  // Optional elementwise affine: * scale, then + bias (either may be missing: simplify removes
  // a multiplication by ones).
  NodeId next = SoleUser(graph, Out(graph, div));
  if (IsOp(graph, next, "Mul") && Shape(graph, next, 2)) {
    m.scale = OtherOperand(graph, next, Out(graph, div));
    if (m.scale.valid()) {
      m.nodes.push_back(next);
      next = SoleUser(graph, Out(graph, next));
    }
  }
  if (IsOp(graph, next, "Add") && Shape(graph, next, 2)) {
    m.bias = OtherOperand(graph, next, Out(graph, m.nodes.back()));
    if (m.bias.valid()) m.nodes.push_back(next);
  }
  return m;
}

}  // namespace graphopt
