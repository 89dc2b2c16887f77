// Control-flow builtin operators with ONNX semantics: If, Loop and Scan. Their bodies are graph
// attributes; the rules here read only what the bodies declare (their inputs' and outputs'
// types, and Constant outputs), never run inference inside them: an output whose body says
// nothing stays unknown.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// The graph attribute `name` (which the verifier makes sure is a graph), or an error.
absl::StatusOr<const v1::Graph*> Body(const InferenceContext& ctx, absl::string_view name) {
  const v1::Attribute* a = ctx.attr(name);
  if (a == nullptr) return ctx.Error("missing required attribute '", name, "'");
  if (a->value_case() != v1::Attribute::kG) {
    return ctx.Error("attribute '", name, "' must be a graph, got ", AttributeKindName(*a));
  }
  return &a->g();
}

// The element type of body output i that no type declares but that passes a body input on
// unchanged (through Identity nodes): `input_dtype(k)` for body input k. DT_UNDEFINED otherwise.
// Iterative; at most one step per body node.
v1::DataType ForwardedInputDType(const v1::Graph& body, int i,
                                 const std::function<v1::DataType(int)>& input_dtype) {
  absl::flat_hash_map<absl::string_view, const v1::Node*> producer;
  for (const v1::Node& n : body.nodes()) {
    for (const std::string& o : n.outputs()) producer[o] = &n;
  }
  absl::string_view name = body.outputs(i).name();
  for (int steps = 0; steps <= body.nodes_size(); ++steps) {
    for (int k = 0; k < body.inputs_size(); ++k) {
      if (body.inputs(k).name() == name) {
        const v1::DataType declared = body.inputs(k).type().dtype();
        return declared != v1::DT_UNDEFINED ? declared : input_dtype(k);
      }
    }
    auto it = producer.find(name);
    if (it == producer.end() || it->second->op_type() != "Identity" ||
        !it->second->domain().empty() || it->second->inputs_size() != 1) {
      break;
    }
    name = it->second->inputs(0);
  }
  return v1::DT_UNDEFINED;
}

// What body output i declares: its ValueInfo type, else (for a Constant node's output) the
// constant's type.
TensorType DeclaredOutput(const v1::Graph& body, int i) {
  const v1::ValueInfo& out = body.outputs(i);
  TensorType t = TensorTypeFromProto(out.type());
  if (t.dtype != v1::DT_UNDEFINED || t.shape) return t;
  for (const v1::Node& n : body.nodes()) {
    if (n.op_type() != "Constant" || !n.domain().empty() || n.outputs_size() != 1 ||
        n.outputs(0) != out.name()) {
      continue;
    }
    for (const v1::Attribute& a : n.attributes()) {
      if (a.name() == "value" && a.value_case() == v1::Attribute::kT) {
        t.dtype = a.t().dtype();
        t.shape = ShapeFromDimsList(a.t());
      }
    }
  }
  return t;
}

// Whether a body declares anything of a value's type (else its kind is not known either).
bool Declares(const TensorType& t) {
  return t.dtype != v1::DT_UNDEFINED || t.shape.has_value() || !t.is_tensor();
}

absl::StatusOr<std::pair<const v1::Graph*, const v1::Graph*>> Branches(
    const InferenceContext& ctx) {
  absl::StatusOr<const v1::Graph*> then_branch = Body(ctx, "then_branch");
  if (!then_branch.ok()) return then_branch.status();
  absl::StatusOr<const v1::Graph*> else_branch = Body(ctx, "else_branch");
  if (!else_branch.ok()) return else_branch.status();
  for (const v1::Graph* g : {*then_branch, *else_branch}) {
    if (g->outputs_size() != ctx.num_outputs()) {
      return ctx.Error("attribute '", g == *then_branch ? "then_branch" : "else_branch",
                       "' has ", g->outputs_size(), " outputs but the node has ",
                       ctx.num_outputs());
    }
  }
  return std::make_pair(*then_branch, *else_branch);
}

// If: each output has the element type the branches declare (they must agree) and the dims
// both branches declare alike.
absl::Status IfType(InferenceContext& ctx) {
  absl::StatusOr<std::pair<const v1::Graph*, const v1::Graph*>> b = Branches(ctx);
  if (!b.ok()) return b.status();
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const TensorType then_type = DeclaredOutput(*b->first, i);
    const TensorType else_type = DeclaredOutput(*b->second, i);
    const v1::DataType t = then_type.dtype;
    const v1::DataType e = else_type.dtype;
    if (t != v1::DT_UNDEFINED && e != v1::DT_UNDEFINED && t != e) {
      return ctx.Error("output ", i, " is ", DataTypeName(t), " in then_branch but ",
                       DataTypeName(e), " in else_branch");
    }
    if (then_type.kind != else_type.kind && Declares(then_type) && Declares(else_type)) {
      return ctx.Error("output ", i, " is a ", ValueKindName(then_type.kind),
                       " in then_branch but a ", ValueKindName(else_type.kind),
                       " in else_branch");
    }
    ctx.set_output_dtype(i, t != v1::DT_UNDEFINED ? t : e);
    ctx.set_output_kind(i, Declares(then_type) ? then_type.kind : else_type.kind);
  }
  return absl::OkStatus();
}

