#ifndef GRAPHOPT_OPS_LAYOUT_OPS_H_
#define GRAPHOPT_OPS_LAYOUT_OPS_H_

// The channels-last ops that the channels_last pass puts in place of Conv and the pooling ops
// (domain graphopt). Each has the attributes and semantics of its ONNX op, except that its
// activations X and Y are laid out [N, spatial..., C] instead of [N, C, spatial...]; a
// convolution's W and B keep ONNX's layout ([M, C/group, k...] and [M]).

namespace graphopt {

inline constexpr char kLayoutDomain[] = "graphopt";
inline constexpr char kNhwcConvOp[] = "NhwcConv";
inline constexpr char kNhwcMaxPoolOp[] = "NhwcMaxPool";
inline constexpr char kNhwcAveragePoolOp[] = "NhwcAveragePool";
inline constexpr char kNhwcGlobalAveragePoolOp[] = "NhwcGlobalAveragePool";
inline constexpr char kNhwcGlobalMaxPoolOp[] = "NhwcGlobalMaxPool";

}  // namespace graphopt

#endif  // GRAPHOPT_OPS_LAYOUT_OPS_H_
