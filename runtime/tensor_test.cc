#include "runtime/tensor.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace graphopt::runtime {
namespace {

TEST(TensorTest, AllocateIsAlignedAndSized) {
  absl::StatusOr<Tensor> t = Tensor::Allocate(v1::DT_FLOAT32, {2, 3});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->num_elements(), 6);
  EXPECT_EQ(t->byte_size(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % kTensorAlignment, 0u);
  EXPECT_EQ(t->DebugString(), "float32[2,3]");
}

TEST(TensorTest, FloatElementAsInt64Saturates) {
  // static_cast<int64_t> of NaN, inf or 1e30 is undefined behaviour (NonMaxSuppression reads
  // max_output_boxes_per_class, QLinearMatMul its y_zero_point, this way before checking types).
  const float inf = std::numeric_limits<float>::infinity();
  Tensor t = Tensor::FromVector<float>(v1::DT_FLOAT32, {std::nanf(""), inf, -inf, 1e30f, -2.75f},
                                       {5});
  EXPECT_EQ(t.ElementAsInt64(0), 0);
  EXPECT_EQ(t.ElementAsInt64(1), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(t.ElementAsInt64(2), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(t.ElementAsInt64(3), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(t.ElementAsInt64(4), -2);
}

TEST(TensorTest, NegativeDimIsInvalid) {
  absl::StatusOr<Tensor> t = Tensor::Allocate(v1::DT_FLOAT32, {2, -1});
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, ProtoRoundTrip) {
  v1::Tensor p;
  p.set_dtype(v1::DT_INT32);
  p.add_dims(2);
  const int32_t v[2] = {7, -3};
  p.set_raw_data(reinterpret_cast<const char*>(v), sizeof(v));
  absl::StatusOr<Tensor> t = Tensor::FromProto(p);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->data<int32_t>()[1], -3);
  v1::Tensor q;
  t->ToProto(&q);
  EXPECT_EQ(q.raw_data(), p.raw_data());
  EXPECT_EQ(q.dims_size(), 1);
}

TEST(TensorTest, ProtoWithWrongByteCountNamesTheTensor) {
  v1::Tensor p;
  p.set_dtype(v1::DT_FLOAT32);
  p.add_dims(3);
  p.set_raw_data("abcd");
  absl::StatusOr<Tensor> t = Tensor::FromProto(p, "initializer 'w'");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("initializer 'w'"), absl::string_view::npos);
}

TEST(TensorTest, ReshapedSharesElements) {
  Tensor t = Tensor::FromVector<float>(v1::DT_FLOAT32, {1, 2, 3, 4}, {4});
  absl::StatusOr<Tensor> r = t.Reshaped({2, 2});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->raw_data(), t.raw_data());
  EXPECT_FALSE(t.Reshaped({3}).ok());
}

TEST(TensorTest, StringsCloneAndProto) {
  absl::StatusOr<Tensor> t = Tensor::Allocate(v1::DT_STRING, {2});
  ASSERT_TRUE(t.ok());
  t->strings()[0] = "a";
  t->strings()[1] = "bc";
  absl::StatusOr<Tensor> c = t->Clone();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->strings()[1], "bc");
  v1::Tensor p;
  c->ToProto(&p);
  EXPECT_EQ(p.string_data_size(), 2);
}

TEST(Float16Test, RoundTripsAndRounds) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953f}) {
    EXPECT_EQ(static_cast<float>(Float16(f)), f) << f;
  }
  EXPECT_TRUE(std::isinf(static_cast<float>(Float16(70000.0f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Float16(NAN))));
  EXPECT_EQ(Float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(BFloat16(3.140625f)), 3.140625f);
}

// The pool lends one buffer to borrowers in turn, grows by replacing (not adding) buffers, and
// never lends a buffer someone still holds: what keeps a plan's scratch at the largest request
// instead of the sum over its kernels.
TEST(ScratchPoolTest, LendsOneBufferInTurnAndNeverOneStillHeld) {
  ScratchPool pool;
  EXPECT_EQ(pool.kept_bytes(), 0);
  const Buffer* first = nullptr;
  {
    std::shared_ptr<Buffer> a = pool.Acquire(1000).value();
    ASSERT_GE(a->bytes(), 1000u);
    first = a.get();
  }
  {
    // Smaller requests reuse the idle buffer.
    std::shared_ptr<Buffer> b = pool.Acquire(300).value();
    EXPECT_EQ(b.get(), first);
  }
  EXPECT_EQ(pool.kept_bytes(), 1000);
  {
    // A larger one replaces it: the pool keeps the largest, not one per size.
    std::shared_ptr<Buffer> c = pool.Acquire(5000).value();
    EXPECT_GE(c->bytes(), 5000u);
  }
  EXPECT_EQ(pool.kept_bytes(), 5000);
  for (int i = 0; i < 10; ++i) pool.Acquire(100 * (i % 4) + 1).value();
  EXPECT_EQ(pool.kept_bytes(), 5000);
  // A buffer still held (say a result viewing it) is never lent again.
  std::shared_ptr<Buffer> held = pool.Acquire(4000).value();
  std::shared_ptr<Buffer> other = pool.Acquire(4000).value();
  EXPECT_NE(held.get(), other.get());
  EXPECT_EQ(pool.kept_bytes(), 9000);
  // Borrowers beyond kMaxKept get buffers of their own, not kept.
  std::vector<std::shared_ptr<Buffer>> many;
  for (size_t i = 0; i < ScratchPool::kMaxKept + 2; ++i) many.push_back(pool.Acquire(64).value());
  for (size_t i = 0; i < many.size(); ++i) {
    for (size_t j = i + 1; j < many.size(); ++j) EXPECT_NE(many[i].get(), many[j].get());
  }
  EXPECT_LE(pool.kept_bytes(), 9000 + static_cast<int64_t>(ScratchPool::kMaxKept) * 64);
}

}  // namespace
}  // namespace graphopt::runtime