absl::Status IfShape(InferenceContext& ctx) {
  if (absl::Status s = CheckScalarInput(ctx, 0, "cond", true); !s.ok()) return s;
  absl::StatusOr<std::pair<const v1::Graph*, const v1::Graph*>> b = Branches(ctx);
  if (!b.ok()) return b.status();
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    ctx.set_output_shape(i, UnionShapes(DeclaredOutput(*b->first, i).shape,
                                        DeclaredOutput(*b->second, i).shape));
  }
  return absl::OkStatus();
}

// Loop's body takes (iteration, cond, carried...) and gives (cond, carried..., scanned...); the
// node's outputs are the final carried values and the scanned values stacked per iteration.
absl::StatusOr<const v1::Graph*> LoopBody(const InferenceContext& ctx, int* carried) {
  absl::StatusOr<const v1::Graph*> body = Body(ctx, "body");
  if (!body.ok()) return body.status();
  *carried = ctx.num_inputs() - 2;
  if (*carried < 0) return ctx.Error("inputs M and cond must be given (either may be empty)");
  if ((*body)->inputs_size() != *carried + 2) {
    return ctx.Error("attribute 'body' takes ", (*body)->inputs_size(),
                     " inputs but the node carries ", *carried,
                     " values (expected iteration number, cond and those)");
  }
  if ((*body)->outputs_size() != ctx.num_outputs() + 1 || ctx.num_outputs() < *carried) {
    return ctx.Error("attribute 'body' gives ", (*body)->outputs_size(), " outputs but the node ",
                     "has ", ctx.num_outputs(), " outputs and carries ", *carried,
                     " values (expected cond, the carried values and the scan outputs)");
  }
  return body;
}

absl::Status LoopType(InferenceContext& ctx) {
  int carried = 0;
  absl::StatusOr<const v1::Graph*> body = LoopBody(ctx, &carried);
  if (!body.ok()) return body.status();
  // Body inputs: the iteration number, cond, then the carried values.
  auto input_dtype = [&](int k) {
    return k == 0 ? v1::DT_INT64 : k == 1 ? v1::DT_BOOL : ctx.input_type(k).dtype;
  };
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const TensorType declared_type = DeclaredOutput(**body, i + 1);
    // A carried value's kind: the body's when it declares one (an optional carried in may
    // come out as its element), else the initial value's.
    if (i < carried) {
      ctx.set_output_kind(i, Declares(declared_type) ? declared_type.kind
                                                     : ctx.input_type(i + 2).kind);
    }
    v1::DataType declared = declared_type.dtype;
    if (declared == v1::DT_UNDEFINED) declared = ForwardedInputDType(**body, i + 1, input_dtype);
    const v1::DataType initial = i < carried ? ctx.input_type(i + 2).dtype : v1::DT_UNDEFINED;
    if (initial != v1::DT_UNDEFINED && declared != v1::DT_UNDEFINED && initial != declared) {
      return ctx.Error("carried value ", i, " is ", DataTypeName(initial), " initially but ",
                       DataTypeName(declared), " after the body");
    }
    ctx.set_output_dtype(i, initial != v1::DT_UNDEFINED ? initial : declared);
  }
  return absl::OkStatus();
}

absl::Status LoopShape(InferenceContext& ctx) {
  int carried = 0;
  absl::StatusOr<const v1::Graph*> body = LoopBody(ctx, &carried);
  if (!body.ok()) return body.status();
  if (absl::Status s = CheckScalarInput(ctx, 0, "M", true); !s.ok()) return s;
  if (absl::Status s = CheckScalarInput(ctx, 1, "cond", true); !s.ok()) return s;
  // Without cond the loop runs exactly max(M, 0) times.
  Dim trips = Dim::Unknown();
  if (std::optional<int64_t> m = ScalarInputInt(ctx, 0); m && !ctx.has_input(1)) {
    trips = Dim::Known(*m > 0 ? *m : 0);
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const std::optional<Dims> declared = DeclaredOutput(**body, i + 1).shape;
    if (i < carried) {
      // The initial value when the body never runs, the body's otherwise.
      ctx.set_output_shape(i, UnionShapes(InputShape(ctx, i + 2), declared));
    } else if (declared) {
      Dims out = {trips};
      out.insert(out.end(), declared->begin(), declared->end());
      ctx.set_output_shape(i, std::move(out));
    } else {
      ctx.set_output_shape(i, std::nullopt);
    }
  }
  return absl::OkStatus();
}

