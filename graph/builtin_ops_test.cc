#include "graph/builtin_ops.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "graph/builtin_ops_test_util.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// --- Registration -------------------------------------------------------------------------------

TEST_F(BuiltinOpsTest, RegistersAllRequiredOps) {
  const char* kRequired[] = {
      "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Neg", "Abs", "Relu",
      "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Clip", "Softmax", "MatMul", "Gemm", "Conv",
      "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "Flatten", "Reshape",
      "Transpose", "Concat", "Split", "Slice", "Gather", "Squeeze", "Unsqueeze", "Shape",
      "Constant", "Identity", "Dropout", "Cast", "Where", "Expand", "ReduceMean", "ReduceSum",
      "LayerNormalization", "Equal", "Less", "Greater", "Not"};
  EXPECT_EQ(sizeof(kRequired) / sizeof(kRequired[0]), 47u);
  for (const char* name : kRequired) {
    EXPECT_NE(registry_.Find("", name), nullptr) << name;
  }
  const char* kExtra[] = {"ConstantOfShape", "Range", "Tile", "Pad", "ReduceMax", "ReduceMin",
                          "Min", "Max", "Softplus", "HardSigmoid", "Sign", "Floor", "Ceil",
                          "Reciprocal", "GlobalMaxPool", "ArgMax", "ArgMin", "TopK",
                          "RNN", "GRU", "LSTM"};
  for (const char* name : kExtra) EXPECT_NE(registry_.Find("", name), nullptr) << name;
  // Default-domain ops: the required ones, the extra ones above and those of
  // builtin_ops_{math,nn_extra,index,control,quant,signal,misc}.cc (see their tests).
  size_t onnx_ops = 0;
  for (const OpDef* op : registry_.List()) onnx_ops += op->descriptor.domain().empty();
  EXPECT_EQ(onnx_ops, 47u + 21u + 97u);
}

TEST_F(BuiltinOpsTest, EveryDescriptorValidatesAndReregisters) {
  OpRegistry fresh;
  for (const OpDef* op : registry_.List()) {
    EXPECT_TRUE(ValidateOpDef(*op).ok()) << op->descriptor.name();
    EXPECT_EQ(op->descriptor.shape_rule().builtin(), op->descriptor.name());
    EXPECT_FALSE(op->descriptor.doc().empty()) << op->descriptor.name();
    EXPECT_TRUE(op->shape_fn != nullptr);
    OpDef copy;
    copy.descriptor = op->descriptor;
    copy.shape_fn = op->shape_fn;
    copy.type_fn = op->type_fn;
    EXPECT_TRUE(fresh.Register(std::move(copy)).ok()) << op->descriptor.name();
  }
  // Registering twice is ALREADY_EXISTS, not a silent overwrite.
  EXPECT_EQ(RegisterBuiltinOps(&fresh).code(), absl::StatusCode::kAlreadyExists);
  // No builtin writes its inputs: passes skip the per-node search for written values.
  EXPECT_FALSE(registry_.HasMutatingOps());
  EXPECT_FALSE(registry_.HasOpsWithBodies());
}

TEST_F(BuiltinOpsTest, DescriptorAttributesFollowNnvmConventions) {
  auto desc = [&](const char* name) { return registry_.Find("", name)->descriptor; };
  EXPECT_EQ(desc("Relu").fusion_pattern(), v1::FUSION_ELEMWISE);
  ASSERT_EQ(desc("Relu").inplace_size(), 1);
  EXPECT_EQ(desc("Relu").inplace(0).input(), 0);
  EXPECT_EQ(desc("Add").fusion_pattern(), v1::FUSION_BROADCAST);
  EXPECT_EQ(desc("Conv").fusion_pattern(), v1::FUSION_OUT_ELEMWISE_FUSABLE);
  EXPECT_EQ(desc("MatMul").fusion_pattern(), v1::FUSION_OUT_ELEMWISE_FUSABLE);
  EXPECT_EQ(desc("ReduceMean").fusion_pattern(), v1::FUSION_REDUCTION);
  EXPECT_EQ(desc("Reshape").fusion_pattern(), v1::FUSION_INJECTIVE);
  EXPECT_EQ(desc("Shape").fusion_pattern(), v1::FUSION_OPAQUE);
  EXPECT_EQ(desc("Dropout").extensions().at("nondeterministic").i(), 1);
  EXPECT_EQ(desc("Cast").outputs(0).dtype_from_attribute(), "to");
  EXPECT_EQ(desc("Concat").inputs(0).arity(), v1::ARITY_VARIADIC);
  EXPECT_EQ(desc("Split").outputs(0).arity(), v1::ARITY_VARIADIC);
  // Concat's 'axis' is required from opset 4 only; its shape rule enforces that.
  EXPECT_EQ(desc("Concat").attributes(0).name(), "axis");
}

// --- Elementwise and broadcasting ---------------------------------------------------------------

TEST_F(BuiltinOpsTest, UnaryKeepsShapeAndSymbols) {
  In("x", "float32[batch,3,?]");
  Node("Relu", {"x"}, {"a"});
  Node("Sqrt", {"a"}, {"b"});
  Node("LeakyRelu", {"b"}, {"c"}, {{"alpha", AFloat(0.1f)}});
  Node("Erf", {"c"}, {"d"});
  RUN_OK();
  EXPECT_EQ(T("d"), "float32[batch,3,?]");
}

