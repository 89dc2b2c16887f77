#include "client/run_model.h"

#include <cstdio>
#include <fstream>

#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "runtime/float16.h"
#include "onnx/onnx-data_pb.h"
#include "runtime/npy.h"

namespace graphopt {
namespace {

Graph TwoInputGraph() {
  v1::Graph proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    nodes { op_type: "Identity" inputs: "x" outputs: "y" }
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 3 } } } }
    inputs { name: "ids" type { dtype: DT_INT64 shape { dims { size: 2 } } } }
    outputs { name: "y" }
  )pb", &proto));
  return *GraphFromProto(proto);
}

TEST(ParseInputSpecsTest, ParsesAndRejects) {
  absl::StatusOr<std::vector<InputSpec>> specs = ParseInputSpecs({"x=a.npy", "y=b/c.npy"});
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ((*specs)[1].npy_path, "b/c.npy");
  EXPECT_FALSE(ParseInputSpecs({"x"}).ok());
  EXPECT_FALSE(ParseInputSpecs({"=a.npy"}).ok());
  EXPECT_FALSE(ParseInputSpecs({"x=a", "x=b"}).ok());
}

TEST(PrepareInputsTest, RandomInputsFollowTypesBindingsAndSeed) {
  Graph g = TwoInputGraph();
  auto a = PrepareInputs(g, {}, {{"batch", 4}}, 7);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].second.DebugString(), "float32[4,3]");
  EXPECT_EQ((*a)[1].second.DebugString(), "int64[2]");
  for (int64_t i = 0; i < 12; ++i) {
    const float v = (*a)[0].second.data<float>()[i];
    EXPECT_GE(v, -1);
    EXPECT_LT(v, 1);
  }
  auto b = PrepareInputs(g, {}, {{"batch", 4}}, 7);
  EXPECT_EQ((*a)[0].second.data<float>()[5], (*b)[0].second.data<float>()[5]);
  auto unbound = PrepareInputs(g, {}, {}, 7);
  EXPECT_EQ((*unbound)[0].second.DebugString(), "float32[1,3]");
}

TEST(PrepareInputsTest, ReadsNpyAndRejectsUnknownNames) {
  Graph g = TwoInputGraph();
  const std::string path = ::testing::TempDir() + "/x.npy";
  runtime::Tensor t = runtime::Tensor::FromVector<float>(v1::DT_FLOAT32, {1, 2, 3}, {1, 3});
  std::ofstream(path, std::ios::binary) << *runtime::SerializeNpy(t);
  auto in = PrepareInputs(g, {{"x", path}}, {}, 0);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ((*in)[0].second.data<float>()[2], 3);
  auto bad = PrepareInputs(g, {{"nope", path}}, {}, 0);
  EXPECT_NE(bad.status().message().find("nope"), std::string::npos);
}

// A bfloat16 input and a string input.
Graph TypedInputsGraph() {
  v1::Graph proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    nodes { op_type: "Identity" inputs: "h" outputs: "y" }
    nodes { op_type: "Identity" inputs: "s" outputs: "t" }
    inputs { name: "h" type { dtype: DT_BFLOAT16 shape { dims { size: 3 } } } }
    inputs { name: "s" type { dtype: DT_STRING shape { dims { size: 2 } } } }
    outputs { name: "y" }
    outputs { name: "t" }
  )pb", &proto));
  return *GraphFromProto(proto);
}

void WriteNpy(const std::string& path, const runtime::Tensor& t) {
  std::ofstream(path, std::ios::binary) << *runtime::SerializeNpy(t);
}

TEST(PrepareInputsTest, BFloat16FromFloat32AndStringsFromUnicodeFiles) {
  Graph g = TypedInputsGraph();
  const std::string h = ::testing::TempDir() + "/h.npy";
  const std::string s = ::testing::TempDir() + "/s.npy";
  // 1 + 2^-8 is a tie between two bfloat16 values: nearest even is 1.0 (0x3f80).
  WriteNpy(h, runtime::Tensor::FromVector<float>(v1::DT_FLOAT32, {1.00390625f, -2, 0.5f}, {3}));
  runtime::Tensor strings = runtime::Tensor::Allocate(v1::DT_STRING, {2}).value();
  strings.strings()[0] = "caf\xc3\xa9";
  strings.strings()[1] = "";
  WriteNpy(s, strings);
  auto in = PrepareInputs(g, {{"h", h}, {"s", s}}, {}, 0);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ((*in)[0].second.DebugString(), "bfloat16[3]");
  EXPECT_EQ((*in)[0].second.data<runtime::BFloat16>()[0].bits, 0x3f80);
  EXPECT_EQ((*in)[0].second.data<runtime::BFloat16>()[1].bits, 0xc000);
  EXPECT_EQ((*in)[0].second.data<runtime::BFloat16>()[2].bits, 0x3f00);
  EXPECT_EQ((*in)[1].second.DebugString(), "string[2]");
  EXPECT_EQ((*in)[1].second.strings()[0], "caf\xc3\xa9");
  EXPECT_EQ((*in)[1].second.strings()[1], "");
}

