#ifndef GRAPHOPT_OPS_RNN_ACTIVATION_H_
#define GRAPHOPT_OPS_RNN_ACTIVATION_H_

// The activation functions ONNX's RNN, GRU and LSTM name in their `activations` attribute,
// shared by their kernels (runtime/kernels/rnn.cc) and their unrolling into primitives
// (passes/rnn_unroll.h), so that both read the names and parameters alike.

#include <cstddef>
#include <string>
#include <vector>

namespace graphopt {

struct RnnActivation {
  enum Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  };
  Kind kind = kTanh;
  float alpha = 0;
  float beta = 0;
};

// Parses `name` (case-insensitive ONNX spelling) into `out`: alpha and beta come from the lists
// at *ai / *bi when the function takes them (advancing the cursors), its defaults otherwise.
// False for an unknown name.
bool ParseRnnActivation(const std::string& name, const std::vector<float>& alphas,
                        const std::vector<float>& betas, size_t* ai, size_t* bi,
                        RnnActivation* out);

}  // namespace graphopt

#endif  // GRAPHOPT_OPS_RNN_ACTIVATION_H_