// Scan's layout: from opset 9 the inputs are the N state values then the scan inputs; opset 8
// puts an optional sequence_lens first and gives every input and output a batch dim in front.
struct ScanLayout {
  const v1::Graph* body = nullptr;
  bool v8 = false;
  int first = 0;     // first state input
  int states = 0;    // N
  int scanned = 0;   // scan inputs
  std::vector<int64_t> input_axes, output_axes;
};

absl::StatusOr<ScanLayout> ReadScan(const InferenceContext& ctx) {
  ScanLayout l;
  absl::StatusOr<const v1::Graph*> body = Body(ctx, "body");
  if (!body.ok()) return body.status();
  l.body = *body;
  l.v8 = OpsetBefore(ctx, 9);
  l.first = l.v8 ? 1 : 0;
  absl::StatusOr<int64_t> n = ctx.GetInt("num_scan_inputs");
  if (!n.ok()) return n.status();
  const int values = ctx.num_inputs() - l.first;
  if (*n < 1 || *n > values) {
    return ctx.Error("attribute 'num_scan_inputs' ", *n, " must be in [1, ", values, "]");
  }
  for (int i = l.first; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.Error("input ", i, " (a state or scan input) is missing");
  }
  l.scanned = static_cast<int>(*n);
  l.states = values - l.scanned;
  const int scan_outputs = ctx.num_outputs() - l.states;
  if (scan_outputs < 0 || l.body->inputs_size() != values ||
      l.body->outputs_size() != ctx.num_outputs()) {
    return ctx.Error("attribute 'body' takes ", l.body->inputs_size(), " inputs and gives ",
                     l.body->outputs_size(), " outputs, but the node has ", values,
                     " state and scan inputs (", l.states, " states) and ", ctx.num_outputs(),
                     " outputs");
  }
  absl::StatusOr<std::vector<int64_t>> in_axes =
      ListAttr(ctx, "scan_input_axes", static_cast<size_t>(l.scanned), 0);
  if (!in_axes.ok()) return in_axes.status();
  absl::StatusOr<std::vector<int64_t>> out_axes =
      ListAttr(ctx, "scan_output_axes", static_cast<size_t>(scan_outputs), 0);
  if (!out_axes.ok()) return out_axes.status();
  l.input_axes = *std::move(in_axes);
  l.output_axes = *std::move(out_axes);
  return l;
}

absl::Status ScanType(InferenceContext& ctx) {
  absl::StatusOr<ScanLayout> l = ReadScan(ctx);
  if (!l.ok()) return l.status();
  // Body inputs are the states and the scan inputs' slices, of the node inputs' types.
  auto input_dtype = [&](int k) { return ctx.input_type(l->first + k).dtype; };
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    v1::DataType declared = DeclaredOutput(*l->body, i).dtype;
    if (declared == v1::DT_UNDEFINED) declared = ForwardedInputDType(*l->body, i, input_dtype);
    const v1::DataType initial =
        i < l->states ? ctx.input_type(l->first + i).dtype : v1::DT_UNDEFINED;
    if (initial != v1::DT_UNDEFINED && declared != v1::DT_UNDEFINED && initial != declared) {
      return ctx.Error("state ", i, " is ", DataTypeName(initial), " initially but ",
                       DataTypeName(declared), " after the body");
    }
    ctx.set_output_dtype(i, initial != v1::DT_UNDEFINED ? initial : declared);
  }
  return absl::OkStatus();
}

