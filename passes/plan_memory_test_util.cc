#include "passes/plan_memory_test_util.h"

#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"

namespace graphopt {
namespace testing {
namespace {

struct Val {
  std::string name;
  int64_t rows;  // -1: the symbolic "batch"
  int64_t cols;
};

class Builder {
 public:
  Builder(uint32_t seed, bool symbolic) : rng_(seed), symbolic_(symbolic) {
    g_.set_name(absl::StrCat("random_", seed));
    v1::OpsetImport* o = g_.add_opset_imports();
    o->set_version(17);
  }

  v1::Graph Build(int num_nodes) {
    const int64_t rows = symbolic_ ? -1 : 2 + rng_() % 3;
    vals_.push_back(Input("x0", rows, 8 * (1 + rng_() % 3)));
    vals_.push_back(Input("x1", rows, 8 * (1 + rng_() % 3)));
    for (int i = 0; i < num_nodes; ++i) Step();
    // The newest value and a few random ones are outputs (some of them also read later).
    std::vector<std::string> outs = {vals_.back().name};
    for (int k = rng_() % 3; k > 0; --k) outs.push_back(Pick().name);
    for (const std::string& o : outs) {
      bool dup = false;
      for (const auto& existing : g_.outputs()) dup |= existing.name() == o;
      if (!dup && o != "x0" && o != "x1") g_.add_outputs()->set_name(o);
    }
    if (g_.outputs_size() == 0) g_.add_outputs()->set_name(Node("Relu", {"x0"}, 0, 0));
    return std::move(g_);
  }

 private:
  Val Input(const std::string& name, int64_t rows, int64_t cols) {
    v1::ValueInfo* in = g_.add_inputs();
    in->set_name(name);
    in->mutable_type()->set_dtype(v1::DT_FLOAT32);
    v1::Shape* s = in->mutable_type()->mutable_shape();
    if (rows < 0) {
      s->add_dims()->set_symbol("batch");
    } else {
      s->add_dims()->set_size(rows);
    }
    s->add_dims()->set_size(cols);
    return {name, rows, cols};
  }

  // Mostly recent values (chains), sometimes any (long lives).
  const Val& Pick() {
    const size_t n = vals_.size();
    if (rng_() % 4 == 0) return vals_[rng_() % n];
    return vals_[n - 1 - rng_() % std::min<size_t>(n, 3)];
  }

  std::string Fresh() { return absl::StrCat("v", next_++); }

  std::string Constant(std::vector<int64_t> dims, v1::DataType dtype = v1::DT_FLOAT32,
                       std::vector<int64_t> int_values = {}) {
    v1::Tensor* t = g_.add_initializers();
    t->set_name(absl::StrCat("c", next_++));
    t->set_dtype(dtype);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    std::string raw;
    if (dtype == v1::DT_INT64) {
      for (int64_t v : int_values) raw.append(reinterpret_cast<const char*>(&v), 8);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const float f = static_cast<float>(static_cast<int>(rng_() % 200) - 100) / 64.0f;
        raw.append(reinterpret_cast<const char*>(&f), 4);
      }
    }
    t->set_raw_data(raw);
    return t->name();
  }

  // Adds a node with one output of [rows, cols]; returns its name.
  std::string Node(const std::string& op, std::vector<std::string> inputs, int64_t rows,
                   int64_t cols) {
    v1::Node* n = g_.add_nodes();
    n->set_op_type(op);
    for (auto& i : inputs) n->add_inputs(i);
    const std::string out = Fresh();
    n->add_outputs(out);
    if (cols > 0) vals_.push_back({out, rows, cols});
    return out;
  }

