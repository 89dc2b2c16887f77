#include "passes/decompose_rnn_pass.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/inference.h"
#include "graph/opset.h"
#include "passes/rnn_unroll.h"

namespace graphopt {
namespace {

using rnn_unroll::Activation;
using rnn_unroll::Cell;
using rnn_unroll::CellName;
using rnn_unroll::kCells;
using rnn_unroll::kNumCells;
using rnn_unroll::NumActivations;
using rnn_unroll::NumGates;
using rnn_unroll::Plan;
using rnn_unroll::Unroller;

// ONNX's activation names (case-insensitive, as the kernel reads them), taking alpha/beta from
// the lists at *ai / *bi when the function has them, its defaults otherwise.
bool ParseActivation(const std::string& name, const std::vector<float>& alphas,
                     const std::vector<float>& betas, size_t* ai, size_t* bi, Activation* out) {
  struct Spec {
    const char* name;
    Activation::Kind kind;
    bool has_alpha, has_beta;
    float alpha, beta;
  };
  static constexpr Spec kSpecs[] = {
      {"relu", Activation::kRelu, false, false, 0, 0},
      {"tanh", Activation::kTanh, false, false, 0, 0},
      {"sigmoid", Activation::kSigmoid, false, false, 0, 0},
      {"affine", Activation::kAffine, true, true, 1, 0},
      {"leakyrelu", Activation::kLeakyRelu, true, false, 0.01f, 0},
      {"thresholdedrelu", Activation::kThresholdedRelu, true, false, 1, 0},
      {"scaledtanh", Activation::kScaledTanh, true, true, 1, 1},
      {"hardsigmoid", Activation::kHardSigmoid, true, true, 0.2f, 0.5f},
      {"elu", Activation::kElu, true, false, 1, 0},
      {"softsign", Activation::kSoftsign, false, false, 0, 0},
      {"softplus", Activation::kSoftplus, false, false, 0, 0},
  };
  const std::string n = absl::AsciiStrToLower(name);
  for (const Spec& s : kSpecs) {
    if (n != s.name) continue;
    out->kind = s.kind;
    out->alpha = s.alpha;
    out->beta = s.beta;
    if (s.has_alpha && *ai < alphas.size()) out->alpha = alphas[(*ai)++];
    if (s.has_beta && *bi < betas.size()) out->beta = betas[(*bi)++];
    return true;
  }
  return false;
}

struct Options {
  bool cells[kNumCells] = {true, true, true};
  int64_t max_steps = kDefaultMaxRnnSteps;
};

const v1::Attribute* FindAttr(const Node& n, const char* name) {
  auto it = n.attributes.find(name);
  return it == n.attributes.end() ? nullptr : &it->second;
}

bool Present(const Node& n, int i) {
  return i < static_cast<int>(n.inputs.size()) && n.inputs[i].valid();
}

// The plan for `id`, nullopt with `*skip` saying why when the node is left as it is (a
// sequence length or hidden size not known statically, an element type without a kernel for
// the primitives), or INVALID_ARGUMENT naming the node for what cannot be unrolled faithfully.
absl::StatusOr<std::optional<Plan>> MakePlan(const Graph& g, NodeId id, Cell cell,
                                             const Options& options, std::string* skip) {
  const Node& n = g.node(id);
  const std::string label = g.NodeLabel(id);
  auto invalid = [&](auto&&... args) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": ", args...));
  };
  Plan p;
  p.node = id;
  p.cell = cell;
  p.prefix = n.name.empty() ? absl::StrCat(CellName(cell), "#", id.value()) : std::string(n.name);
  if (!Present(n, 0) || !Present(n, 1) || !Present(n, 2)) return invalid("X, W and R are required");
  const TensorType& x = g.value(n.inputs[0]).type;
  p.dtype = x.dtype;
  if (p.dtype != v1::DT_FLOAT32 && p.dtype != v1::DT_FLOAT64) {
    *skip = absl::StrCat("element type ", DataTypeName(p.dtype));
    return std::nullopt;
  }
  if (const v1::Attribute* a = FindAttr(n, "layout")) p.layout = a->i();
  if (p.layout != 0 && p.layout != 1) return invalid("attribute 'layout' must be 0 or 1");
  if (!x.shape || x.shape->size() != 3) {
    *skip = "X is not known to be 3-D";
    return std::nullopt;
  }
  const Dim& seq = (*x.shape)[p.layout == 0 ? 0 : 1];
  if (!seq.is_known()) {
    *skip = absl::StrCat("sequence length ", seq.ToString(), " not static");
    return std::nullopt;
  }
  p.seq = seq.size();
  if (p.seq == 0) {
    *skip = "empty sequence";
    return std::nullopt;
  }
  if (p.seq > options.max_steps) {
    return invalid("sequence length ", p.seq, " is over the ", options.max_steps,
                   " steps decompose_rnn may unroll (option max_steps)");
  }
  std::string direction = "forward";
  if (const v1::Attribute* a = FindAttr(n, "direction")) direction = a->s();
  if (direction == "bidirectional") {
    p.dirs = 2;
  } else if (direction == "reverse") {
    p.reverse_only = true;
  } else if (direction != "forward") {
    return invalid("attribute 'direction' is '", direction, "'");
  }
  const int64_t gates = NumGates(cell);
  const std::optional<Dims>& r = g.value(n.inputs[2]).type.shape;
  if (const v1::Attribute* a = FindAttr(n, "hidden_size")) {
    p.hidden = a->i();
  } else if (r && r->size() == 3 && (*r)[2].is_known()) {
    p.hidden = (*r)[2].size();
  } else {
    *skip = "hidden size not static";
    return std::nullopt;
  }
  if (p.hidden <= 0) return invalid("hidden size ", p.hidden, " is not positive");
  if (r && r->size() == 3) {
    const int64_t want[3] = {p.dirs, gates * p.hidden, p.hidden};
    for (int i = 0; i < 3; ++i) {
      if ((*r)[i].is_known() && (*r)[i].size() != want[i]) {
        return invalid("R is ", ShapeToString(r), ", [", want[0], ",", want[1], ",", want[2],
                       "] expected");
      }
    }
  }
  if (const v1::Attribute* a = FindAttr(n, "clip")) {
    p.clip = a->f();
    if (!(p.clip > 0)) return invalid("attribute 'clip' must be positive");
  }
  if (const v1::Attribute* a = FindAttr(n, "linear_before_reset")) {
    p.linear_before_reset = a->i() != 0;
  }
  if (const v1::Attribute* a = FindAttr(n, "input_forget")) p.input_forget = a->i() != 0;

  // sequence_lens changes nothing only when every entry is the full length; per-entry lengths
  // would need masking the unrolled steps, which is not done.
  if (Present(n, 4)) {
    const v1::Tensor* lens = ConstantTensorOf(g, n.inputs[4]);
    if (lens == nullptr) {
      return invalid("sequence_lens is not a constant; only sequence_lens equal to the sequence "
                     "length (", p.seq, ") everywhere can be unrolled");
    }
    absl::StatusOr<std::vector<int64_t>> v = TensorToInts(*lens);
    if (!v.ok()) return invalid("sequence_lens: ", v.status().message());
    for (size_t i = 0; i < v->size(); ++i) {
      if ((*v)[i] != p.seq) {
        return invalid("sequence_lens[", i, "] = ", (*v)[i], " differs from the sequence length ",
                       p.seq, "; only full-length sequences can be unrolled");
      }
    }
  }

  // Activations: defaults, a list for one direction used for both, alpha/beta consumed in
  // order (the kernel's reading).
  const int per_dir = NumActivations(cell);
  std::vector<std::string> names;
  std::vector<float> alphas, betas;
  if (const v1::Attribute* a = FindAttr(n, "activations")) {
    names.assign(a->strings().values().begin(), a->strings().values().end());
  }
  if (const v1::Attribute* a = FindAttr(n, "activation_alpha")) {
    alphas.assign(a->floats().values().begin(), a->floats().values().end());
  }
  if (const v1::Attribute* a = FindAttr(n, "activation_beta")) {
    betas.assign(a->floats().values().begin(), a->floats().values().end());
  }
  if (names.empty()) {
    for (int d = 0; d < p.dirs; ++d) {
      if (cell != Cell::kRnn) names.push_back("Sigmoid");
      names.push_back("Tanh");
      if (cell == Cell::kLstm) names.push_back("Tanh");
    }
  } else if (static_cast<int>(names.size()) == per_dir && p.dirs == 2) {
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (static_cast<int>(names.size()) != per_dir * p.dirs) {
    return invalid("attribute 'activations' has ", names.size(), " entries, ", per_dir * p.dirs,
                   " expected");
  }
  size_t ai = 0, bi = 0;
  for (const std::string& name : names) {
    Activation act;
    if (!ParseActivation(name, alphas, betas, &ai, &bi, &act)) {
      return invalid("activation '", name, "' is not supported");
    }
    p.activations.push_back(act);
  }
  return p;
}

