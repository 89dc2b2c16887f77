#include "tests/differential/random_graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace graphopt::differential {
namespace {

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<int64_t>());
}

// Builds one graph step by step; every random draw goes through rng_, in step order.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {
    graph_.set_name(absl::StrCat("random_", seed));
    v1::OpsetImport* opset = graph_.add_opset_imports();
    opset->set_domain("");
    opset->set_version(17);
    AddInput(RandomShape());
    AddInput(RandomShape());
  }

  void Step() {
    switch (Int(0, 17)) {
      case 0: case 1: Unary(); break;
      case 2: case 3: Binary(); break;
      case 4: IdentityArithmetic(); break;
      case 5: Transposes(); break;
      case 6: Reshapes(); break;
      case 7: UnsqueezeSqueeze(); break;
      case 8: SameCastOrIdentity(); break;
      case 9: Duplicate(); break;
      case 10: ConstantSubgraph(); break;
      case 11: ReshapeToShapeOf(); break;
      case 12: ConvBatchNorm(); break;
      case 13: Dense(); break;
      case 14: Gelu(); break;
      case 15: LayerNorm(); break;
      case 16: Reduce(); break;
      default: Concat(); break;
    }
  }

  RandomCase Finish() && {
    // Outputs: every node output that nothing reads (float values only: int64 Shape outputs
    // always feed a Reshape).
    std::set<std::string> read;
    for (const v1::Node& n : graph_.nodes()) {
      for (const std::string& in : n.inputs()) read.insert(in);
    }
    for (const Val& v : pool_) {
      if (v.produced && !read.count(v.name)) {
        v1::ValueInfo* out = graph_.add_outputs();
        out->set_name(v.name);
        out->mutable_type()->set_dtype(v1::DT_FLOAT32);
      }
    }
    RandomCase c;
    c.graph = std::move(graph_);
    c.inputs = std::move(inputs_);
    return c;
  }

 private:
  struct Val {
    std::string name;
    Shape shape;
    bool produced = false;  // by a node (not a graph input or initializer)
  };

  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  float Real(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng_); }
  bool Chance(int percent) { return Int(0, 99) < percent; }

  Shape RandomShape(int min_rank = 1, int max_rank = 4) {
    Shape s(Int(min_rank, max_rank));
    for (int64_t& d : s) d = Int(1, 4);
    return s;
  }

  std::string NewName(const std::string& base) { return absl::StrCat(base, "_", next_++); }

  const Val& Pick() { return pool_[Int(0, static_cast<int>(pool_.size()) - 1)]; }
  // A value of rank `rank`, or nullptr when the pool has none.
  const Val* PickRank(size_t rank) {
    std::vector<const Val*> c;
    for (const Val& v : pool_) {
      if (v.shape.size() == rank) c.push_back(&v);
    }
    if (c.empty()) return nullptr;
    return c[Int(0, static_cast<int>(c.size()) - 1)];
  }

  void AddInput(const Shape& shape) {
    const std::string name = NewName("input");
    v1::ValueInfo* vi = graph_.add_inputs();
    vi->set_name(name);
    vi->mutable_type()->set_dtype(v1::DT_FLOAT32);
    for (int64_t d : shape) vi->mutable_type()->mutable_shape()->add_dims()->set_size(d);
    runtime::Tensor t = runtime::Tensor::Allocate(v1::DT_FLOAT32,
                                                  runtime::Shape(shape.begin(), shape.end()))
                            .value();
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = Real(-2.0f, 2.0f);
    inputs_.emplace_back(name, std::move(t));
    pool_.push_back({name, shape});
  }

  // A float32 initializer with values in [lo, hi] (all equal to lo when lo == hi).
  std::string Const(const Shape& shape, float lo, float hi) {
    std::vector<float> v(NumElements(shape));
    for (float& x : v) x = lo == hi ? lo : Real(lo, hi);
    return ConstOf(shape, v);
  }
  std::string ConstOf(const Shape& shape, const std::vector<float>& values) {
    v1::Tensor* t = graph_.add_initializers();
    t->set_name(NewName("const"));
    t->set_dtype(v1::DT_FLOAT32);
    for (int64_t d : shape) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                                values.size() * sizeof(float)));
    return t->name();
  }
  std::string IntConst(const std::vector<int64_t>& values) {
    v1::Tensor* t = graph_.add_initializers();
    t->set_name(NewName("ints"));
    t->set_dtype(v1::DT_INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                                values.size() * sizeof(int64_t)));
    return t->name();
  }

  static v1::Attribute IntAttr(const std::string& name, int64_t v) {
    v1::Attribute a;
    a.set_name(name);
    a.set_i(v);
    return a;
  }
  static v1::Attribute FloatAttr(const std::string& name, float v) {
    v1::Attribute a;
    a.set_name(name);
    a.set_f(v);
    return a;
  }
  static v1::Attribute IntsAttr(const std::string& name, const std::vector<int64_t>& v) {
    v1::Attribute a;
    a.set_name(name);
    for (int64_t x : v) a.mutable_ints()->add_values(x);
    return a;
  }

  // Adds a node with one output of `shape` (float32 when `pooled`, which puts it in the pool).
  std::string Node(const std::string& op, const std::vector<std::string>& inputs,
                   const Shape& shape, std::vector<v1::Attribute> attrs = {},
                   bool pooled = true) {
    v1::Node* n = graph_.add_nodes();
    n->set_name(NewName(op));
    n->set_op_type(op);
    for (const std::string& in : inputs) n->add_inputs(in);
    const std::string out = NewName(absl::StrCat(op, "_out"));
    n->add_outputs(out);
    for (v1::Attribute& a : attrs) *n->add_attributes() = std::move(a);
    if (pooled) pool_.push_back({out, shape, true});
    return out;
  }

  // A shape that broadcasts onto `s` without changing it: a suffix of s with some dims 1.
  Shape BroadcastPartner(const Shape& s) {
    const int keep = Int(0, static_cast<int>(s.size()));
    Shape p(s.end() - keep, s.end());
    for (int64_t& d : p) {
      if (Chance(30)) d = 1;
    }
    return p;
  }

  void Unary() {
    const Val x = Pick();
    static const char* kOps[] = {"Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Erf", "LeakyRelu",
                                 "Sqrt", "Exp"};
    const std::string op = kOps[Int(0, 8)];
    if (op == "Sqrt") {
      Node("Sqrt", {Node("Abs", {x.name}, x.shape)}, x.shape);
    } else if (op == "Exp") {
      Node("Exp", {Node("Tanh", {x.name}, x.shape)}, x.shape);
    } else if (op == "LeakyRelu") {
      Node(op, {x.name}, x.shape, {FloatAttr("alpha", 0.1f)});
    } else {
      Node(op, {x.name}, x.shape);
    }
  }

  void Binary() {
    const Val x = Pick();
    static const char* kOps[] = {"Add", "Sub", "Mul", "Div"};
    const std::string op = kOps[Int(0, 3)];
    std::string y;
    if (op == "Div") {
      y = Const(BroadcastPartner(x.shape), 1.0f, 2.0f);
    } else if (Chance(50)) {
      y = Const(BroadcastPartner(x.shape), -1.5f, 1.5f);
    } else {
      // Another value of the same shape, or x itself.
      y = x.name;
      for (const Val& v : pool_) {
        if (v.shape == x.shape && v.name != x.name && Chance(50)) y = v.name;
      }
    }
    // x may be near zero, so it is never a divisor.
    if (op == "Div" || Chance(50)) {
      Node(op, {x.name, y}, x.shape);
    } else {
      Node(op, {y, x.name}, x.shape);
    }
  }

  // x+0, 0+x, x-0, x*1, 1*x, x/1; sometimes with a constant whose shape widens x (then the
  // node is not an identity).
  void IdentityArithmetic() {
    const Val x = Pick();
    Shape shape = BroadcastPartner(x.shape);
    Shape out = x.shape;
    if (Chance(20) && x.shape.size() < 4) {
      shape = x.shape;
      shape.insert(shape.begin(), 2);
      out = shape;
    }
    switch (Int(0, 5)) {
      case 0: Node("Add", {x.name, Const(shape, 0, 0)}, out); break;
      case 1: Node("Add", {Const(shape, 0, 0), x.name}, out); break;
      case 2: Node("Sub", {x.name, Const(shape, 0, 0)}, out); break;
      case 3: Node("Mul", {x.name, Const(shape, 1, 1)}, out); break;
      case 4: Node("Mul", {Const(shape, 1, 1), x.name}, out); break;
      default: Node("Div", {x.name, Const(shape, 1, 1)}, out); break;
    }
  }

  Shape Permute(const Shape& s, const std::vector<int64_t>& perm) {
    Shape out(s.size());
    for (size_t k = 0; k < s.size(); ++k) out[k] = s[perm[k]];
    return out;
  }

  void Transposes() {
    const Val x = Pick();
    std::vector<int64_t> perm(x.shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng_);
    const Shape shape = Permute(x.shape, perm);
    const std::string t = Node("Transpose", {x.name}, shape, {IntsAttr("perm", perm)});
    if (Chance(50)) {
      // A second transpose: the inverse (the pair cancels) or another permutation.
      std::vector<int64_t> second(perm.size());
      if (Chance(50)) {
        for (size_t k = 0; k < perm.size(); ++k) second[perm[k]] = static_cast<int64_t>(k);
      } else {
        std::iota(second.begin(), second.end(), 0);
        std::shuffle(second.begin(), second.end(), rng_);
      }
      Node("Transpose", {t}, Permute(shape, second), {IntsAttr("perm", second)});
    }
  }

  void Reshapes() {
    const Val x = Pick();
    const int64_t n = NumElements(x.shape);
    std::string cur = x.name;
    const int count = Int(1, 3);
    for (int i = 0; i < count; ++i) {
      Shape target;
      switch (Int(0, 2)) {
        case 0: target = {n}; break;
        case 1: target = x.shape; break;  // a reshape to the shape it already has, or back
        default: target = {1, n}; break;
      }
      cur = Node("Reshape", {cur, IntConst(std::vector<int64_t>(target.begin(), target.end()))},
                 target);
    }
  }

  void UnsqueezeSqueeze() {
    const Val x = Pick();
    if (x.shape.size() >= 4) return;
    const int64_t axis = Int(0, static_cast<int>(x.shape.size()));
    Shape wide = x.shape;
    wide.insert(wide.begin() + axis, 1);
    const std::string u = Node("Unsqueeze", {x.name, IntConst({axis})}, wide);
    if (Chance(80)) Node("Squeeze", {u, IntConst({axis})}, x.shape);
  }

  void SameCastOrIdentity() {
    const Val x = Pick();
    switch (Int(0, 2)) {
      case 0: Node("Cast", {x.name}, x.shape, {IntAttr("to", v1::DT_FLOAT32)}); break;
      case 1: Node("Identity", {x.name}, x.shape); break;
      default: Node("Dropout", {x.name}, x.shape); break;
    }
  }

  // An exact copy of an earlier single-output node (new output name): a common subexpression.
  void Duplicate() {
    // Nodes whose output is a pooled (float) value, with that value's shape.
    std::vector<std::pair<int, Shape>> candidates;
    for (int i = 0; i < graph_.nodes_size(); ++i) {
      for (const Val& v : pool_) {
        if (graph_.nodes(i).outputs_size() == 1 && v.name == graph_.nodes(i).outputs(0)) {
          candidates.emplace_back(i, v.shape);
        }
      }
    }
    if (candidates.empty()) return;
    const auto& [index, shape] = candidates[Int(0, static_cast<int>(candidates.size()) - 1)];
    const v1::Node original = graph_.nodes(index);
    std::vector<std::string> inputs(original.inputs().begin(), original.inputs().end());
    std::vector<v1::Attribute> attrs(original.attributes().begin(), original.attributes().end());
    Node(original.op_type(), inputs, shape, attrs);
  }

  // Nodes over constants only, combined with a live value at the end.
  void ConstantSubgraph() {
    const Val x = Pick();
    const Shape shape = BroadcastPartner(x.shape);
    std::string c = Node("Mul", {Const(shape, -1, 1), Const(shape, -1, 1)}, shape, {}, false);
    c = Node("Add", {c, Const(shape, -1, 1)}, shape, {}, false);
    if (Chance(50)) c = Node("Tanh", {c}, shape, {}, false);
    Node(Chance(50) ? "Add" : "Mul", {x.name, c}, x.shape);
  }

  void ReshapeToShapeOf() {
    const Val x = Pick();
    const std::string s = Node("Shape", {x.name}, {}, {}, false);
    const std::string flat = Node("Reshape", {x.name, IntConst({NumElements(x.shape)})},
                                  {NumElements(x.shape)});
    Node("Reshape", {Node("Relu", {flat}, {NumElements(x.shape)}), s}, x.shape);
  }

  void ConvBatchNorm() {
    const Val* x = PickRank(4);
    if (x == nullptr || x->shape[1] > 4 || x->shape[2] < 2 || x->shape[3] < 2) {
      AddInput({1, Int(1, 3), Int(3, 5), Int(3, 5)});
      x = &pool_.back();
    }
    const Val in = *x;
    const int64_t c = in.shape[1], m = Int(1, 4);
    const bool one_by_one = Chance(40);
    const int64_t k = one_by_one ? 1 : 3;
    std::vector<std::string> conv_in = {in.name, Const({m, c, k, k}, -0.5f, 0.5f)};
    if (Chance(50)) conv_in.push_back(Const({m}, -0.5f, 0.5f));
    const Shape out = {in.shape[0], m, in.shape[2], in.shape[3]};
    std::string y = Node("Conv", conv_in, out,
                         {IntsAttr("kernel_shape", {k, k}),
                          IntsAttr("pads", one_by_one ? std::vector<int64_t>{0, 0, 0, 0}
                                                      : std::vector<int64_t>{1, 1, 1, 1})});
    if (Chance(80)) {
      y = Node("BatchNormalization",
               {y, Const({m}, 0.5f, 1.5f), Const({m}, -0.5f, 0.5f), Const({m}, -0.5f, 0.5f),
                Const({m}, 0.5f, 2.0f)},
               out, {FloatAttr("epsilon", 1e-5f)});
    }
    if (Chance(60)) y = Node("Relu", {y}, out);
    if (Chance(30)) Node("Add", {y, Node("Relu", {y}, out)}, out);  // a residual-style add
    // A pool after it, as CNNs have (channels_last relayouts these too).
    switch (Int(0, 5)) {
      case 0:
        Node("MaxPool", {y}, {out[0], m, out[2] - 1, out[3] - 1},
             {IntsAttr("kernel_shape", {2, 2})});
        break;
      case 1:
        Node("AveragePool", {y}, out,
             {IntsAttr("kernel_shape", {3, 3}), IntsAttr("pads", {1, 1, 1, 1}),
              IntAttr("count_include_pad", Int(0, 1))});
        break;
      case 2: Node("GlobalAveragePool", {y}, {out[0], m, 1, 1}); break;
      default: break;
    }
  }

  void Dense() {
    const Val* x = PickRank(2);
    if (x == nullptr) {
      AddInput({Int(1, 3), Int(2, 6)});
      x = &pool_.back();
    }
    const Val in = *x;
    const int64_t k = in.shape[1], n = Int(1, 6);
    const Shape out = {in.shape[0], n};
    std::string y;
    if (Chance(50)) {
      y = Node("Gemm", {in.name, Const({n, k}, -0.5f, 0.5f), Const({n}, -0.5f, 0.5f)}, out,
               {IntAttr("transB", 1)});
    } else {
      y = Node("MatMul", {in.name, Const({k, n}, -0.5f, 0.5f)}, out);
      y = Node("Add", {y, Const({n}, -0.5f, 0.5f)}, out);
    }
    if (Chance(50)) y = Node("Relu", {y}, out);
  }

  // x * 0.5 * (1 + erf(x / sqrt(2))) in torch's export order.
  void Gelu() {
    const Val x = Pick();
    const std::string d = Node("Div", {x.name, ConstOf({}, {1.4142135f})}, x.shape);
    const std::string e = Node("Erf", {d}, x.shape);
    const std::string a = Node("Add", {e, ConstOf({}, {1.0f})}, x.shape);
    const std::string m = Node("Mul", {x.name, a}, x.shape);
    Node("Mul", {m, ConstOf({}, {0.5f})}, x.shape);
  }

  // LayerNormalization over the last axis, decomposed as torch exports it.
  void LayerNorm() {
    const Val x = Pick();
    if (x.shape.empty()) return;
    Shape reduced = x.shape;
    reduced.back() = 1;
    const std::vector<v1::Attribute> axes = {IntsAttr("axes", {-1})};
    const std::string mean = Node("ReduceMean", {x.name}, reduced, axes);
    const std::string centered = Node("Sub", {x.name, mean}, x.shape);
    const std::string sq = Node("Pow", {centered, ConstOf({}, {2.0f})}, x.shape);
    const std::string var = Node("ReduceMean", {sq}, reduced, axes);
    const std::string eps = Node("Add", {var, ConstOf({}, {1e-5f})}, reduced);
    const std::string sd = Node("Sqrt", {eps}, reduced);
    const std::string norm = Node("Div", {centered, sd}, x.shape);
    const Shape last = {x.shape.back()};
    const std::string scaled = Node("Mul", {norm, Const(last, 0.5f, 1.5f)}, x.shape);
    Node("Add", {scaled, Const(last, -0.5f, 0.5f)}, x.shape);
  }

  void Reduce() {
    const Val x = Pick();
    if (x.shape.empty()) return;
    const int64_t axis = Int(0, static_cast<int>(x.shape.size()) - 1);
    switch (Int(0, 2)) {
      case 0: {
        Shape out = x.shape;
        out[axis] = 1;
        Node("ReduceMean", {x.name}, out, {IntsAttr("axes", {axis}), IntAttr("keepdims", 1)});
        break;
      }
      case 1: {
        Shape out = x.shape;
        out.erase(out.begin() + axis);
        Node("ReduceSum", {x.name, IntConst({axis})}, out, {IntAttr("keepdims", 0)});
        break;
      }
      default:
        Node("Softmax", {x.name}, x.shape, {IntAttr("axis", axis)});
        break;
    }
  }

  void Concat() {
    const Val x = Pick();
    if (x.shape.empty()) return;
    const int64_t axis = Int(0, static_cast<int>(x.shape.size()) - 1);
    Shape other = x.shape;
    other[axis] = Int(1, 3);
    Shape out = x.shape;
    out[axis] += other[axis];
    Node("Concat", {x.name, Chance(50) && other == x.shape ? x.name : Const(other, -1, 1)}, out,
         {IntAttr("axis", axis)});
  }

  std::mt19937_64 rng_;
  v1::Graph graph_;
  std::vector<Val> pool_;
  std::vector<std::pair<std::string, runtime::Tensor>> inputs_;
  int next_ = 0;
};

}  // namespace

RandomCase GenerateRandomGraph(uint64_t seed, int num_steps) {
  Generator g(seed);
  for (int i = 0; i < num_steps; ++i) g.Step();
  return std::move(g).Finish();
}

}  // namespace graphopt::differential
