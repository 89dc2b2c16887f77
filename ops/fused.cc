// The FusedGroup op of fuse_ops (ops/fused_group.h).
#include <optional>
#include <vector>

#include "ops/builtin_ops_internal.h"
#include "ops/fused_group.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// The body's declared outputs, or INVALID_ARGUMENT when the attribute is missing or its outputs
// do not match the node's.
absl::StatusOr<const v1::Graph*> FusedBody(const InferenceContext& ctx) {
  const v1::Attribute* body = ctx.attr(kFusedGroupBody);
  if (body == nullptr || body->value_case() != v1::Attribute::kG) {
    return ctx.Error("graph attribute '", kFusedGroupBody, "' is required");
  }
  if (body->g().outputs_size() != ctx.num_outputs()) {
    return ctx.Error("the body has ", body->g().outputs_size(), " outputs, the node ",
                     ctx.num_outputs());
  }
  if (body->g().inputs_size() != ctx.num_inputs()) {
    return ctx.Error("the body has ", body->g().inputs_size(), " inputs, the node ",
                     ctx.num_inputs());
  }
  return &body->g();
}

// Output i has the type the body declares for its output i (fuse_ops records the types of the
// values the group replaced; their shapes do not depend on anything the body does not show).
absl::Status FusedGroupShape(InferenceContext& ctx) {
  absl::StatusOr<const v1::Graph*> body = FusedBody(ctx);
  if (!body.ok()) return body.status();
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const v1::ValueInfo& out = (*body)->outputs(i);
    if (out.has_type() && out.type().has_shape()) {
      ctx.set_output_shape(i, ShapeFromProto(out.type().shape()));
    } else {
      ctx.set_output_shape(i, std::nullopt);
    }
  }
  return absl::OkStatus();
}

absl::Status FusedGroupType(InferenceContext& ctx) {
  absl::StatusOr<const v1::Graph*> body = FusedBody(ctx);
  if (!body.ok()) return body.status();
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    ctx.set_output_dtype(i, (*body)->outputs(i).type().dtype());
  }
  return absl::OkStatus();
}

}  // namespace

void AddFusedOps(std::vector<OpDef>* ops) {
  OpDef def =
      OpBuilder(kFusedGroupOp,
                "A group of nodes fused by fuse_ops, run as one kernel: the graph attribute "
                "'body' holds them, its inputs and outputs are the node's by position.")
          .VariadicInput("inputs", "", 1, "The group's external inputs.")
          .VariadicOutput("outputs", "", 1, "Values of the group used outside it.")
          .RequiredAttr(kFusedGroupBody, v1::ATTR_GRAPH, "The fused nodes.")
          .Attr(kFusedGroupPattern, v1::ATTR_STRING,
                "What fuse_ops recognised (conv_epilogue, matmul_epilogue, gelu, layer_norm, "
                "...): a hint, the body is authoritative.")
          .Attr(kFusedGroupInPlace, v1::ATTR_INTS,
                "Pairs (input index, output index): the output may take over the input's "
                "storage when the input dies at this node (as a descriptor's in-place pairs).")
          .Fusion(v1::FUSION_OPAQUE)
          .ShapeFn(FusedGroupShape)
          .TypeFn(FusedGroupType)
          .Build();
  def.descriptor.set_domain(kFusedGroupDomain);
  ops->push_back(std::move(def));
}

}  // namespace builtin_internal
}  // namespace graphopt