// States keep their shapes; a scan output stacks the body's per-iteration value along its
// axis (opset 8: [batch, sequence, ...]), the sequence as long as the scan inputs' axes.
absl::Status ScanShape(InferenceContext& ctx) {
  absl::StatusOr<ScanLayout> l = ReadScan(ctx);
  if (!l.ok()) return l.status();
  Dim sequence = Dim::Unknown();
  Dim batch = Dim::Unknown();
  bool first_scan = true;
  for (int k = 0; k < l->scanned; ++k) {
    const int input = l->first + l->states + k;
    const std::optional<Dims> s = InputShape(ctx, input);
    if (!s) continue;
    int64_t axis = 1;
    if (!l->v8) {
      absl::StatusOr<int64_t> a = NormalizeAxis(l->input_axes[k], static_cast<int64_t>(s->size()),
                                                "attribute 'scan_input_axes'");
      if (!a.ok()) return NodeError(ctx, a.status());
      axis = *a;
    } else if (s->size() < 2) {
      return ctx.Error("scan input ", input, " ", ShapeToString(s),
                       " must have batch and sequence dims");
    }
    if (l->v8) batch = first_scan ? (*s)[0] : (Dim::SameSize(batch, (*s)[0]) ? batch : Dim());
    sequence = first_scan ? (*s)[axis] : (Dim::SameSize(sequence, (*s)[axis]) ? sequence : Dim());
    first_scan = false;
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const std::optional<Dims> declared = DeclaredOutput(*l->body, i).shape;
    if (i < l->states) {
      // A state keeps its shape from iteration to iteration: the initial value's, which the
      // body's output (with a batch dim in front at opset 8) must match.
      std::optional<Dims> state = InputShape(ctx, l->first + i);
      if (state && declared && state->size() == declared->size() + (l->v8 ? 1 : 0)) {
        for (size_t k = 0; k < declared->size(); ++k) {
          Dim& d = (*state)[k + (l->v8 ? 1 : 0)];
          absl::StatusOr<Dim> merged = MergeEqualDims(d, (*declared)[k]);
          if (!merged.ok()) {
            return ctx.Error("state ", i, " ", ShapeToString(InputShape(ctx, l->first + i)),
                             " does not match the body's output ", ShapeToString(declared));
          }
          d = *std::move(merged);
        }
      }
      ctx.set_output_shape(i, std::move(state));
      continue;
    }
    if (!declared) {
      ctx.set_output_shape(i, std::nullopt);
      continue;
    }
    Dims out = *declared;
    if (l->v8) {
      out.insert(out.begin(), {batch, sequence});
    } else {
      absl::StatusOr<int64_t> a =
          NormalizeAxis(l->output_axes[i - l->states], static_cast<int64_t>(out.size()) + 1,
                        "attribute 'scan_output_axes'");
      if (!a.ok()) return NodeError(ctx, a.status());
      out.insert(out.begin() + *a, sequence);
    }
    ctx.set_output_shape(i, std::move(out));
  }
  return absl::OkStatus();
}

}  // namespace

void AddControlFlowOps(std::vector<OpDef>* ops) {
  ops->push_back(OpBuilder("If", "Runs then_branch or else_branch by the boolean cond; the "
                                 "outputs are the branch's.")
                     .Input("cond", "B")
                     .VariadicOutput("outputs", "", 1, "Types from the branches.")
                     .RequiredAttr("then_branch", v1::ATTR_GRAPH)
                     .RequiredAttr("else_branch", v1::ATTR_GRAPH)
                     .Constraint("B", {v1::DT_BOOL})
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(IfShape)
                     .TypeFn(IfType)
                     .Build());
  ops->push_back(OpBuilder("Loop", "Runs 'body' up to M times while cond holds, carrying "
                                   "values and stacking scan outputs.")
                     .OptionalInput("M", "I", "Trip count (int64 scalar).")
                     .OptionalInput("cond", "B", "Initial condition (bool scalar).")
                     .VariadicInput("v_initial", "", 0, "Initial carried values.")
                     .VariadicOutput("v_final_and_scan_outputs", "", 1)
                     .RequiredAttr("body", v1::ATTR_GRAPH)
                     .Constraint("I", {v1::DT_INT64})
                     .Constraint("B", {v1::DT_BOOL})
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(LoopShape)
                     .TypeFn(LoopType)
                     .Build());
  ops->push_back(OpBuilder("Scan", "Runs 'body' over slices of the scan inputs, carrying state "
                                   "values and stacking scan outputs.")
                     .OptionalInput("sequence_lens", "",
                                    "Opset 8 only; from opset 9 the first state or scan input.")
                     .VariadicInput("initial_state_and_scan_inputs", "", 0)
                     .VariadicOutput("final_state_and_scan_outputs", "", 1)
                     .RequiredAttr("body", v1::ATTR_GRAPH)
                     .RequiredAttr("num_scan_inputs", v1::ATTR_INT)
                     .Attr("directions", v1::ATTR_INTS, "Opset 8 only.")
                     .Attr("scan_input_axes", v1::ATTR_INTS)
                     .Attr("scan_input_directions", v1::ATTR_INTS)
                     .Attr("scan_output_axes", v1::ATTR_INTS)
                     .Attr("scan_output_directions", v1::ATTR_INTS)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ScanShape)
                     .TypeFn(ScanType)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
