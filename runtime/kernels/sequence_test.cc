#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Seq(std::vector<Tensor> items) {
  const v1::DataType dtype = items.empty() ? v1::DT_FLOAT32 : items[0].dtype();
  return Tensor::Sequence(dtype, std::move(items));
}

// The first element of each item of a sequence of float tensors.
std::vector<float> Firsts(const Tensor& seq) {
  std::vector<float> out;
  for (const Tensor& t : seq.items()) out.push_back(ToFloats(t)[0]);
  return out;
}

absl::StatusOr<Tensor> Run1(const std::string& op, const std::vector<std::string>& attributes,
                            const std::vector<Tensor>& inputs) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(op, attributes, inputs, 1);
  if (!out.ok()) return out.status();
  return (*out)[0];
}

TEST(SequenceTest, EmptyHasTheAttributeDType) {
  absl::StatusOr<Tensor> s = Run1("SequenceEmpty", {R"(name: "dtype" i: 7)"}, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->kind(), v1::VALUE_SEQUENCE);
  EXPECT_EQ(s->element_dtype(), v1::DT_INT64);
  EXPECT_TRUE(s->items().empty());
}

TEST(SequenceTest, ConstructKeepsOrderAndCopiesItems) {
  Tensor a = F32({1, 2}, {2});
  absl::StatusOr<Tensor> s = Run1("SequenceConstruct", {}, {a, F32({3}, {1})});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->items().size(), 2u);
  EXPECT_THAT(ToFloats(s->items()[0]), ElementsAre(1, 2));
  EXPECT_THAT(ToFloats(s->items()[1]), ElementsAre(3));
  // An item owns its elements: it never views the tensor it was built from.
  EXPECT_NE(s->items()[0].buffer(), a.buffer());
}

TEST(SequenceTest, ConstructRefusesMixedDTypes) {
  absl::StatusOr<Tensor> s = Run1("SequenceConstruct", {}, {F32({1}, {1}), I64({1}, {1})});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("one element type"));
}

TEST(SequenceTest, InsertAtPositionsAndAtTheEnd) {
  const Tensor seq = Seq({F32({1}, {1}), F32({2}, {1})});
  absl::StatusOr<Tensor> back = Run1("SequenceInsert", {}, {seq, F32({9}, {1})});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(Firsts(*back), ElementsAre(1, 2, 9));
  absl::StatusOr<Tensor> front = Run1("SequenceInsert", {}, {seq, F32({9}, {1}), I64({0}, {})});
  ASSERT_TRUE(front.ok()) << front.status();
  EXPECT_THAT(Firsts(*front), ElementsAre(9, 1, 2));
  absl::StatusOr<Tensor> neg = Run1("SequenceInsert", {}, {seq, F32({9}, {1}), I64({-1}, {})});
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_THAT(Firsts(*neg), ElementsAre(1, 9, 2));
  // The input sequence is unchanged (values are immutable).
  EXPECT_THAT(Firsts(seq), ElementsAre(1, 2));
}

TEST(SequenceTest, InsertRefusesOutOfRangeAndWrongDType) {
  const Tensor seq = Seq({F32({1}, {1})});
  absl::StatusOr<Tensor> far = Run1("SequenceInsert", {}, {seq, F32({9}, {1}), I64({3}, {})});
  ASSERT_FALSE(far.ok());
  EXPECT_THAT(far.status().message(), HasSubstr("out of range"));
  absl::StatusOr<Tensor> dtype = Run1("SequenceInsert", {}, {seq, I64({9}, {1})});
  ASSERT_FALSE(dtype.ok());
  EXPECT_THAT(dtype.status().message(), HasSubstr("cannot join"));
}

