#ifndef GRAPHOPT_OPS_GRAD_TEST_UTIL_H_
#define GRAPHOPT_OPS_GRAD_TEST_UTIL_H_

// Text-graph pieces and a second-order check for the builtin gradient tests
// (ops/grad_<family>_test.cc).

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/text_format.h"
#include "passes/gradient_check.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace testing {

// float64 values in [lo, hi): finite differences in double precision.
inline runtime::Tensor Rand(const std::vector<int64_t>& dims, uint32_t seed, double lo = -1.0,
                            double hi = 1.0) {
  return RandomTensor(v1::DT_FLOAT64, dims, seed, lo, hi);
}

// A float64 graph input whose dims are sizes ("3") or symbols ("n").
inline std::string F64Input(const std::string& name, const std::vector<std::string>& dims) {
  std::string shape;
  for (const std::string& d : dims) {
    const bool number = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
    absl::StrAppend(&shape, number ? absl::StrCat(" dims { size: ", d, " }")
                                   : absl::StrCat(" dims { symbol: \"", d, "\" }"));
  }
  return absl::StrCat("inputs { name: \"", name, "\" type { dtype: DT_FLOAT64 shape {", shape,
                      " } } }\n");
}

// An int64 initializer of `dims` (1-D of the values' count when empty and `scalar` is false).
inline std::string Int64Init(const std::string& name, const std::vector<int64_t>& values,
                             std::vector<int64_t> dims = {}, bool scalar = false) {
  std::string raw;
  for (int64_t v : values) {
    for (int b = 0; b < 8; ++b) {
      absl::StrAppend(&raw, absl::StrFormat("\\%03o", (static_cast<uint64_t>(v) >> (8 * b)) & 0xff));
    }
  }
  if (dims.empty() && !scalar) dims = {static_cast<int64_t>(values.size())};
  std::string dim_text;
  for (int64_t d : dims) absl::StrAppend(&dim_text, " dims: ", d);
  return absl::StrCat("initializers { name: \"", name, "\" dtype: DT_INT64", dim_text,
                      " raw_data: \"", raw, "\" }\n");
}

inline std::string BoolInit(const std::string& name, bool value) {
  return absl::StrCat("initializers { name: \"", name, "\" dtype: DT_BOOL raw_data: \"",
                      value ? "\\001" : "\\000", "\" }\n");
}

inline std::string F64ScalarInit(const std::string& name, double value) {
  std::string raw;
  uint64_t bits;
  static_assert(sizeof(bits) == sizeof(value));
  std::memcpy(&bits, &value, 8);
  for (int b = 0; b < 8; ++b) absl::StrAppend(&raw, absl::StrFormat("\\%03o", (bits >> (8 * b)) & 0xff));
  return absl::StrCat("initializers { name: \"", name, "\" dtype: DT_FLOAT64 raw_data: \"", raw,
                      "\" }\n");
}

inline std::string Opset(int version) {
  return absl::StrCat("opset_imports { domain: \"\" version: ", version, " }\n");
}

inline std::string IntText(const std::string& name, int64_t v) {
  return absl::StrCat("attributes { name: \"", name, "\" i: ", v, " }");
}

inline std::string StringText(const std::string& name, const std::string& v) {
  return absl::StrCat("attributes { name: \"", name, "\" s: \"", v, "\" }");
}

inline std::string FloatText(const std::string& name, float v) {
  return absl::StrCat("attributes { name: \"", name, "\" f: ", v, " }");
}

// Second order: differentiates `text` once with respect to `wrt` for the scalar output `loss`
// (seeded with one), then checks the gradients of that graph (its outputs: the loss and
// "<wrt>_d1", so that the second gradient can take the name "<wrt>_grad") against finite
// differences. `text` should make the loss nonlinear in `wrt`
// so that the second derivatives are not all zero.
inline absl::Status CheckSecondOrder(const PassTestEnv& env, const std::string& text,
                                     const std::string& loss, const std::string& wrt,
                                     const std::vector<std::pair<std::string, runtime::Tensor>>& inputs) {
  absl::StatusOr<v1::Graph> first = env.RunSpecs(
      text, {{"infer_type", {}}, {"infer_shape", {}}, {"gradient", {{"wrt", wrt}, {"loss", loss}, {"suffix", "_d1"}}}});
  if (!first.ok()) return first.status();
  std::string backward;
  if (!google::protobuf::TextFormat::PrintToString(*first, &backward)) {
    return absl::InternalError("cannot print the first-order graph");
  }
  GradientCheckOptions options;
  options.wrt = {wrt};
  return CheckGradients(env, backward, inputs, options);
}

}  // namespace testing
}  // namespace graphopt

#endif  // GRAPHOPT_OPS_GRAD_TEST_UTIL_H_