class DecomposeRnnPass : public Pass {
 public:
  explicit DecomposeRnnPass(Options options) : options_(options) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    std::vector<OpKindId> kinds;
    for (Cell c : kCells) {
      if (options_.cells[static_cast<int>(c)]) kinds.push_back(graph.FindOpKind("", CellName(c)));
    }
    const std::vector<NodeId> nodes = graph.LiveNodesOfKinds(kinds);
    // Every node is checked before the first edit, so that a refusal leaves the graph whole.
    std::vector<Plan> plans;
    std::vector<std::string> skipped;
    for (NodeId id : nodes) {
      const Node& n = graph.node(id);
      if (!IsDefaultDomain(n.domain)) continue;
      Cell cell = Cell::kRnn;
      for (Cell c : kCells) {
        if (n.op_type == CellName(c)) cell = c;
      }
      std::string skip;
      absl::StatusOr<std::optional<Plan>> plan = MakePlan(graph, id, cell, options_, &skip);
      if (!plan.ok()) return plan.status();
      if (*plan) {
        plans.push_back(**std::move(plan));
      } else {
        skipped.push_back(absl::StrCat(graph.NodeLabel(id), " (", skip, ")"));
      }
    }
    DimsValueTable dims = InitialDimsValues(graph);
    Unroller unroller(graph, *context.ops, &dims);
    int64_t count[kNumCells] = {0, 0, 0};
    int64_t added[kNumCells] = {0, 0, 0};
    int64_t steps[kNumCells] = {0, 0, 0};
    for (const Plan& plan : plans) {
      if (absl::Status s = context.CheckStop(graph.NodeLabel(plan.node)); !s.ok()) return s;
      absl::StatusOr<int64_t> n = unroller.Unroll(plan);
      if (!n.ok()) return n.status();
      const int k = static_cast<int>(plan.cell);
      ++count[k];
      added[k] += *n;
      steps[k] += plan.seq * plan.dirs;
    }
    std::vector<std::string> parts;
    for (Cell c : kCells) {
      const int k = static_cast<int>(c);
      if (count[k] == 0) continue;
      parts.push_back(absl::StrCat(count[k], " ", CellName(c), " node", count[k] == 1 ? "" : "s",
                                   " (", steps[k], " steps) into ", added[k], " nodes"));
    }
    if (!parts.empty()) context.Note(absl::StrCat("unrolled ", absl::StrJoin(parts, ", ")));
    if (!skipped.empty()) {
      context.Note(absl::StrCat("left ", skipped.size(), " recurrent node",
                                skipped.size() == 1 ? "" : "s", " as they are: ",
                                absl::StrJoin(skipped, ", ")));
    }
    if (plans.empty() && skipped.empty()) context.Note("no recurrent node to unroll");
    return !plans.empty();
  }

 private:
  Options options_;
};

