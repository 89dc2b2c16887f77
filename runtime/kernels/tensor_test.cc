#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::ElementsAre;

TEST(IdentityTest, ViewsItsInput) {
  Tensor x = F32({1, 2, 3}, {3});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Identity", {}, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 2, 3));
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
}

}  // namespace
}  // namespace graphopt::runtime