TEST(PrepareInputsTest, AFileOfAnotherDtypeNamesTheInput) {
  Graph g = TypedInputsGraph();
  const std::string path = ::testing::TempDir() + "/f64.npy";
  WriteNpy(path, runtime::Tensor::FromVector<double>(v1::DT_FLOAT64, {1, 2, 3}, {3}));
  auto in = PrepareInputs(g, {{"h", path}}, {}, 0);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(in.status().message().find("--input 'h'"), std::string::npos) << in.status();
  EXPECT_NE(in.status().message().find("holds float64"), std::string::npos) << in.status();
  in = PrepareInputs(g, {{"s", path}}, {}, 0);
  EXPECT_NE(in.status().message().find("--input 's'"), std::string::npos) << in.status();
}

TEST(PrepareInputsTest, ReadsAnOnnxSequenceForASequenceInput) {
  v1::Graph proto;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    nodes { op_type: "SequenceLength" inputs: "s" outputs: "n" }
    inputs { name: "s" type { dtype: DT_FLOAT32 kind: VALUE_SEQUENCE } }
    outputs { name: "n" }
  )pb", &proto));
  Graph g = *GraphFromProto(proto);
  // No random values for a sequence: the error says how to give one.
  auto random = PrepareInputs(g, {}, {}, 0);
  ASSERT_FALSE(random.ok());
  EXPECT_NE(random.status().message().find("s=FILE.pb"), std::string::npos) << random.status();

  onnx::SequenceProto seq;
  seq.set_elem_type(onnx::SequenceProto::TENSOR);
  for (float v : {1.0f, 2.0f}) {
    onnx::TensorProto* t = seq.add_tensor_values();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(v);
  }
  const std::string path = ::testing::TempDir() + "/s.pb";
  std::ofstream(path, std::ios::binary) << seq.SerializeAsString();
  auto in = PrepareInputs(g, {{"s", path}}, {}, 0);
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ((*in)[0].second.kind(), v1::VALUE_SEQUENCE);
  EXPECT_EQ((*in)[0].second.items().size(), 2u);
}

TEST(FormatTest, SummaryProfileAndFileNames) {
  runtime::Tensor t = runtime::Tensor::FromVector<float>(v1::DT_FLOAT32, {1, -2, 3, 4, 5}, {5});
  const std::string s = FormatTensorSummary("y", t);
  EXPECT_NE(s.find("float32[5]"), std::string::npos);
  EXPECT_NE(s.find("min -2 max 5 mean 2.2"), std::string::npos);
  EXPECT_NE(s.find("..."), std::string::npos);
  const std::string p = FormatProfile({{"a", "Conv", 300}, {"b", "Relu", 100}, {"c", "Conv", 600}});
  EXPECT_NE(p.find("Conv"), std::string::npos);
  EXPECT_LT(p.find("Conv"), p.find("Relu"));
  EXPECT_NE(p.find("90.0%"), std::string::npos);
  EXPECT_EQ(NpyFileName("a/b:0"), "a_b_0.npy");
  EXPECT_EQ(NpyFileName(".."), "_...npy");
  // "a/b" and "a_b" both map to a_b.npy: the second does not overwrite the first.
  EXPECT_EQ(NpyFileNames({"a/b", "a_b", "a:b", "a_b_2", "y", "y"}),
            (std::vector<std::string>{"a_b.npy", "a_b_2.npy", "a_b_3.npy", "a_b_2_2.npy", "y.npy",
                                      "y.npy"}));
}

TEST(ProfileMedianTest, EachNodeGetsItsMedianAndAnotherPlanStartsOver) {
  ProfileMedian p;
  EXPECT_TRUE(p.Median().empty());
  p.Add({{"a", "Conv", 10}, {"b", "Relu", 1}});
  p.Add({{"a", "Conv", 30}, {"b", "Relu", 5}});
  p.Add({{"a", "Conv", 20}, {"b", "Relu", 100}});
  std::vector<runtime::NodeTiming> m = p.Median();
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].node, "a");
  EXPECT_EQ(m[0].op_type, "Conv");
  EXPECT_EQ(m[0].micros, 20);
  EXPECT_EQ(m[1].micros, 5);
  EXPECT_EQ(p.runs(), 3);
  // Other nodes: the runs before are dropped.
  p.Add({{"c", "Add", 7}});
  m = p.Median();
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].node, "c");
  EXPECT_EQ(m[0].micros, 7);
  EXPECT_EQ(p.runs(), 1);
}

TEST(ProfileMedianTest, KeepsOnlyTheLastRuns) {
  ProfileMedian p;
  // kMaxRuns runs of 1000 us, then kMaxRuns of 1 us: the first ones are all overwritten.
  for (int i = 0; i < ProfileMedian::kMaxRuns; ++i) p.Add({{"a", "Conv", 1000}});
  for (int i = 0; i < ProfileMedian::kMaxRuns; ++i) p.Add({{"a", "Conv", 1}});
  EXPECT_EQ(p.runs(), ProfileMedian::kMaxRuns);
  EXPECT_EQ(p.Median()[0].micros, 1);
}

}  // namespace
}  // namespace graphopt
