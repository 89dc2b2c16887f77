#include "graph/constant_view.h"

#include <cmath>
#include <cstring>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

v1::Tensor Int32s(std::vector<int32_t> v, std::vector<int64_t> dims) {
  v1::Tensor t;
  t.set_dtype(v1::DT_INT32);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  return t;
}

TEST(ConstantViewTest, ReadsElementsAsDoubles) {
  const v1::Tensor t = Int32s({1, -2, 3, 4, 5, 6}, {2, 3});
  std::optional<ConstantView> view = ConstantView::Of(t);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->dtype(), v1::DT_INT32);
  EXPECT_EQ(view->rank(), 2);
  EXPECT_EQ(view->dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(view->num_elements(), 6);
  EXPECT_EQ(view->AsDouble(1), -2.0);
  EXPECT_EQ(view->AsDouble(5), 6.0);
}

TEST(ConstantViewTest, RefusesWhatItCannotView) {
  v1::Tensor truncated = Int32s({1, 2, 3}, {4});
  EXPECT_FALSE(ConstantView::Of(truncated).has_value());
  v1::Tensor blob = Int32s({1}, {1});
  blob.set_blob("sha256:00");
  EXPECT_FALSE(ConstantView::Of(blob).has_value());
  v1::Tensor strings;
  strings.set_dtype(v1::DT_STRING);
  strings.add_string_data("a");
  EXPECT_FALSE(ConstantView::Of(strings).has_value());
  EXPECT_FALSE(ConstantView::Of(Int32s({1, 2, 3, 4}, {4}), /*max_elements=*/3).has_value());
  v1::Tensor negative = Int32s({}, {-1});
  EXPECT_FALSE(ConstantView::Of(negative).has_value());
}

TEST(ConstantViewTest, HalfAndSignedZero) {
  v1::Tensor h;
  h.set_dtype(v1::DT_FLOAT16);
  h.add_dims(2);
  const uint16_t bits[] = {0x3c00, 0x8000};  // 1.0, -0.0
  h.set_raw_data(std::string(reinterpret_cast<const char*>(bits), sizeof(bits)));
  std::optional<ConstantView> view = ConstantView::Of(h);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->AsDouble(0), 1.0);
  EXPECT_EQ(view->AsDouble(1), 0.0);
  EXPECT_TRUE(std::signbit(view->AsDouble(1)));
}

TEST(ConstantViewTest, FloatTensorBuilderRoundsOnceToItsDtype) {
  FloatTensorBuilder f(v1::DT_FLOAT32, {3});
  f.Set(0, 0.1);
  f.Set(2, 1e300);
  const v1::Tensor ft = f.Finish();
  std::optional<ConstantView> view = ConstantView::Of(ft);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->AsDouble(0), static_cast<double>(0.1f));
  EXPECT_EQ(view->AsDouble(1), 0.0);
  EXPECT_TRUE(std::isinf(view->AsDouble(2)));
  FloatTensorBuilder d(v1::DT_FLOAT64, {1, 1});
  d.Set(0, 0.1);
  const v1::Tensor dt = d.Finish();
  EXPECT_EQ(ConstantView::Of(dt)->AsDouble(0), 0.1);
  EXPECT_EQ(ConstantView::Of(dt)->dims(), (std::vector<int64_t>{1, 1}));
}

}  // namespace
}  // namespace graphopt
