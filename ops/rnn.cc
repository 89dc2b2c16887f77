// Builtin recurrent ops with ONNX semantics: RNN, GRU and LSTM.
#include <optional>
#include <string>
#include <vector>

#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// Output shapes of the recurrent ops (ONNX's RNN shape rule): with layout 0,
// Y = [seq_length, num_directions, batch, hidden] and the state outputs (Y_h, Y_c) =
// [num_directions, batch, hidden]; layout 1 puts batch first: Y = [batch, seq_length,
// num_directions, hidden], states = [batch, num_directions, hidden]. hidden_size comes from its
// attribute, else from R ([num_directions, gates * hidden, hidden]).
absl::Status RecurrentShapeFn(InferenceContext& ctx) {
  absl::StatusOr<std::string> direction = ctx.GetString("direction");
  if (!direction.ok()) return direction.status();
  int64_t num_directions = 1;
  if (*direction == "bidirectional") {
    num_directions = 2;
  } else if (*direction != "forward" && *direction != "reverse") {
    return ctx.Error("attribute 'direction' must be forward, reverse or bidirectional, got '",
                     *direction, "'");
  }
  absl::StatusOr<int64_t> layout = ctx.GetInt("layout", 0);
  if (!layout.ok()) return layout.status();
  if (*layout != 0 && *layout != 1) {
    return ctx.Error("attribute 'layout' must be 0 or 1, got ", *layout);
  }

  Dim seq_length, batch, hidden;
  if (std::optional<Dims> x = InputShape(ctx, 0)) {
    if (x->size() != 3) return ctx.Error("input X must be 3-D, got ", ShapeToString(x));
    seq_length = (*x)[*layout == 0 ? 0 : 1];
    batch = (*x)[*layout == 0 ? 1 : 0];
  }
  if (ctx.has_attr("hidden_size")) {
    absl::StatusOr<int64_t> h = ctx.GetInt("hidden_size");
    if (!h.ok()) return h.status();
    if (*h <= 0) return ctx.Error("attribute 'hidden_size' must be positive, got ", *h);
    hidden = Dim::Known(*h);
  } else if (std::optional<Dims> r = InputShape(ctx, 2); r && r->size() == 3) {
    hidden = (*r)[2];
  }
  const Dim dirs = Dim::Known(num_directions);
  if (ctx.has_output(0)) {
    ctx.set_output_shape(0, *layout == 0 ? Dims{seq_length, dirs, batch, hidden}
                                         : Dims{batch, seq_length, dirs, hidden});
  }
  for (int i = 1; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) continue;
    ctx.set_output_shape(i, *layout == 0 ? Dims{dirs, batch, hidden} : Dims{batch, dirs, hidden});
  }
  return absl::OkStatus();
}

// The inputs and attributes RNN, GRU and LSTM share.
OpBuilder Recurrent(absl::string_view name, absl::string_view doc) {
  OpBuilder b(name, doc);
  b.Input("X", "T", "[seq_length, batch, input_size] (layout 0)")
      .Input("W", "T", "[num_directions, gates * hidden_size, input_size]")
      .Input("R", "T", "[num_directions, gates * hidden_size, hidden_size]")
      .OptionalInput("B", "T", "[num_directions, 2 * gates * hidden_size]")
      .OptionalInput("sequence_lens", "T1", "[batch]")
      .OptionalInput("initial_h", "T", "[num_directions, batch, hidden_size]")
      .Attr("activation_alpha", v1::ATTR_FLOATS)
      .Attr("activation_beta", v1::ATTR_FLOATS)
      .Attr("activations", v1::ATTR_STRINGS)
      .Attr("clip", v1::ATTR_FLOAT)
      .StringAttr("direction", "forward", "forward, reverse or bidirectional")
      .Attr("hidden_size", v1::ATTR_INT)
      .IntAttr("layout", 0, "0: sequence first; 1: batch first")
      .Constraint("T", {v1::DT_FLOAT16, v1::DT_FLOAT32, v1::DT_FLOAT64})
      .Constraint("T1", {v1::DT_INT32})
      .Fusion(v1::FUSION_OPAQUE)
      .ShapeFn(RecurrentShapeFn);
  return b;
}

}  // namespace

void AddRnnOps(std::vector<OpDef>* ops) {
  ops->push_back(Recurrent("RNN", "Simple recurrent network (one gate, tanh by default).")
                     .OptionalOutput("Y", "T")
                     .OptionalOutput("Y_h", "T")
                     .Build());
  ops->push_back(Recurrent("GRU", "Gated recurrent unit (3 gates).")
                     .IntAttr("linear_before_reset", 0)
                     .OptionalOutput("Y", "T")
                     .OptionalOutput("Y_h", "T")
                     .Build());
  ops->push_back(Recurrent("LSTM", "Long short-term memory (4 gates, optional peepholes).")
                     .OptionalInput("initial_c", "T", "[num_directions, batch, hidden_size]")
                     .OptionalInput("P", "T", "peepholes, [num_directions, 3 * hidden_size]")
                     .IntAttr("input_forget", 0)
                     .OptionalOutput("Y", "T")
                     .OptionalOutput("Y_h", "T")
                     .OptionalOutput("Y_c", "T")
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