absl::StatusOr<Options> ParseOptions(const PassOptions& options) {
  Options o;
  if (auto it = options.find("ops"); it != options.end()) {
    for (bool& b : o.cells) b = false;
    bool any = false;
    for (absl::string_view part : absl::StrSplit(it->second, absl::ByAnyChar(";,"))) {
      part = absl::StripAsciiWhitespace(part);
      if (part.empty()) continue;
      bool known = false;
      for (Cell c : kCells) {
        if (part == CellName(c)) {
          o.cells[static_cast<int>(c)] = true;
          known = true;
        }
      }
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat("option 'ops': '", part, "' is not LSTM, GRU or RNN"));
      }
      any = true;
    }
    if (!any) return absl::InvalidArgumentError("option 'ops' names no op");
  }
  if (auto it = options.find("max_steps"); it != options.end()) {
    if (!absl::SimpleAtoi(it->second, &o.max_steps) || o.max_steps <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("option 'max_steps': '", it->second, "' is not a positive count"));
    }
  }
  return o;
}

}  // namespace

// Replaces ONNX RNN, GRU and LSTM nodes whose sequence length is static by their unrolled
// computation in differentiable primitives (Split/Squeeze of the time steps and weights,
// Transpose, MatMul, Add, Mul, Sub, the activations, Clip, Unsqueeze/Concat to rebuild Y, Y_h
// and Y_c), computing what runtime/kernels/rnn.cc computes: every direction, activation (with
// alpha/beta), clip, layout, GRU's linear_before_reset, LSTM's peepholes and input_forget,
// absent B, initial_h and initial_c (zero states drop their terms instead of materializing
// zeros, so a symbolic batch needs no shape arithmetic). The gradient pass then differentiates
// recurrent ops through these primitives.
//
// Nodes and values are named "<node>/t<k>/..." ("<node>/t<k>/d<dir>/..." when bidirectional),
// k the time index; Squeeze, Unsqueeze, Split and Clip take the graph's opset's forms. Work
// and added nodes are linear in the unrolled steps. A node whose sequence length, hidden size
// or rank is not static, or of another element type than float32/float64, is left as it is
// (the report names it). INVALID_ARGUMENT naming the node for a sequence longer than
// max_steps, and for sequence_lens that is not a constant equal to the sequence length
// everywhere (per-entry lengths would need masking).
PassInfo DecomposeRnnPassInfo() {
  PassInfo info;
  info.name = "decompose_rnn";
  info.description =
      "Unrolls RNN, GRU and LSTM nodes with a static sequence length into differentiable "
      "primitives (MatMul, Add, Mul, the activations, Split/Squeeze/Unsqueeze/Concat), so "
      "that the gradient pass can differentiate them.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.provides = {};
  info.preserves = {Analysis::kTypes, Analysis::kShapes};
  info.options = {
      {"ops", "which recurrent ops to unroll: LSTM, GRU, RNN separated by ';' (default all)"},
      {"max_steps", "longest sequence to unroll; longer ones are refused"},
  };
  info.budget_options["max_steps"] = {kDefaultMaxRnnSteps, nullptr};
  info.min_opt_level = 0;
  info.factory = [](const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    absl::StatusOr<Options> o = ParseOptions(options);
    if (!o.ok()) return o.status();
    return std::unique_ptr<Pass>(std::make_unique<DecomposeRnnPass>(*o));
  };
  return info;
}

}  // namespace graphopt
