#ifndef GRAPHOPT_OPS_NN_GRAD_OPS_H_
#define GRAPHOPT_OPS_NN_GRAD_OPS_H_

// The backward ops of the nn family (domain graphopt), shared by their descriptors
// (ops/nn_grad.cc), the builtin gradients (ops/grad_nn.cc) and the CPU kernels
// (runtime/kernels/nn_grad.cc). ONNX has no efficient form of these: a Conv's data gradient as
// ConvTranspose runs on direct loops, its weight gradient would be a Conv over transposed
// activations, and a pool's backward would be a scatter.
//
//   ConvGradData(dY, W, X_shape) -> dX       dX = d/dX <dY, Conv(X, W)>  (Conv's adjoint in X)
//   ConvGradWeight(X, dY, W_shape) -> dW     dW = d/dW <dY, Conv(X, W)>
//   MaxPoolGrad(dY, X) -> dX                 dY scattered (summed) to each window's first max
//   AveragePoolGrad(dY, X_shape) -> dX       AveragePool's adjoint
//
// Each takes its forward op's window attributes (auto_pad, pads, strides, dilations; group for
// the convolutions; kernel_shape, ceil_mode and count_include_pad for the pools) and resolves
// the window on the forward input's spatial dims, exactly as the forward op does.

namespace graphopt {

inline constexpr char kNnGradDomain[] = "graphopt";
inline constexpr char kConvGradDataOp[] = "ConvGradData";
inline constexpr char kConvGradWeightOp[] = "ConvGradWeight";
inline constexpr char kMaxPoolGradOp[] = "MaxPoolGrad";
inline constexpr char kAveragePoolGradOp[] = "AveragePoolGrad";

}  // namespace graphopt

#endif  // GRAPHOPT_OPS_NN_GRAD_OPS_H_
