#include "ops/rnn_activation.h"

#include "absl/strings/ascii.h"

namespace graphopt {

bool ParseRnnActivation(const std::string& name, const std::vector<float>& alphas,
                        const std::vector<float>& betas, size_t* ai, size_t* bi,
                        RnnActivation* out) {
  struct Spec {
    const char* name;
    RnnActivation::Kind kind;
    bool has_alpha, has_beta;
    float alpha, beta;
  };
  static constexpr Spec kSpecs[] = {
      {"relu", RnnActivation::kRelu, false, false, 0, 0},
      {"tanh", RnnActivation::kTanh, false, false, 0, 0},
      {"sigmoid", RnnActivation::kSigmoid, false, false, 0, 0},
      {"affine", RnnActivation::kAffine, true, true, 1, 0},
      {"leakyrelu", RnnActivation::kLeakyRelu, true, false, 0.01f, 0},
      {"thresholdedrelu", RnnActivation::kThresholdedRelu, true, false, 1, 0},
      {"scaledtanh", RnnActivation::kScaledTanh, true, true, 1, 1},
      {"hardsigmoid", RnnActivation::kHardSigmoid, true, true, 0.2f, 0.5f},
      {"elu", RnnActivation::kElu, true, false, 1, 0},
      {"softsign", RnnActivation::kSoftsign, false, false, 0, 0},
      {"softplus", RnnActivation::kSoftplus, false, false, 0, 0},
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

}  // namespace graphopt