TEST_F(BuiltinOpsTest, UnaryOfUnknownInputIsUnknown) {
  In("x", "?");
  Node("Tanh", {"x"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "undefined[?..]");
}

TEST_F(BuiltinOpsTest, AddBroadcastsSymbols) {
  In("a", "float32[batch,1,4]");
  In("b", "float32[3,1]");
  Node("Add", {"a", "b"}, {"c"});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[batch,3,4]");
}

TEST_F(BuiltinOpsTest, BroadcastSymbolAgainstKnownAndOtherSymbol) {
  In("a", "float32[batch,seq,n]");
  In("b", "float32[5,seq,m]");
  Node("Mul", {"a", "b"}, {"c"});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[5,seq,?]");
}

TEST_F(BuiltinOpsTest, BroadcastMismatchNamesNodeAndShapes) {
  In("a", "float32[2,3]");
  In("b", "float32[4]");
  Node("Sub", {"a", "b"}, {"c"});
  ExpectError({"n0_Sub", "[2,3]", "[4]"});
}

TEST_F(BuiltinOpsTest, TypeConstraintViolationNamesNode) {
  In("a", "float32[2]");
  In("b", "int64[2]");
  Node("Add", {"a", "b"}, {"c"});
  ExpectError({"n0_Add", "int64", "float32"});
}

TEST_F(BuiltinOpsTest, DisallowedTypeIsRejected) {
  In("a", "int64[2]");
  Node("Sqrt", {"a"}, {"b"});
  ExpectError({"n0_Sqrt", "int64"});
}

TEST_F(BuiltinOpsTest, ComparisonsProduceBool) {
  In("a", "float32[batch,4]");
  In("b", "float32[4]");
  Node("Less", {"a", "b"}, {"lt"});
  Node("Equal", {"a", "b"}, {"eq"});
  Node("Greater", {"a", "b"}, {"gt"});
  Node("Not", {"lt"}, {"nlt"});
  RUN_OK();
  EXPECT_EQ(T("lt"), "bool[batch,4]");
  EXPECT_EQ(T("eq"), "bool[batch,4]");
  EXPECT_EQ(T("gt"), "bool[batch,4]");
  EXPECT_EQ(T("nlt"), "bool[batch,4]");
}

TEST_F(BuiltinOpsTest, WhereBroadcastsThree) {
  In("c", "bool[batch,1,1]");
  In("x", "float16[1,3,1]");
  In("y", "float16[4]");
  Node("Where", {"c", "x", "y"}, {"z"});
  RUN_OK();
  EXPECT_EQ(T("z"), "float16[batch,3,4]");
}

TEST_F(BuiltinOpsTest, WhereRejectsNonBoolCondition) {
  In("c", "float32[3]");
  In("x", "float32[3]");
  Node("Where", {"c", "x", "x"}, {"z"});
  ExpectError({"n0_Where", "input 0", "float32", "bool"});
}

TEST_F(BuiltinOpsTest, PowAllowsDifferentExponentType) {
  In("x", "float32[2,3]");
  In("e", "int64[]");
  Node("Pow", {"x", "e"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[2,3]");
}

TEST_F(BuiltinOpsTest, ClipOldAndNewForms) {
  In("x", "float32[batch,8]");
  Init("lo", FloatTensor({0.f}, {}));
  Node("Clip", {"x", "lo", ""}, {"a"});
  Node("Clip", {"x"}, {"b"}, {{"min", AFloat(0.f)}, {"max", AFloat(6.f)}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,8]");
  EXPECT_EQ(T("b"), "float32[batch,8]");
}

TEST_F(BuiltinOpsTest, ClipRejectsNonScalarBound) {
  In("x", "float32[8]");
  In("lo", "float32[8]");
  Node("Clip", {"x", "lo"}, {"y"});
  ExpectError({"n0_Clip", "min", "scalar"});
}

TEST_F(BuiltinOpsTest, MinMaxVariadic) {
  In("a", "float32[3,1]");
  In("b", "float32[4]");
  In("c", "float32[1]");
  Node("Max", {"a", "b", "c"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[3,4]");
}

TEST_F(BuiltinOpsTest, CastSetsDtypeFromTo) {
  In("x", "float32[batch,3]");
  Node("Cast", {"x"}, {"y"}, {{"to", AInt(v1::DT_FLOAT16)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float16[batch,3]");
}

TEST_F(BuiltinOpsTest, CastRejectsInvalidTo) {
  In("x", "float32[3]");
  Node("Cast", {"x"}, {"y"}, {{"to", AInt(999)}});
  ExpectError({"n0_Cast", "to"});
}

TEST_F(BuiltinOpsTest, DropoutOutputsAndMask) {
  In("x", "float32[batch,16]");
  Node("Dropout", {"x", "", ""}, {"y", "mask"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,16]");
  EXPECT_EQ(T("mask"), "bool[batch,16]");
}

TEST_F(BuiltinOpsTest, IdentityForwardsDimsValue) {
  In("x", "float32[batch,3]");
  Node("Shape", {"x"}, {"s"});
  Node("Identity", {"s"}, {"t"});
  RUN_OK();
  EXPECT_EQ(T("t"), "int64[2]");
  EXPECT_EQ(DimsValue("t"), "[batch,3]");
}

// --- Linear algebra and NN ----------------------------------------------------------------------

TEST_F(BuiltinOpsTest, MatMulBatchedAndVector) {
  In("a", "float32[batch,seq,64]");
  In("w", "float32[64,128]");
  In("v", "float32[128]");
  Node("MatMul", {"a", "w"}, {"h"});
  Node("MatMul", {"h", "v"}, {"r"});
  RUN_OK();
  EXPECT_EQ(T("h"), "float32[batch,seq,128]");
  EXPECT_EQ(T("r"), "float32[batch,seq]");
}

TEST_F(BuiltinOpsTest, MatMulInnerMismatch) {
  In("a", "float32[2,3]");
  In("b", "float32[4,5]");
  Node("MatMul", {"a", "b"}, {"c"});
  ExpectError({"n0_MatMul", "inner", "[2,3]", "[4,5]"});
}

TEST_F(BuiltinOpsTest, GemmTransposeFlags) {
  In("a", "float32[64,batch]");
  In("b", "float32[10,64]");
  In("c", "float32[10]");
  Node("Gemm", {"a", "b", "c"}, {"y"}, {{"transA", AInt(1)}, {"transB", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,10]");
}

TEST_F(BuiltinOpsTest, GemmWithoutCAndBadC) {
  In("a", "float32[4,8]");
  In("b", "float32[8,3]");
  In("bad", "float32[4]");
  Node("Gemm", {"a", "b"}, {"y"});
  Node("Gemm", {"a", "b", "bad"}, {"z"});
  ExpectError({"n1_Gemm", "input C"});
  EXPECT_EQ(T("y"), "float32[4,3]");
}

TEST_F(BuiltinOpsTest, GemmInnerMismatch) {
  In("a", "float32[4,8]");
  In("b", "float32[8,3]");
  Node("Gemm", {"a", "b"}, {"y"}, {{"transB", AInt(1)}});
  ExpectError({"n0_Gemm", "K=8", "K=3"});
}

TEST_F(BuiltinOpsTest, ConvPadsStridesAndBias) {
  In("x", "float32[batch,3,224,224]");
  In("w", "float32[64,3,7,7]");
  In("b", "float32[64]");
  Node("Conv", {"x", "w", "b"}, {"y"},
       {{"pads", AInts({3, 3, 3, 3})}, {"strides", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,64,112,112]");
}

TEST_F(BuiltinOpsTest, ConvDilationsAndKernelFromWeight) {
  In("x", "float32[1,8,32,?]");
  In("w", "float32[16,8,3,3]");
  Node("Conv", {"x", "w"}, {"y"}, {{"dilations", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,16,28,?]");
}

TEST_F(BuiltinOpsTest, ConvAutoPadAndSymbolicSpatial) {
  In("x", "float32[n,16,h,w]");
  In("w", "float32[16,16,3,3]");
  Node("Conv", {"x", "w"}, {"same"}, {{"auto_pad", AString("SAME_UPPER")}});
  Node("Conv", {"x", "w"}, {"strided"},
       {{"auto_pad", AString("SAME_LOWER")}, {"strides", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("same"), "float32[n,16,h,w]");
  EXPECT_EQ(T("strided"), "float32[n,16,?,?]");
}

TEST_F(BuiltinOpsTest, ConvGroupsAndChannelMismatch) {
  In("x", "float32[1,32,8,8]");
  In("dw", "float32[32,1,3,3]");
  In("bad", "float32[8,16,3,3]");
  Node("Conv", {"x", "dw"}, {"y"}, {{"group", AInt(32)}, {"pads", AInts({1, 1, 1, 1})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,32,8,8]");
  Node("Conv", {"x", "bad"}, {"z"});
  ExpectError({"n1_Conv", "32 channels", "16"});
}

TEST_F(BuiltinOpsTest, ConvBadAttributes) {
  In("x", "float32[1,3,8,8]");
  In("w", "float32[4,3,3,3]");
  Node("Conv", {"x", "w"}, {"y"}, {{"strides", AInts({1})}});
  ExpectError({"n0_Conv", "strides", "expected 2"});
}

TEST_F(BuiltinOpsTest, ConvUnknownInputsKeepRankFromWeight) {
  In("x", "?");
  In("w", "float32[4,3,3,3]");
  Node("Conv", {"x", "w"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?,4,?,?]");
}

TEST_F(BuiltinOpsTest, MaxPoolCeilModeAndIndices) {
  In("x", "float32[batch,64,112,112]");
  Node("MaxPool", {"x"}, {"y", "idx"},
       {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({2, 2})},
        {"pads", AInts({1, 1, 1, 1})}});
  Node("MaxPool", {"x"}, {"c"},
       {{"kernel_shape", AInts({2, 2})}, {"strides", AInts({3, 3})}, {"ceil_mode", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,64,56,56]");
  EXPECT_EQ(T("idx"), "int64[batch,64,56,56]");
  // floor(110/3)+1 = 37; ceil gives 38.
  EXPECT_EQ(T("c"), "float32[batch,64,38,38]");
}

TEST_F(BuiltinOpsTest, AveragePoolValidAndRankCheck) {
  In("x", "float32[1,3,10]");
  Node("AveragePool", {"x"}, {"y"},
       {{"kernel_shape", AInts({3})}, {"auto_pad", AString("VALID")}, {"strides", AInts({2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,3,4]");
  Node("AveragePool", {"x"}, {"z"}, {{"kernel_shape", AInts({3, 3})}});
  ExpectError({"n1_AveragePool", "rank 4"});
}

TEST_F(BuiltinOpsTest, PoolOfUnknownRankGetsRankFromKernel) {
  In("x", "float32[?..]");
  Node("MaxPool", {"x"}, {"y"}, {{"kernel_shape", AInts({2, 2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?,?,?,?]");
}

TEST_F(BuiltinOpsTest, GlobalAveragePool) {
  In("x", "float32[batch,512,7,7]");
  Node("GlobalAveragePool", {"x"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,512,1,1]");
}

TEST_F(BuiltinOpsTest, BatchNormalization) {
  In("x", "float32[batch,16,8,8]");
  In("p", "float32[16]");
  Node("BatchNormalization", {"x", "p", "p", "p", "p"}, {"y", "rm", "rv"},
       {{"training_mode", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,16,8,8]");
  EXPECT_EQ(T("rm"), "float32[16]");
  EXPECT_EQ(T("rv"), "float32[16]");
}

TEST_F(BuiltinOpsTest, BatchNormalizationChannelMismatch) {
  In("x", "float32[batch,16,8,8]");
  In("p", "float32[16]");
  In("q", "float32[8]");
  Node("BatchNormalization", {"x", "p", "q", "p", "p"}, {"y"});
  ExpectError({"n0_BatchNormalization", "B", "[8]"});
}

TEST_F(BuiltinOpsTest, SoftmaxAxisRange) {
  In("x", "float32[batch,10]");
  Node("Softmax", {"x"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,10]");
  Node("Softmax", {"x"}, {"z"}, {{"axis", AInt(2)}});
  ExpectError({"n1_Softmax", "attribute 'axis' value 2", "rank 2"});
}

TEST_F(BuiltinOpsTest, LayerNormalization) {
  In("x", "float16[batch,seq,768]");
  In("g", "float16[768]");
  Node("LayerNormalization", {"x", "g", "g"}, {"y", "mean", "inv"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float16[batch,seq,768]");
  EXPECT_EQ(T("mean"), "float32[batch,seq,1]");
  EXPECT_EQ(T("inv"), "float32[batch,seq,1]");
}

TEST_F(BuiltinOpsTest, LayerNormalizationAxisAndBadScale) {
  In("x", "float32[2,3,4]");
  In("g", "float32[3,4]");
  In("bad", "float32[5]");
  Node("LayerNormalization", {"x", "g"}, {"y", "m"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("m"), "float32[2,1,1]");
  Node("LayerNormalization", {"x", "bad"}, {"z"});
  ExpectError({"n1_LayerNormalization", "Scale"});
}

TEST_F(BuiltinOpsTest, ReduceMeanAttributeAxesKeepdims) {
  In("x", "float32[batch,seq,64]");
  Node("ReduceMean", {"x"}, {"k"}, {{"axes", AInts({-1})}});
  Node("ReduceMean", {"x"}, {"d"}, {{"axes", AInts({1, 2})}, {"keepdims", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("k"), "float32[batch,seq,1]");
  EXPECT_EQ(T("d"), "float32[batch]");
}

TEST_F(BuiltinOpsTest, ReduceSumAxesInputAndEmptyAxes) {
  In("x", "float32[2,3,4]");
  Ints("axes", {0, 2});
  Ints("none", {});
  In("dyn", "int64[1]");
  Node("ReduceSum", {"x", "axes"}, {"a"}, {{"keepdims", AInt(0)}});
  Node("ReduceSum", {"x"}, {"all"});
  Node("ReduceSum", {"x", "none"}, {"noop"}, {{"noop_with_empty_axes", AInt(1)}});
  Node("ReduceSum", {"x", "dyn"}, {"unknown"});
  Node("ReduceSum", {"x"}, {"scalar"}, {{"keepdims", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[3]");
  EXPECT_EQ(T("all"), "float32[1,1,1]");
  EXPECT_EQ(T("noop"), "float32[2,3,4]");
  EXPECT_EQ(T("unknown"), "float32[?,?,?]");
  EXPECT_EQ(T("scalar"), "float32[]");
}

TEST_F(BuiltinOpsTest, ReduceAxisOutOfRange) {
  In("x", "float32[2,3]");
  Node("ReduceMean", {"x"}, {"y"}, {{"axes", AInts({2})}});
  ExpectError({"n0_ReduceMean", "attribute 'axes' value 2"});
}

TEST_F(BuiltinOpsTest, ArgMaxAndTopK) {
  In("x", "float32[batch,10]");
  Scalar("k0", 0);
  Ints("k", {3});
  Node("ArgMax", {"x"}, {"am"}, {{"axis", AInt(1)}, {"keepdims", AInt(0)}});
  Node("TopK", {"x", "k"}, {"v", "i"});
  RUN_OK();
  EXPECT_EQ(T("am"), "int64[batch]");
  EXPECT_EQ(T("v"), "float32[batch,3]");
  EXPECT_EQ(T("i"), "int64[batch,3]");
}

// --- Data movement ------------------------------------------------------------------------------

TEST_F(BuiltinOpsTest, FlattenKeepsBatchSymbol) {
  In("x", "float32[batch,3,4,5]");
  Node("Flatten", {"x"}, {"y"});
  Node("Flatten", {"x"}, {"z"}, {{"axis", AInt(0)}});
  Node("Flatten", {"x"}, {"w"}, {{"axis", AInt(-2)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,60]");
  EXPECT_EQ(T("z"), "float32[1,?]");
  EXPECT_EQ(T("w"), "float32[?,20]");
}

TEST_F(BuiltinOpsTest, FlattenUnknownRankIsTwoD) {
  In("x", "float32[?..]");
  Node("Flatten", {"x"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?,?]");
}

TEST_F(BuiltinOpsTest, ReshapeConstantShape) {
  In("x", "float32[batch,3,4]");
  Ints("s1", {0, -1});
  Ints("s2", {0, 2, -1, 2});
  Node("Reshape", {"x", "s1"}, {"a"});
  Node("Reshape", {"x", "s2"}, {"b"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,12]");
  EXPECT_EQ(T("b"), "float32[batch,2,3,2]");
}

TEST_F(BuiltinOpsTest, ReshapeErrors) {
  In("x", "float32[2,3,4]");
  Ints("two", {-1, -1});
  Node("Reshape", {"x", "two"}, {"a"});
  ExpectError({"n0_Reshape", "more than one -1"});
}

TEST_F(BuiltinOpsTest, ReshapeElementCountMismatch) {
  In("x", "float32[2,3,4]");
  Ints("s", {5, 5});
  Node("Reshape", {"x", "s"}, {"a"});
  ExpectError({"n0_Reshape", "[2,3,4]", "[5,5]"});
}

TEST_F(BuiltinOpsTest, ReshapeAllowZero) {
  In("x", "float32[0,4]");
  Ints("s", {4, 0});
  Node("Reshape", {"x", "s"}, {"a"}, {{"allowzero", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[4,0]");
}

TEST_F(BuiltinOpsTest, ReshapeDynamicShapeOfKnownLength) {
  In("x", "float32[2,3,4]");
  In("s", "int64[3]");
  Node("Reshape", {"x", "s"}, {"a"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[?,?,?]");
}

// The exporter pattern: Shape -> Gather -> Unsqueeze -> Concat -> Reshape keeps "batch".
TEST_F(BuiltinOpsTest, ShapeGatherUnsqueezeConcatReshapeChain) {
  In("x", "float32[batch,seq,768]");
  Scalar("i0", 0);
  Ints("ax0", {0});
  Ints("tail", {12, 64});
  Ints("minus1", {-1});
  Node("Shape", {"x"}, {"shape"});
  Node("Gather", {"shape", "i0"}, {"b"}, {{"axis", AInt(0)}});
  Node("Unsqueeze", {"b", "ax0"}, {"b1"});
  Node("Concat", {"b1", "minus1", "tail"}, {"target"}, {{"axis", AInt(0)}});
  Node("Reshape", {"x", "target"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("shape"), "int64[3]");
  EXPECT_EQ(DimsValue("shape"), "[batch,seq,768]");
  EXPECT_EQ(T("b"), "int64[]");
  EXPECT_EQ(DimsValue("b"), "[batch]");
  EXPECT_EQ(T("b1"), "int64[1]");
  EXPECT_EQ(T("target"), "int64[4]");
  EXPECT_EQ(DimsValue("target"), "[batch,-1,12,64]");
  EXPECT_EQ(T("y"), "float32[batch,seq,12,64]");
}

TEST_F(BuiltinOpsTest, ShapeArithmeticFoldsKnownInts) {
  In("x", "float32[batch,8,16]");
  Ints("i", {1, 2});
  Node("Shape", {"x"}, {"s"});
  Scalar("two", 2);
  Scalar("zero", 0);
  Node("Gather", {"s", "i"}, {"hw"});
  Node("Mul", {"hw", "hw"}, {"sq"});
  Node("Mul", {"hw", "two"}, {"dbl"});
  Node("Gather", {"s", "zero"}, {"b"});
  Node("Mul", {"b", "two"}, {"b2"});
  Node("Add", {"b", "zero"}, {"b0"});
  RUN_OK();
  EXPECT_EQ(DimsValue("hw"), "[8,16]");
  EXPECT_EQ(DimsValue("sq"), "[64,256]");
  EXPECT_EQ(DimsValue("dbl"), "[16,32]");
  // No symbolic arithmetic: batch * 2 is unknown, batch + 0 is batch.
  EXPECT_EQ(DimsValue("b2"), "[?]");
  EXPECT_EQ(DimsValue("b0"), "[batch]");
}

TEST_F(BuiltinOpsTest, ShapeStartEndAndDimsValueSlice) {
  In("x", "float32[batch,seq,4,5]");
  Ints("st", {1});
  Ints("en", {-1});
  Node("Shape", {"x"}, {"s"}, {{"start", AInt(-3)}, {"end", AInt(-1)}});
  Node("Shape", {"x"}, {"full"});
  Node("Slice", {"full", "st", "en"}, {"mid"});
  RUN_OK();
  EXPECT_EQ(T("s"), "int64[2]");
  EXPECT_EQ(DimsValue("s"), "[seq,4]");
  EXPECT_EQ(T("mid"), "int64[2]");
  EXPECT_EQ(DimsValue("mid"), "[seq,4]");
}

TEST_F(BuiltinOpsTest, ShapeOfUnknownRank) {
  In("x", "float32[?..]");
  Node("Shape", {"x"}, {"s"});
  RUN_OK();
  EXPECT_EQ(T("s"), "int64[?]");
  EXPECT_EQ(DimsValue("s"), "none");
}

TEST_F(BuiltinOpsTest, TransposeDefaultAndPerm) {
  In("x", "float32[batch,3,4]");
  Node("Transpose", {"x"}, {"r"});
  Node("Transpose", {"x"}, {"p"}, {{"perm", AInts({0, 2, 1})}});
  RUN_OK();
  EXPECT_EQ(T("r"), "float32[4,3,batch]");
  EXPECT_EQ(T("p"), "float32[batch,4,3]");
}

TEST_F(BuiltinOpsTest, TransposeRejectsNonPermutation) {
  In("x", "float32[2,3,4]");
  Node("Transpose", {"x"}, {"p"}, {{"perm", AInts({0, 0, 1})}});
  ExpectError({"n0_Transpose", "perm", "not a permutation"});
}

TEST_F(BuiltinOpsTest, ConcatAlongOtherAxisKeepsSymbols) {
  In("a", "float32[batch,3]");
  In("b", "float32[batch,5]");
  In("c", "float32[?,2]");
  Node("Concat", {"a", "b", "c"}, {"y"}, {{"axis", AInt(-1)}});
  Node("Concat", {"a", "a"}, {"z"}, {{"axis", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,10]");
  EXPECT_EQ(T("z"), "float32[?,3]");
}

TEST_F(BuiltinOpsTest, ConcatRankMismatch) {
  In("a", "float32[2,3]");
  In("b", "float32[2,3,1]");
  Node("Concat", {"a", "b"}, {"y"}, {{"axis", AInt(0)}});
  ExpectError({"n0_Concat", "rank 3", "rank 2"});
}

TEST_F(BuiltinOpsTest, ConcatNonAxisMismatch) {
  In("a", "float32[2,3]");
  In("b", "float32[2,4]");
  Node("Concat", {"a", "b"}, {"y"}, {{"axis", AInt(0)}});
  ExpectError({"n0_Concat", "axis 1"});
}

TEST_F(BuiltinOpsTest, SplitEqualAndSizes) {
  In("x", "float32[batch,12]");
  Ints("sizes", {2, 4, 6});
  Node("Split", {"x"}, {"a", "b"}, {{"axis", AInt(1)}});
  Node("Split", {"x", "sizes"}, {"c", "d", "e"}, {{"axis", AInt(-1)}});
  Node("Split", {"x"}, {"f", "g"}, {{"axis", AInt(1)}, {"split", AInts({5, 7})}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,6]");
  EXPECT_EQ(T("b"), "float32[batch,6]");
  EXPECT_EQ(T("c"), "float32[batch,2]");
  EXPECT_EQ(T("e"), "float32[batch,6]");
  EXPECT_EQ(T("g"), "float32[batch,7]");
}

TEST_F(BuiltinOpsTest, SplitSymbolicAndEmptySplitInput) {
  In("x", "float32[batch,12]");
  Ints("empty", {});
  Node("Split", {"x", "empty"}, {"a", "b", "c"}, {{"axis", AInt(1)}});
  Node("Split", {"x"}, {"d", "e"});
  Node("Split", {"x"}, {"f"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,4]");
  EXPECT_EQ(T("d"), "float32[?,12]");
  EXPECT_EQ(T("f"), "float32[batch,12]");
}

TEST_F(BuiltinOpsTest, SplitNumOutputsUneven) {
  In("x", "float32[10]");
  Node("Split", {"x"}, {"a", "b", "c"}, {{"num_outputs", AInt(3)}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[4]");
  EXPECT_EQ(T("c"), "float32[2]");
}

TEST_F(BuiltinOpsTest, SplitSizesMustSum) {
  In("x", "float32[4,12]");
  Node("Split", {"x"}, {"a", "b"}, {{"axis", AInt(1)}, {"split", AInts({5, 5})}});
  ExpectError({"n0_Split", "sum", "12"});
}

TEST_F(BuiltinOpsTest, SplitUnevenWithoutNumOutputs) {
  In("x", "float32[10]");
  Node("Split", {"x"}, {"a", "b", "c"});
  ExpectError({"n0_Split", "evenly"});
}

TEST_F(BuiltinOpsTest, SliceNegativeIndicesAndSteps) {
  In("x", "float32[10,20,batch]");
  Ints("starts", {-3, 18});
  Ints("ends", {kMax, 2});
  Ints("axes", {0, -2});
  Ints("steps", {1, -4});
  Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  RUN_OK();
  // axis 0: [7, 10) -> 3; axis 1: 18, 14, 10, 6 -> 4.
  EXPECT_EQ(T("y"), "float32[3,4,batch]");
}

TEST_F(BuiltinOpsTest, SliceSymbolicFullRangeKeepsSymbol) {
  In("x", "float32[batch,seq]");
  Ints("s", {0, 1});
  Ints("e", {kMax, kMax});
  Node("Slice", {"x", "s", "e"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,?]");
}

TEST_F(BuiltinOpsTest, SliceOldAttributeForm) {
  In("x", "float32[8,8]");
  Node("Slice", {"x"}, {"y"}, {{"starts", AInts({2})}, {"ends", AInts({6})}, {"axes", AInts({1})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[8,4]");
}

TEST_F(BuiltinOpsTest, SliceDynamicStartsKeepsRank) {
  In("x", "float32[8,8]");
  In("s", "int64[1]");
  Ints("e", {6});
  Ints("axes", {1});
  Node("Slice", {"x", "s", "e", "axes"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[8,?]");
}

TEST_F(BuiltinOpsTest, SliceZeroStep) {
  In("x", "float32[8]");
  Ints("s", {0});
  Ints("e", {4});
  Ints("a", {0});
  Ints("st", {0});
  Node("Slice", {"x", "s", "e", "a", "st"}, {"y"});
  ExpectError({"n0_Slice", "steps"});
}

TEST_F(BuiltinOpsTest, GatherShapes) {
  In("emb", "float32[30522,768]");
  In("ids", "int64[batch,seq]");
  Node("Gather", {"emb", "ids"}, {"y"});
  In("x", "float32[batch,seq,768]");
  Scalar("last", -1);
  Node("Gather", {"x", "last"}, {"z"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,seq,768]");
  EXPECT_EQ(T("z"), "float32[batch,768]");
}

TEST_F(BuiltinOpsTest, GatherAxisOutOfRange) {
  In("x", "float32[2,3]");
  In("i", "int64[4]");
  Node("Gather", {"x", "i"}, {"y"}, {{"axis", AInt(2)}});
  ExpectError({"n0_Gather", "attribute 'axis' value 2", "rank 2"});
}

TEST_F(BuiltinOpsTest, GatherConstantIndexOutOfRange) {
  In("x", "float32[2,3]");
  Ints("i", {0, 3});
  Node("Gather", {"x", "i"}, {"y"}, {{"axis", AInt(1)}});
  ExpectError({"n0_Gather", "indices value 3"});
}

TEST_F(BuiltinOpsTest, SqueezeOldAndNewForms) {
  In("x", "float32[1,batch,1,4]");
  Ints("axes", {0, -2});
  Node("Squeeze", {"x", "axes"}, {"a"});
  Node("Squeeze", {"x"}, {"b"}, {{"axes", AInts({0})}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,4]");
  EXPECT_EQ(T("b"), "float32[batch,1,4]");
}

TEST_F(BuiltinOpsTest, SqueezeWithoutAxes) {
  In("x", "float32[1,3,1]");
  In("s", "float32[1,batch]");
  Node("Squeeze", {"x"}, {"a"});
  Node("Squeeze", {"s"}, {"b"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[3]");
  // "batch" may be 1: the rank is not known.
  EXPECT_EQ(T("b"), "float32[?..]");
}

TEST_F(BuiltinOpsTest, SqueezeNonUnitAxis) {
  In("x", "float32[2,3]");
  Node("Squeeze", {"x"}, {"a"}, {{"axes", AInts({1})}});
  ExpectError({"n0_Squeeze", "axis 1", "size 3"});
}

TEST_F(BuiltinOpsTest, UnsqueezeOldAndNewForms) {
  In("x", "float32[batch,4]");
  Ints("axes", {0, -1});
  Node("Unsqueeze", {"x", "axes"}, {"a"});
  Node("Unsqueeze", {"x"}, {"b"}, {{"axes", AInts({1})}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[1,batch,4,1]");
  EXPECT_EQ(T("b"), "float32[batch,1,4]");
}

TEST_F(BuiltinOpsTest, UnsqueezeDuplicateAxes) {
  In("x", "float32[4]");
  Ints("axes", {0, 0});
  Node("Unsqueeze", {"x", "axes"}, {"a"});
  ExpectError({"n0_Unsqueeze", "input 'axes'", "repeats"});
}

TEST_F(BuiltinOpsTest, ExpandBroadcastsWithShapeInput) {
  In("x", "float32[3,1]");
  Ints("s", {2, 1, 6});
  Node("Expand", {"x", "s"}, {"y"});
  In("b", "float32[batch,1]");
  Node("Shape", {"b"}, {"bs"});
  In("v", "float32[1,4]");
  Node("Expand", {"v", "bs"}, {"z"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[2,3,6]");
  EXPECT_EQ(T("z"), "float32[batch,4]");
}

TEST_F(BuiltinOpsTest, ExpandIncompatible) {
  In("x", "float32[3]");
  Ints("s", {4});
  Node("Expand", {"x", "s"}, {"y"});
  ExpectError({"n0_Expand", "cannot expand"});
}

TEST_F(BuiltinOpsTest, TileAndPad) {
  In("x", "float32[batch,3]");
  Ints("r", {1, 4});
  Ints("p", {0, 1, 0, 2});
  Node("Tile", {"x", "r"}, {"t"});
  Node("Pad", {"x", "p"}, {"p1"});
  Node("Pad", {"x"}, {"p2"}, {{"pads", AInts({1, 0, 1, 0})}});
  RUN_OK();
  EXPECT_EQ(T("t"), "float32[batch,12]");
  EXPECT_EQ(T("p1"), "float32[batch,6]");
  EXPECT_EQ(T("p2"), "float32[?,3]");
}

// --- Constants ----------------------------------------------------------------------------------

TEST_F(BuiltinOpsTest, ConstantForms) {
  Node("Constant", {}, {"t"}, {{"value", ATensor(FloatTensor({1, 2, 3, 4, 5, 6}, {2, 3}))}});
  Node("Constant", {}, {"f"}, {{"value_float", AFloat(1.5f)}});
  Node("Constant", {}, {"is"}, {{"value_ints", AInts({4, -1})}});
  Node("Constant", {}, {"i"}, {{"value_int", AInt(7)}});
  RUN_OK();
  EXPECT_EQ(T("t"), "float32[2,3]");
  EXPECT_EQ(T("f"), "float32[]");
  EXPECT_EQ(T("is"), "int64[2]");
  EXPECT_EQ(DimsValue("is"), "[4,-1]");
  EXPECT_EQ(T("i"), "int64[]");
}

TEST_F(BuiltinOpsTest, ConstantNeedsExactlyOneValue) {
  Node("Constant", {}, {"t"}, {{"value_int", AInt(1)}, {"value_float", AFloat(1.f)}});
  ExpectError({"n0_Constant", "exactly one"});
}

TEST_F(BuiltinOpsTest, ConstantTensorFeedsReshape) {
  In("x", "float32[batch,6]");
  Node("Constant", {}, {"s"}, {{"value", ATensor(Int64Tensor({0, 2, 3}))}});
  Node("Reshape", {"x", "s"}, {"y"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[batch,2,3]");
}

TEST_F(BuiltinOpsTest, ConstantOfShapeAndRange) {
  In("x", "float32[batch,4]");
  Node("Shape", {"x"}, {"s"});
  Node("ConstantOfShape", {"s"}, {"z"});
  v1::Tensor one = Int64Tensor({1}, false);
  Node("ConstantOfShape", {"s"}, {"o"}, {{"value", ATensor(one)}});
  Scalar("start", 2);
  Scalar("limit", 11);
  Scalar("delta", 3);
  Node("Range", {"start", "limit", "delta"}, {"r"});
  RUN_OK();
  EXPECT_EQ(T("z"), "float32[batch,4]");
  EXPECT_EQ(T("o"), "int64[batch,4]");
  EXPECT_EQ(T("r"), "int64[3]");
  EXPECT_EQ(DimsValue("r"), "[2,5,8]");
}

TEST_F(BuiltinOpsTest, CastOfShapeKeepsDimsValue) {
  In("x", "float32[batch,4]");
  Node("Shape", {"x"}, {"s"});
  Node("Cast", {"s"}, {"s32"}, {{"to", AInt(v1::DT_INT32)}});
  Node("Cast", {"s"}, {"sf"}, {{"to", AInt(v1::DT_FLOAT32)}});
  RUN_OK();
  EXPECT_EQ(DimsValue("s32"), "[batch,4]");
  EXPECT_EQ(DimsValue("sf"), "none");
}

TEST_F(BuiltinOpsTest, ReshapeFromPartiallyKnownDimsValue) {
  In("x", "float32[batch,3,4]");
  In("dyn", "int64[1]");
  Ints("first", {0});
  Ints("m1", {-1});
  Node("Shape", {"x"}, {"s"});
  Node("Gather", {"s", "first"}, {"b"});
  Node("Concat", {"b", "dyn"}, {"t1"}, {{"axis", AInt(0)}});
  Node("Reshape", {"x", "t1"}, {"y1"});
  Node("Concat", {"dyn", "m1"}, {"t2"}, {{"axis", AInt(0)}});
  Node("Reshape", {"x", "t2"}, {"y2"});
  RUN_OK();
  EXPECT_EQ(DimsValue("t1"), "[batch,?]");
  EXPECT_EQ(T("y1"), "float32[batch,?]");
  EXPECT_EQ(DimsValue("t2"), "[?,-1]");
  EXPECT_EQ(T("y2"), "float32[?,?]");
}

TEST_F(BuiltinOpsTest, GatherOfDimsValueWithNegativeIndices) {
  In("x", "float32[batch,seq,768]");
  Ints("idx", {-1, 0});
  Node("Shape", {"x"}, {"s"});
  Node("Gather", {"s", "idx"}, {"g"});
  RUN_OK();
  EXPECT_EQ(T("g"), "int64[2]");
  EXPECT_EQ(DimsValue("g"), "[768,batch]");
}

TEST_F(BuiltinOpsTest, LargeConstantIsNoDimsValue) {
  std::vector<int64_t> many(65, 1);
  Ints("big", many);
  Node("Identity", {"big"}, {"y"});
  Ints("small", {1, 2});
  Node("Identity", {"small"}, {"z"});
  RUN_OK();
  EXPECT_EQ(T("y"), "int64[65]");
  EXPECT_EQ(DimsValue("y"), "none");
  EXPECT_EQ(DimsValue("z"), "[1,2]");
}

TEST_F(BuiltinOpsTest, FlattenAxisOutOfRangeNamesAttribute) {
  In("x", "float32[2,3]");
  Node("Flatten", {"x"}, {"y"}, {{"axis", AInt(3)}});
  ExpectError({"n0_Flatten", "attribute 'axis' value 3", "rank 2"});
}

TEST_F(BuiltinOpsTest, ConcatWithUnknownRankInputs) {
  In("a", "float32[?..]");
  In("b", "float32[batch,3]");
  Node("Concat", {"a", "a"}, {"y"}, {{"axis", AInt(0)}});
  Node("Concat", {"a", "b"}, {"z"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?..]");
  EXPECT_EQ(T("z"), "float32[batch,?]");
}

TEST_F(BuiltinOpsTest, ConcatAxisSumOfKnownSizes) {
  In("a", "float32[2,batch]");
  In("b", "float32[5,batch]");
  In("e", "float32[0,batch]");
  In("c", "float32[seq,batch]");
  Node("Concat", {"a", "b"}, {"y"}, {{"axis", AInt(0)}});
  Node("Concat", {"c", "e"}, {"z"}, {{"axis", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[7,batch]");
  EXPECT_EQ(T("z"), "float32[seq,batch]");
}

TEST_F(BuiltinOpsTest, GemmRejectsNon2D) {
  In("a", "float32[2,3,4]");
  In("b", "float32[4,5]");
  Node("Gemm", {"a", "b"}, {"y"});
  ExpectError({"n0_Gemm", "input A", "2-D"});
}

TEST_F(BuiltinOpsTest, ReduceAxesBothAttributeAndInput) {
  In("x", "float32[2,3]");
  Ints("axes", {0});
  Node("ReduceSum", {"x", "axes"}, {"y"}, {{"axes", AInts({0})}});
  ExpectError({"n0_ReduceSum", "axes", "both"});
}

TEST_F(BuiltinOpsTest, SqueezeAndUnsqueezeWithDynamicAxes) {
  In("x", "float32[1,3]");
  In("axes", "int64[1]");
  Node("Squeeze", {"x", "axes"}, {"a"});
  Node("Unsqueeze", {"x", "axes"}, {"b"});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[?..]");
  EXPECT_EQ(T("b"), "float32[?..]");
}

TEST_F(BuiltinOpsTest, UnknownShapesPropagateAsUnknown) {
  In("c", "bool[?..]");
  In("x", "float32[3]");
  In("u", "?");
  Node("Where", {"c", "x", "x"}, {"w"});
  Node("Cast", {"u"}, {"k"}, {{"to", AInt(v1::DT_INT32)}});
  Node("MatMul", {"x", "u"}, {"m"});
  Node("Gather", {"x", "u"}, {"g"});
  RUN_OK();
  EXPECT_EQ(T("w"), "float32[?..]");
  EXPECT_EQ(T("k"), "int32[?..]");
  EXPECT_EQ(T("m"), "float32[?..]");
  EXPECT_EQ(T("g"), "float32[?..]");
}

TEST_F(BuiltinOpsTest, ConvKernelShapeAttributeWithUnknownWeight) {
  In("x", "float32[1,3,9,9]");
  In("w", "float32[?..]");
  Node("Conv", {"x", "w"}, {"y"}, {{"kernel_shape", AInts({3, 3})}, {"strides", AInts({3, 3})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[1,?,3,3]");
}

TEST_F(BuiltinOpsTest, ConvWindowLargerThanInput) {
  In("x", "float32[1,3,2,2]");
  In("w", "float32[4,3,5,5]");
  Node("Conv", {"x", "w"}, {"y"});
  ExpectError({"n0_Conv", "spatial axis 0", "does not fit"});
}

// --- Robustness ---------------------------------------------------------------------------------

TEST_F(BuiltinOpsTest, EveryOpToleratesUnknownInputs) {
  // Each op with all declared inputs present but of unknown type: no crash, and either OK or a
  // clean INVALID_ARGUMENT (ops with required attributes).
  for (const OpDef* op : registry_.List()) {
    Graph g;
    std::vector<ValueId> in, out;
    for (int i = 0; i < op->descriptor.inputs_size(); ++i) {
      in.push_back(*g.AddValue("i" + std::to_string(i)));
      g.AddGraphInput(in.back());
    }
    for (int i = 0; i < op->descriptor.outputs_size(); ++i) {
      out.push_back(*g.AddValue("o" + std::to_string(i)));
    }
    NodeId id = *g.AddNode("n", op->descriptor.name(), "", in, out);
    DimsValueTable dims(g.num_value_slots());
    absl::Status s = InferNodeTypes(g, id, *op);
    if (s.ok()) s = InferNodeShapes(g, id, *op, &dims);
    EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument)
        << op->descriptor.name() << ": " << s;
  }
}

TEST_F(BuiltinOpsTest, OverflowingDimsGiveUnknownNotCrash) {
  In("x", "float32[4611686018427387904,4]");
  Node("Flatten", {"x"}, {"y"}, {{"axis", AInt(2)}});
  Ints("r", {4, 4});
  Node("Tile", {"x", "r"}, {"t"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?,1]");
  EXPECT_EQ(T("t"), "float32[?,16]");
}

// --- Opset-dependent semantics ------------------------------------------------------------------

// Imports the default domain at `version` (graphs without an import get the newest semantics).
void SetOpset(Graph& g, int64_t version) {
  v1::OpsetImport o;
  o.set_version(version);
  g.opset_imports = {o};
}

TEST_F(BuiltinOpsTest, LegacyBroadcastBeforeOpset7) {
  SetOpset(graph_, 6);
  In("a", "float32[2,3,4,5]");
  In("b", "float32[3,4]");
  In("s", "float32[n,n]");
  In("k", "float32[2,2]");
  In("x", "float32[2,3]");
  In("col", "float32[2,1]");
  Node("Add", {"a", "b"}, {"c"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  Node("Mul", {"s", "k"}, {"sk"});  // no broadcast: equal shapes, A's dims win
  Node("Sub", {"x", "col"}, {"xc"}, {{"broadcast", AInt(1)}, {"axis", AInt(0)}});
  Node("Div", {"x", "x"}, {"one"}, {{"consumed_inputs", AInts({0, 0})}});
  Node("Pow", {"a", "b"}, {"p"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  Node("Equal", {"a", "b"}, {"e"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[2,3,4,5]");
  EXPECT_EQ(T("sk"), "float32[n,n]");
  EXPECT_EQ(T("xc"), "float32[2,3]");
  EXPECT_EQ(T("one"), "float32[2,3]");
  EXPECT_EQ(T("p"), "float32[2,3,4,5]");
  EXPECT_EQ(T("e"), "bool[2,3,4,5]");
}

TEST_F(BuiltinOpsTest, OpsetOfTheDefaultDomainInEitherSpelling) {
  v1::OpsetImport other;
  other.set_domain("com.example");
  other.set_version(20);
  v1::OpsetImport onnx;
  onnx.set_domain("ai.onnx");
  onnx.set_version(6);
  graph_.opset_imports = {other, onnx};
  In("s", "float32[n,n]");
  In("k", "float32[2,2]");
  Node("Mul", {"s", "k"}, {"sk"});
  RUN_OK();
  EXPECT_EQ(T("sk"), "float32[n,n]");  // opset 6: A's shape
}

TEST_F(BuiltinOpsTest, NumpyBroadcastFromOpset7) {
  SetOpset(graph_, 7);
  In("s", "float32[n,n]");
  In("k", "float32[2,2]");
  Node("Mul", {"s", "k"}, {"sk"});
  RUN_OK();
  EXPECT_EQ(T("sk"), "float32[2,2]");
}

TEST_F(BuiltinOpsTest, LegacyBroadcastWithoutFlagNeedsEqualShapes) {
  SetOpset(graph_, 6);
  In("x", "float32[2,3]");
  In("y", "float32[3]");
  Node("Add", {"x", "y"}, {"z"});
  ExpectError({"n0_Add", "input B [3] must have the shape of A [2,3]", "broadcast=0"});
}

TEST_F(BuiltinOpsTest, LegacyBroadcastChecksAlignedDims) {
  SetOpset(graph_, 6);
  In("a", "float32[2,3,4,5]");
  In("b", "float32[4]");
  Node("Add", {"a", "b"}, {"c"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  ExpectError({"n0_Add", "input B [4] does not match from axis 1 of A [2,3,4,5]"});
}

TEST_F(BuiltinOpsTest, LegacyBroadcastChecksFit) {
  SetOpset(graph_, 6);
  In("a", "float32[2,3]");
  In("b", "float32[3,1]");
  Node("Add", {"a", "b"}, {"c"}, {{"broadcast", AInt(1)}, {"axis", AInt(1)}});
  ExpectError({"n0_Add", "does not fit from axis 1"});
}

TEST_F(BuiltinOpsTest, MinMaxBeforeOpset8KeepFirstShape) {
  SetOpset(graph_, 6);
  In("s", "float32[n]");
  In("k", "float32[2]");
  Node("Max", {"s", "k"}, {"m"});
  Node("Min", {"s", "k", "s"}, {"m2"}, {{"consumed_inputs", AInts({0})}});
  RUN_OK();
  EXPECT_EQ(T("m"), "float32[n]");
  EXPECT_EQ(T("m2"), "float32[n]");
}

TEST_F(BuiltinOpsTest, MinMaxBeforeOpset8RejectBroadcasting) {
  SetOpset(graph_, 7);
  In("a", "float32[2,3]");
  In("b", "float32[3]");
  Node("Max", {"a", "b"}, {"m"});
  ExpectError({"n0_Max", "input 1 [3] differs from input 0 [2,3]", "opsets < 8"});
}

TEST_F(BuiltinOpsTest, MinMaxBroadcastFromOpset8) {
  SetOpset(graph_, 8);
  In("a", "float32[2,3]");
  In("b", "float32[3]");
  Node("Max", {"a", "b"}, {"m"});
  RUN_OK();
  EXPECT_EQ(T("m"), "float32[2,3]");
}

TEST_F(BuiltinOpsTest, DropoutMaskTypeFollowsOpset) {
  In("x", "float32[2,3]");
  SetOpset(graph_, 7);
  Node("Dropout", {"x"}, {"y", "mask"}, {{"is_test", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("mask"), "float32[2,3]");
  SetOpset(graph_, 10);
  RUN_OK();
  EXPECT_EQ(T("mask"), "bool[2,3]");
}

TEST_F(BuiltinOpsTest, BatchNormPerActivationBeforeOpset9) {
  SetOpset(graph_, 7);
  In("x", "float32[n,3,4]");
  In("p", "float32[3,4]");
  Node("BatchNormalization", {"x", "p", "p", "p", "p"}, {"y", "mean", "var"},
       {{"spatial", AInt(0)}, {"is_test", AInt(0)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[n,3,4]");
  EXPECT_EQ(T("mean"), "float32[3,4]");
  // From opset 9 'spatial' is gone: the statistics are per channel again.
  SetOpset(graph_, 9);
  ExpectError({"input 1 (scale) must be 1-D, got [3,4]"});
}

TEST_F(BuiltinOpsTest, ConcatAxisDefaultsToOneBeforeOpset4) {
  SetOpset(graph_, 3);
  In("a", "float32[2,3]");
  In("b", "float32[2,5]");
  Node("Concat", {"a", "b"}, {"c"});
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[2,8]");
  SetOpset(graph_, 4);
  ExpectError({"n0_Concat", "missing required attribute 'axis'"});
}

TEST_F(BuiltinOpsTest, SoftmaxDefaultAxisFollowsOpset) {
  In("x", "float32[5]");
  Node("Softmax", {"x"}, {"y"});
  SetOpset(graph_, 13);  // default -1
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[5]");
  SetOpset(graph_, 11);  // default 1, out of range for rank 1
  ExpectError({"n0_Softmax", "'axis' value 1 is out of range for rank 1"});
  SetOpset(graph_, 1);  // before opset 11 the coercion to 2-D accepts axis == rank
  RUN_OK();
}

TEST_F(BuiltinOpsTest, PadOpset1NamesPadsPaddings) {
  SetOpset(graph_, 1);
  In("x", "float32[2,3]");
  Node("Pad", {"x"}, {"y"}, {{"paddings", AInts({1, 0, 1, 2})}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[4,5]");
}

TEST_F(BuiltinOpsTest, DeclaresOlderOpsetsAttributes) {
  const std::pair<const char*, const char*> kAttrs[] = {
      {"Relu", "consumed_inputs"}, {"Add", "broadcast"},      {"Mul", "axis"},
      {"Pow", "broadcast"},        {"Less", "axis"},          {"Max", "consumed_inputs"},
      {"Clip", "consumed_inputs"}, {"Dropout", "is_test"},    {"Reshape", "consumed_inputs"},
      {"Pad", "paddings"},         {"BatchNormalization", "is_test"}};
  for (const auto& [op, attr] : kAttrs) {
    EXPECT_NE(registry_.Find("", op)->attribute_spec(attr), nullptr) << op << " " << attr;
  }
}

TEST_F(BuiltinOpsTest, ArgMaxTakes16BitIntegers) {
  In("x", "int16[2,3]");
  Node("ArgMax", {"x"}, {"i"}, {{"axis", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("i"), "int64[2,1]");
}

}  // namespace
}  // namespace graphopt

namespace graphopt {
namespace {

// Random but deterministic nodes for every op: dtypes drawn from the type constraints, shapes
// mixing known, symbolic, unknown, zero, negative and huge dims, random constant int operands and
// random attribute values. Inference must return OK or INVALID_ARGUMENT, never crash.
class RandomNodeFuzzer {
 public:
  explicit RandomNodeFuzzer(uint32_t seed) : rng_(seed) {}

  absl::Status RunOnce(const OpDef& op) {
    Graph g;
    const v1::OpDescriptor& d = op.descriptor;
    // One dtype per constraint.
    absl::flat_hash_map<std::string, v1::DataType> bound;
    for (const v1::TypeConstraint& c : d.type_constraints()) {
      bound[c.name()] = static_cast<v1::DataType>(c.allowed(Pick(c.allowed_size())));
    }
    std::vector<ValueId> in;
    int num_inputs = d.inputs_size();
    if (num_inputs > 0 && d.inputs(num_inputs - 1).arity() == v1::ARITY_VARIADIC) {
      num_inputs += Pick(3) - 1;
    }
    for (int i = 0; i < num_inputs; ++i) {
      const v1::ArgSpec* spec = op.input_spec(i);
      if (spec->arity() == v1::ARITY_OPTIONAL && Pick(3) == 0) {
        in.push_back(ValueId());
        continue;
      }
      ValueId v = *g.AddValue("i" + std::to_string(i));
      const v1::DataType dt = spec->type_constraint().empty()
                                  ? v1::DT_FLOAT32
                                  : bound[spec->type_constraint()];
      if ((dt == v1::DT_INT64 || dt == v1::DT_INT32) && Pick(2) == 0) {
        std::vector<int64_t> vals;
        const int n = Pick(5);
        for (int k = 0; k < n; ++k) vals.push_back(RandomInt());
        v1::Tensor t = Int64Tensor(vals, n == 1 && Pick(2) == 0);
        if (dt == v1::DT_INT32) {
          t.set_dtype(v1::DT_INT32);
          std::string raw;
          for (int64_t x : vals) {
            int32_t y = static_cast<int32_t>(x);
            raw.append(reinterpret_cast<const char*>(&y), 4);
          }
          t.set_raw_data(raw);
        }
        g.mutable_value(v).type.dtype = dt;
        if (Pick(2) == 0) g.mutable_value(v).type.shape = ShapeFromDimsList(t);
        g.SetInitializer(v, std::move(t));
      } else {
        g.AddGraphInput(v);
        g.mutable_value(v).type = RandomType(dt);
      }
      in.push_back(v);
    }
    std::vector<ValueId> out;
    int num_outputs = d.outputs_size();
    if (d.outputs(num_outputs - 1).arity() == v1::ARITY_VARIADIC) num_outputs += Pick(3) - 1;
    for (int i = 0; i < num_outputs; ++i) {
      const v1::ArgSpec* spec = op.output_spec(i);
      if (spec->arity() == v1::ARITY_OPTIONAL && Pick(2) == 0) {
        out.push_back(ValueId());
      } else {
        out.push_back(*g.AddValue("o" + std::to_string(i)));
      }
    }
    AttributeMap attrs;
    for (const v1::AttributeSpec& a : d.attributes()) {
      if (a.required() || Pick(2) == 0) attrs[a.name()] = RandomAttr(a.type());
    }
    NodeId id = *g.AddNode("fuzz", d.name(), "", in, out, std::move(attrs));
    // Sometimes an old opset, for the rules whose semantics depend on it.
    if (Pick(3) == 0) {
      v1::OpsetImport opset;
      opset.set_version(1 + Pick(17));
      g.opset_imports.push_back(opset);
    }
    DimsValueTable dims(g.num_value_slots());
    // Sometimes seed dims values for int inputs, as an upstream Shape would.
    for (ValueId v : in) {
      if (v.valid() && Pick(3) == 0) dims[v.value()] = RandomDims();
    }
    absl::Status s = InferNodeTypes(g, id, op);
    if (s.ok()) s = InferNodeShapes(g, id, op, &dims);
    return s;
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  int64_t RandomInt() {
    static constexpr int64_t kValues[] = {-3, -2, -1, 0, 1, 1, 2, 3, 4, 7,
                                          std::numeric_limits<int64_t>::max(),
                                          std::numeric_limits<int64_t>::min()};
    return kValues[Pick(sizeof(kValues) / sizeof(kValues[0]))];
  }
  Dim RandomDim() {
    switch (Pick(9)) {
      case 0:
        return Dim::Unknown();
      case 1:
        return Dim::Symbol("batch");
      case 2:
        return Dim::Symbol("seq");
      case 3:
        return Dim::Known(0);
      case 4:
        return Dim::Known(Pick(10) == 0 ? -1 : int64_t{1} << 62);
      default:
        return Dim::Known(1 + Pick(4));
    }
  }
  Dims RandomDims() {
    Dims d;
    const int n = Pick(5);
    for (int i = 0; i < n; ++i) d.push_back(Pick(2) ? Dim::Known(RandomInt()) : RandomDim());
    return d;
  }
  TensorType RandomType(v1::DataType dt) {
    TensorType t;
    if (Pick(8) == 0) return t;  // nothing known
    t.dtype = dt;
    if (Pick(6) == 0) return t;  // rank unknown
    t.shape.emplace();
    const int rank = Pick(6);
    for (int i = 0; i < rank; ++i) t.shape->push_back(RandomDim());
    return t;
  }
  v1::Attribute RandomAttr(v1::AttributeType type) {
    v1::Attribute a;
    switch (type) {
      case v1::ATTR_INT:
        a.set_i(Pick(4) == 0 ? RandomInt() : Pick(3));
        break;
      case v1::ATTR_FLOAT:
        a.set_f(0.5f);
        break;
      case v1::ATTR_STRING: {
        static constexpr const char* kStrings[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER",
                                                   "VALID",  "constant",   "bogus"};
        a.set_s(kStrings[Pick(6)]);
        break;
      }
      case v1::ATTR_INTS: {
        const int n = Pick(7);
        for (int i = 0; i < n; ++i) {
          a.mutable_ints()->add_values(Pick(3) == 0 ? RandomInt() : Pick(4));
        }
        break;
      }
      case v1::ATTR_FLOATS:
        a.mutable_floats()->add_values(1.0f);
        break;
      case v1::ATTR_STRINGS:
        a.mutable_strings()->add_values("s");
        break;
      case v1::ATTR_TENSOR: {
        std::vector<int64_t> vals;
        const int n = Pick(3);
        for (int i = 0; i < n; ++i) vals.push_back(RandomInt());
        *a.mutable_t() = Int64Tensor(vals, n == 1 && Pick(2) == 0);
        break;
      }
      default:
        a.set_i(0);
        break;
    }
    return a;
  }

  std::mt19937 rng_;
};

TEST(BuiltinOpsFuzzTest, RandomNodesNeverCrash) {
  OpRegistry registry;
  ASSERT_TRUE(RegisterBuiltinOps(&registry).ok());
  RandomNodeFuzzer fuzzer(20240611);
  int ok = 0;
  for (const OpDef* op : registry.List()) {
    for (int i = 0; i < 300; ++i) {
      absl::Status s = fuzzer.RunOnce(*op);
      ASSERT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument)
          << op->descriptor.name() << ": " << s;
      ok += s.ok();
    }
  }
  // A good share of the random nodes are valid, so the shape functions themselves ran.
  EXPECT_GT(ok, 65 * 300 / 5);
}

}  // namespace
}  // namespace graphopt

namespace graphopt {
namespace {

TEST_F(BuiltinOpsTest, RecurrentOps) {
  In("x", "float32[seq,batch,8]");
  In("xb", "float32[batch,seq,8]");
  In("w", "float32[1,64,8]");
  In("r", "float32[1,64,16]");
  In("w2", "float32[2,48,8]");
  Node("LSTM", {"x", "w", "r"}, {"y", "yh", "yc"}, {{"hidden_size", AInt(16)}});
  Node("LSTM", {"x", "w", "r"}, {"", "h_only"});  // hidden_size from R
  Node("GRU", {"x", "w2", "w2"}, {"gy", "gh"},
       {{"hidden_size", AInt(16)}, {"direction", AString("bidirectional")}});
  Node("RNN", {"xb", "w", "r"}, {"ry", "rh"}, {{"hidden_size", AInt(4)}, {"layout", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[seq,1,batch,16]");
  EXPECT_EQ(T("yh"), "float32[1,batch,16]");
  EXPECT_EQ(T("yc"), "float32[1,batch,16]");
  EXPECT_EQ(T("h_only"), "float32[1,batch,16]");
  EXPECT_EQ(T("gy"), "float32[seq,2,batch,16]");
  EXPECT_EQ(T("ry"), "float32[batch,seq,1,4]");
  EXPECT_EQ(T("rh"), "float32[batch,1,4]");
}

TEST_F(BuiltinOpsTest, RecurrentBadDirection) {
  In("x", "float32[2,1,8]");
  In("w", "float32[1,64,8]");
  Node("LSTM", {"x", "w", "w"}, {"y"}, {{"direction", AString("sideways")}});
  ExpectError({"n0_LSTM", "attribute 'direction' must be forward, reverse or bidirectional"});
}

}  // namespace
}  // namespace graphopt
