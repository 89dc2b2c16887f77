// The channels-last ops of ops/layout_ops.h: NhwcConv and the NHWC pools. Their shape rules
// are the ONNX ops' rules seen through a transposition: input X is presented to the ONNX rule
// as [N, C, spatial...], and the rule's output [N, M, spatial...] is recorded as
// [N, spatial..., M].
#include <optional>
#include <utility>
#include <vector>

#include "ops/builtin_ops_internal.h"
#include "ops/layout_ops.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// [N, spatial..., C] -> [N, C, spatial...], or back; shapes of rank < 2 are left alone.
std::optional<Dims> ToChannelsFirst(std::optional<Dims> s) {
  if (!s || s->size() < 2) return s;
  Dims out = {(*s)[0], s->back()};
  out.insert(out.end(), s->begin() + 1, s->end() - 1);
  return out;
}
std::optional<Dims> ToChannelsLast(std::optional<Dims> s) {
  if (!s || s->size() < 2) return s;
  Dims out = {(*s)[0]};
  out.insert(out.end(), s->begin() + 2, s->end());
  out.push_back((*s)[1]);
  return out;
}

// `inner` as the ONNX op's rule should see it: input 0 and every output channels-first.
class ChannelsFirstView : public InferenceContext {
 public:
  explicit ChannelsFirstView(InferenceContext& inner) : inner_(inner) {
    if (inner.has_input(0)) {
      x_ = inner.input_type(0);
      x_.shape = ToChannelsFirst(x_.shape);
    }
  }
  const Node& node() const override { return inner_.node(); }
  const OpDef& op() const override { return inner_.op(); }
  std::string NodeLabel() const override { return inner_.NodeLabel(); }
  int64_t opset_version() const override { return inner_.opset_version(); }
  const TensorType& input_type(int i) const override {
    return i == 0 ? x_ : inner_.input_type(i);
  }
  const v1::Tensor* input_constant(int i) const override { return inner_.input_constant(i); }
  const Dims* input_dims_value(int i) const override { return inner_.input_dims_value(i); }
  const v1::Attribute* attr(absl::string_view name) const override { return inner_.attr(name); }
  v1::DataType output_dtype(int i) const override { return inner_.output_dtype(i); }
  void set_output_dtype(int i, v1::DataType dtype) override { inner_.set_output_dtype(i, dtype); }
  void set_output_shape(int i, std::optional<Dims> shape) override {
    inner_.set_output_shape(i, ToChannelsLast(std::move(shape)));
  }
  void set_output_dims_value(int i, Dims value) override {
    inner_.set_output_dims_value(i, std::move(value));
  }

 private:
  InferenceContext& inner_;
  TensorType x_;
};

absl::Status NhwcConvShapeFn(InferenceContext& ctx) {
  ChannelsFirstView view(ctx);
  return ConvShapeAt(view, 0, 1, 2);
}

absl::Status NhwcPoolShapeFn(InferenceContext& ctx) {
  ChannelsFirstView view(ctx);
  return PoolShapeFn(view);
}

absl::Status NhwcGlobalPoolShapeFn(InferenceContext& ctx) {
  ChannelsFirstView view(ctx);
  return GlobalPoolShapeFn(view);
}

OpDef InGraphoptDomain(OpDef def) {
  def.descriptor.set_domain(kLayoutDomain);
  return def;
}

}  // namespace

void AddLayoutOps(std::vector<OpDef>* ops) {
  const DTypes f32 = {v1::DT_FLOAT32};
  ops->push_back(InGraphoptDomain(
      WindowAttrs(OpBuilder(kNhwcConvOp,
                            "Conv on channels-last activations: X [N, spatial..., C], "
                            "Y [N, spatial..., M]; W [M, C/group, k...] and B [M] as Conv's."),
                  false)
          .Input("X", "T")
          .Input("W", "T")
          .OptionalInput("B", "T")
          .Output("Y", "T")
          .IntAttr("group", 1)
          .IntAttr("winograd", 0,
                   "1: compute with Winograd's algorithm where the runtime has it for the "
                   "shapes (3x3, stride 1; rounds differently from a direct convolution: "
                   "within 1e-5 of the largest output); 0: directly.")
          .Constraint("T", f32)
          .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
          .ShapeFn(NhwcConvShapeFn)
          .Build()));
  ops->push_back(InGraphoptDomain(
      WindowAttrs(OpBuilder(kNhwcMaxPoolOp,
                            "MaxPool on channels-last activations: X and Y [N, spatial..., C]; "
                            "no Indices output."),
                  true)
          .Input("X", "T")
          .Output("Y", "T")
          .IntAttr("ceil_mode", 0)
          .Constraint("T", f32)
          .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
          .ShapeFn(NhwcPoolShapeFn)
          .Build()));
  ops->push_back(InGraphoptDomain(
      WindowAttrs(OpBuilder(kNhwcAveragePoolOp,
                            "AveragePool on channels-last activations: X and Y "
                            "[N, spatial..., C]."),
                  true)
          .Input("X", "T")
          .Output("Y", "T")
          .IntAttr("ceil_mode", 0)
          .IntAttr("count_include_pad", 0)
          .Constraint("T", f32)
          .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
          .ShapeFn(NhwcPoolShapeFn)
          .Build()));
  for (const char* name : {kNhwcGlobalAveragePoolOp, kNhwcGlobalMaxPoolOp}) {
    ops->push_back(InGraphoptDomain(
        OpBuilder(name, "GlobalAveragePool or GlobalMaxPool on channels-last activations: X "
                        "[N, spatial..., C], Y [N, 1..., C].")
            .Input("X", "T")
            .Output("Y", "T")
            .Constraint("T", f32)
            .Fusion(v1::FUSION_REDUCTION)
            .ShapeFn(NhwcGlobalPoolShapeFn)
            .Build()));
  }
}

}  // namespace builtin_internal
}  // namespace graphopt
