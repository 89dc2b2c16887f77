// Logical and comparison binaries (And, Or, Xor, Equal, Less, Greater, GreaterOrEqual,
// LessOrEqual), Where and the variadic Min, Max, Sum and Mean, with ONNX semantics; kernels in
// runtime/kernels/elementwise_logic.cc.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// A binary op with broadcasting and a bool result.
OpDef BoolResultBinary(absl::string_view name, absl::string_view doc, const DTypes& types,
                       bool legacy_broadcast) {
  OpBuilder b(name, doc);
  if (legacy_broadcast) LegacyBroadcastAttrs(b);
  return b.Input("A", "T")
      .Input("B", "T")
      .Output("C", "T1")
      .Constraint("T", types)
      .Constraint("T1", {v1::DT_BOOL})
      .Fusion(v1::FUSION_BROADCAST)
      .ShapeFn(legacy_broadcast ? BinaryBroadcastShape : BroadcastAllInputs)
      .Build();
}

}  // namespace

void AddElementwiseLogicOps(std::vector<OpDef>* ops) {
  const DTypes numeric = NumericTypes();
  for (const char* name : {"And", "Or", "Xor"}) {
    ops->push_back(BoolResultBinary(name, "Logical operation, elementwise, with broadcasting "
                                          "(opsets < 7: B broadcasts to A's shape).",
                                    {v1::DT_BOOL}, true));
  }
  for (const char* name : {"GreaterOrEqual", "LessOrEqual"}) {
    ops->push_back(BoolResultBinary(name, "Elementwise comparison with broadcasting; bool "
                                          "result.",
                                    NumericTypes(), false));
  }
  for (const char* name : {"Sum", "Mean"}) {
    OpBuilder b(name, "Elementwise sum/mean of all inputs, with broadcasting (opsets < 8: "
                      "equal shapes).");
    ops->push_back(ConsumedInputs(b)
                       .VariadicInput("data_0", "T", 1)
                       .Output(name == std::string("Sum") ? "sum" : "mean", "T")
                       .Constraint("T", FloatTypes())
                       .Fusion(v1::FUSION_BROADCAST)
                       .ShapeFn(MinMaxShape)
                       .Build());
  }
  for (const char* name : {"Min", "Max"}) {
    OpBuilder b(name, "Elementwise min/max of all inputs, with broadcasting (opsets < 8: "
                      "equal shapes).");
    ops->push_back(ConsumedInputs(b)
                       .VariadicInput("data_0", "T", 1)
                       .Output(name == std::string("Min") ? "min" : "max", "T")
                       .Constraint("T", numeric)
                       .Fusion(v1::FUSION_BROADCAST)
                       .ShapeFn(MinMaxShape)
                       .Build());
  }
  const std::pair<const char*, DTypes> compare[] = {
      {"Equal", Join(numeric, {v1::DT_BOOL, v1::DT_STRING})},
      {"Less", numeric},
      {"Greater", numeric}};
  for (const auto& [name, types] : compare) {
    OpBuilder b(name, "Elementwise comparison with broadcasting (opsets < 7: B broadcasts to "
                      "A's shape); bool result.");
    ops->push_back(LegacyBroadcastAttrs(b)
                       .Input("A", "T")
                       .Input("B", "T")
                       .Output("C", "T1")
                       .Constraint("T", types)
                       .Constraint("T1", {v1::DT_BOOL})
                       .Fusion(v1::FUSION_BROADCAST)
                       .ShapeFn(BinaryBroadcastShape)
                       .Build());
  }
  ops->push_back(OpBuilder("Where", "X where condition is true, else Y; the three broadcast.")
                     .Input("condition", "B")
                     .Input("X", "T")
                     .Input("Y", "T")
                     .Output("output", "T")
                     .Constraint("B", {v1::DT_BOOL})
                     .Constraint("T", AllTypes())
                     .Fusion(v1::FUSION_BROADCAST)
                     .ShapeFn(BroadcastAllInputs)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