TEST(SequenceTest, AtEraseAndLength) {
  const Tensor seq = Seq({F32({1}, {1}), F32({2}, {1}), F32({3}, {1})});
  absl::StatusOr<Tensor> at = Run1("SequenceAt", {}, {seq, I64({-1}, {})});
  ASSERT_TRUE(at.ok()) << at.status();
  EXPECT_THAT(ToFloats(*at), ElementsAre(3));
  EXPECT_FALSE(Run1("SequenceAt", {}, {seq, I64({3}, {})}).ok());

  absl::StatusOr<Tensor> erased = Run1("SequenceErase", {}, {seq, I64({1}, {})});
  ASSERT_TRUE(erased.ok()) << erased.status();
  EXPECT_THAT(Firsts(*erased), ElementsAre(1, 3));
  absl::StatusOr<Tensor> last = Run1("SequenceErase", {}, {seq});
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_THAT(Firsts(*last), ElementsAre(1, 2));

  absl::StatusOr<Tensor> n = Run1("SequenceLength", {}, {seq});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->dtype(), v1::DT_INT64);
  EXPECT_EQ(n->rank(), 0);
  EXPECT_THAT(ToInts(*n), ElementsAre(3));
}

TEST(SequenceTest, SplitToSequenceBySizesChunkAndOnes) {
  const Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  absl::StatusOr<Tensor> sizes =
      Run1("SplitToSequence", {R"(name: "axis" i: 1)"}, {x, I64({1, 2}, {2})});
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  ASSERT_EQ(sizes->items().size(), 2u);
  EXPECT_EQ(sizes->items()[0].shape(), Shape({2, 1}));
  EXPECT_THAT(ToFloats(sizes->items()[0]), ElementsAre(1, 4));
  EXPECT_THAT(ToFloats(sizes->items()[1]), ElementsAre(2, 3, 5, 6));

  absl::StatusOr<Tensor> chunk =
      Run1("SplitToSequence", {R"(name: "axis" i: 1)"}, {x, I64({2}, {})});
  ASSERT_TRUE(chunk.ok()) << chunk.status();
  ASSERT_EQ(chunk->items().size(), 2u);
  EXPECT_EQ(chunk->items()[1].shape(), Shape({2, 1}));
  EXPECT_THAT(ToFloats(chunk->items()[1]), ElementsAre(3, 6));

  absl::StatusOr<Tensor> ones = Run1("SplitToSequence", {R"(name: "keepdims" i: 0)"}, {x});
  ASSERT_TRUE(ones.ok()) << ones.status();
  ASSERT_EQ(ones->items().size(), 2u);
  EXPECT_EQ(ones->items()[1].shape(), Shape({3}));
  EXPECT_THAT(ToFloats(ones->items()[1]), ElementsAre(4, 5, 6));

  EXPECT_FALSE(Run1("SplitToSequence", {}, {x, I64({1, 2}, {2})}).ok());  // 3 != 2
}

TEST(SequenceTest, ConcatFromSequenceConcatenatesOrStacks) {
  const Tensor seq = Seq({F32({1, 2}, {1, 2}), F32({3, 4, 5, 6}, {2, 2})});
  absl::StatusOr<Tensor> cat = Run1("ConcatFromSequence", {R"(name: "axis" i: 0)"}, {seq});
  ASSERT_TRUE(cat.ok()) << cat.status();
  EXPECT_EQ(cat->shape(), Shape({3, 2}));
  EXPECT_THAT(ToFloats(*cat), ElementsAre(1, 2, 3, 4, 5, 6));

  const Tensor same = Seq({F32({1, 2}, {2}), F32({3, 4}, {2})});
  absl::StatusOr<Tensor> stacked = Run1(
      "ConcatFromSequence", {R"(name: "axis" i: -1)", R"(name: "new_axis" i: 1)"}, {same});
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  EXPECT_EQ(stacked->shape(), Shape({2, 2}));
  EXPECT_THAT(ToFloats(*stacked), ElementsAre(1, 3, 2, 4));

  absl::StatusOr<Tensor> bad = Run1("ConcatFromSequence", {R"(name: "axis" i: 1)"}, {seq});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("does not match"));
}