  void Step() {
    const Val a = Pick();
    switch (rng_() % 12) {
      case 0:
      case 1: {  // every float op with an in-place pair, so that each kernel runs in place
        static const char* const kUnary[] = {
            "Relu",  "Sigmoid", "Neg",   "Abs",        "Tanh",      "Sqrt",      "Exp",
            "Log",   "Erf",     "Sign",  "Softplus",   "Floor",     "Ceil",      "Reciprocal",
            "Clip",  "LeakyRelu", "HardSigmoid", "Identity"};
        constexpr int kNum = sizeof(kUnary) / sizeof(kUnary[0]);
        Node(kUnary[rng_() % kNum], {a.name}, a.rows, a.cols);
        break;
      }
      case 2:
      case 3: {  // equal shapes when possible, else a broadcast bias on either side
        static const char* const kBinary[] = {"Add", "Mul", "Sub", "Div"};
        const char* op = kBinary[rng_() % 4];
        std::vector<const Val*> same;
        for (const Val& v : vals_) {
          if (v.rows == a.rows && v.cols == a.cols) same.push_back(&v);
        }
        const Val& b = *same[rng_() % same.size()];
        if (rng_() % 3 == 0) {
          const std::string bias = Constant({1, a.cols});
          if (rng_() % 2) {
            Node(op, {bias, a.name}, a.rows, a.cols);
          } else {
            Node(op, {a.name, bias}, a.rows, a.cols);
          }
        } else {
          Node(op, {a.name, b.name}, a.rows, a.cols);
        }
        break;
      }
      case 4: {
        const int64_t out_cols = 8 * (1 + rng_() % 4);
        Node("MatMul", {a.name, Constant({a.cols, out_cols})}, a.rows, out_cols);
        break;
      }
      case 5: {
        std::vector<const Val*> same_rows;
        for (const Val& v : vals_) {
          if (v.rows == a.rows) same_rows.push_back(&v);
        }
        const Val& b = *same_rows[rng_() % same_rows.size()];
        v1::Node* n = g_.mutable_nodes(Index(Node("Concat", {a.name, b.name}, a.rows, a.cols + b.cols)));
        v1::Attribute* axis = n->add_attributes();
        axis->set_name("axis");
        axis->set_i(1);
        break;
      }
      case 6: {
        if (a.cols % 16 != 0) {
          Node("Relu", {a.name}, a.rows, a.cols);
          return;
        }
        v1::Node* n = g_.add_nodes();
        n->set_op_type("Split");
        n->add_inputs(a.name);
        n->add_inputs(Constant({2}, v1::DT_INT64, {a.cols / 2, a.cols / 2}));
        v1::Attribute* axis = n->add_attributes();
        axis->set_name("axis");
        axis->set_i(1);
        for (int k = 0; k < 2; ++k) {
          const std::string out = Fresh();
          n->add_outputs(out);
          vals_.push_back({out, a.rows, a.cols / 2});
        }
        break;
      }
      case 7: {  // a view of the same bytes: Identity, Flatten or a Reshape to [rows, cols]
        const int kind = rng_() % 3;
        if (kind == 0) {
          Node("Identity", {a.name}, a.rows, a.cols);
        } else if (kind == 1) {
          Node("Flatten", {a.name}, a.rows, a.cols);
        } else {
          Node("Reshape", {a.name, Constant({2}, v1::DT_INT64, {-1, a.cols})}, a.rows, a.cols);
        }
        break;
      }
      case 8: {
        if (a.rows < 0) {
          Node("Sigmoid", {a.name}, a.rows, a.cols);
          return;
        }
        v1::Node* n = g_.mutable_nodes(Index(Node("Transpose", {a.name}, a.cols, a.rows)));
        v1::Attribute* perm = n->add_attributes();
        perm->set_name("perm");
        perm->mutable_ints()->add_values(1);
        perm->mutable_ints()->add_values(0);
        break;
      }
      case 9: {  // an If whose branches read outer values
        const Val b = Pick();
        if (b.rows != a.rows || b.cols != a.cols) {
          Node("Relu", {a.name}, a.rows, a.cols);
          return;
        }
        const std::string cond = Constant({}, v1::DT_BOOL);
        g_.mutable_initializers(g_.initializers_size() - 1)->set_raw_data(std::string(1, rng_() % 2));
        v1::Node* n = g_.mutable_nodes(Index(Node("If", {cond}, a.rows, a.cols)));
        for (const char* branch : {"then_branch", "else_branch"}) {
          v1::Attribute* attr = n->add_attributes();
          attr->set_name(branch);
          v1::Graph* body = attr->mutable_g();
          v1::Node* bn = body->add_nodes();
          bn->set_op_type(branch[0] == 't' ? "Add" : "Mul");
          bn->add_inputs(a.name);
          bn->add_inputs(b.name);
          bn->add_outputs(absl::StrCat(n->outputs(0), "_", branch));
          body->add_outputs()->set_name(bn->outputs(0));
        }
        break;
      }
      default: {
        static const char* const kUnary[] = {"Relu", "Sigmoid", "Neg"};
        Node(kUnary[rng_() % 3], {a.name}, a.rows, a.cols);
        break;
      }
    }
  }

  int Index(const std::string& output) {
    for (int i = g_.nodes_size() - 1; i >= 0; --i) {
      for (const std::string& o : g_.nodes(i).outputs()) {
        if (o == output) return i;
      }
    }
    return g_.nodes_size() - 1;
  }

  std::mt19937 rng_;
  bool symbolic_;
  v1::Graph g_;
  std::vector<Val> vals_;
  int next_ = 0;
};

}  // namespace

v1::Graph RandomPlanningGraph(uint32_t seed, int num_nodes, bool symbolic_rows) {
  return Builder(seed, symbolic_rows).Build(num_nodes);
}

std::string GraphText(const v1::Graph& graph) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(graph, &text);
  return text;
}

}  // namespace testing
}  // namespace graphopt