TEST(SequenceTest, SequenceMapRunsTheBodyPerItem) {
  const std::string body = R"(name: "body" g {
    inputs { name: "x" } inputs { name: "y" }
    nodes { op_type: "Add" inputs: "x" inputs: "y" outputs: "z" }
    outputs { name: "z" } })";
  const Tensor seq = Seq({F32({1, 2}, {2}), F32({3}, {1})});
  absl::StatusOr<Tensor> out = Run1("SequenceMap", {body}, {seq, F32({10}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->kind(), v1::VALUE_SEQUENCE);
  ASSERT_EQ(out->items().size(), 2u);
  EXPECT_THAT(ToFloats(out->items()[0]), ElementsAre(11, 12));
  EXPECT_THAT(ToFloats(out->items()[1]), ElementsAre(13));
  // Two sequences go item by item and must be of one length.
  absl::StatusOr<Tensor> pairs = Run1("SequenceMap", {body}, {seq, seq});
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  EXPECT_THAT(ToFloats(pairs->items()[0]), ElementsAre(2, 4));
  absl::StatusOr<Tensor> uneven = Run1("SequenceMap", {body}, {seq, Seq({F32({1}, {1})})});
  ASSERT_FALSE(uneven.ok());
  EXPECT_THAT(uneven.status().message(), HasSubstr("items"));
}

TEST(OptionalTest, WrapsTestsAndUnwraps) {
  absl::StatusOr<Tensor> opt = Run1("Optional", {}, {F32({1, 2}, {2})});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(opt->kind(), v1::VALUE_OPTIONAL_TENSOR);
  absl::StatusOr<Tensor> has = Run1("OptionalHasElement", {}, {*opt});
  ASSERT_TRUE(has.ok()) << has.status();
  EXPECT_TRUE(has->data<bool>()[0]);
  absl::StatusOr<Tensor> got = Run1("OptionalGetElement", {}, {*opt});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(ToFloats(*got), ElementsAre(1, 2));

  const Tensor seq_opt = Tensor::OptionalOf(Seq({F32({5}, {1})}));
  EXPECT_EQ(seq_opt.kind(), v1::VALUE_OPTIONAL_SEQUENCE);
  absl::StatusOr<Tensor> seq = Run1("OptionalGetElement", {}, {seq_opt});
  ASSERT_TRUE(seq.ok()) << seq.status();
  EXPECT_EQ(seq->kind(), v1::VALUE_SEQUENCE);
}

TEST(OptionalTest, EmptyOptionalHasNoElement) {
  const Tensor empty = Tensor::EmptyOptional(v1::VALUE_OPTIONAL_TENSOR, v1::DT_FLOAT32);
  absl::StatusOr<Tensor> has = Run1("OptionalHasElement", {}, {empty});
  ASSERT_TRUE(has.ok()) << has.status();
  EXPECT_FALSE(has->data<bool>()[0]);
  absl::StatusOr<Tensor> got = Run1("OptionalGetElement", {}, {empty});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("no value"));
}

TEST(OptionalTest, EmptyOptionalOfTheTypeAttribute) {
  // TypeProto{sequence_type{elem_type{tensor_type{elem_type: 1}}}}, serialized.
  const std::string type_bytes("\x22\x06\x0a\x04\x0a\x02\x08\x01", 8);
  v1::Attribute a;
  a.set_name("type");
  a.mutable_opaque()->set_kind("onnx.TypeProto");
  a.mutable_opaque()->add_values(type_bytes);
  absl::StatusOr<Tensor> opt = Run1("Optional", {a.ShortDebugString()}, {});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(opt->kind(), v1::VALUE_OPTIONAL_SEQUENCE);
  EXPECT_TRUE(opt->items().empty());
}

TEST(SequenceTest, IdentityAndLoopCarryASequence) {
  const Tensor seq = Seq({F32({1}, {1})});
  absl::StatusOr<Tensor> same = Run1("Identity", {}, {seq});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->kind(), v1::VALUE_SEQUENCE);
  // A loop appending the iteration number (as float) to a carried sequence.
  const std::string body = R"(name: "body" g {
    inputs { name: "i" } inputs { name: "c" } inputs { name: "s" }
    nodes { op_type: "Identity" inputs: "c" outputs: "c_out" }
    nodes { op_type: "Cast" inputs: "i" outputs: "f" attributes { name: "to" i: 1 } }
    nodes { op_type: "SequenceInsert" inputs: "s" inputs: "f" outputs: "s_out" }
    outputs { name: "c_out" } outputs { name: "s_out" } })";
  absl::StatusOr<Tensor> looped = Run1("Loop", {body}, {I64({3}, {}), Tensor(), seq});
  ASSERT_TRUE(looped.ok()) << looped.status();
  EXPECT_THAT(Firsts(*looped), ElementsAre(1, 0, 1, 2));
}

}  // namespace
}  // namespace graphopt::runtime
