#include "client/optimize_verify.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

TEST(OptimizeVerifyTest, OptionsNeedVerify) {
  OptimizeVerifyArgs args;
  args.rtol = 1e-3;
  v1::OptimizeRequest request;
  EXPECT_EQ(ApplyOptimizeVerifyArgs(args, &request).code(), absl::StatusCode::kInvalidArgument);
  args.verify = true;
  args.atol = 1e-5;
  args.seed = 9;
  ASSERT_TRUE(ApplyOptimizeVerifyArgs(args, &request).ok());
  EXPECT_TRUE(request.options().verify().enabled());
  EXPECT_EQ(request.options().verify().rtol(), 1e-3);
  EXPECT_EQ(request.options().verify().atol(), 1e-5);
  EXPECT_EQ(request.options().verify().seed(), 9u);
  EXPECT_FALSE(request.options().no_cache());
}

TEST(OptimizeVerifyTest, NoCacheAndBadInputs) {
  OptimizeVerifyArgs args;
  args.no_cache = true;
  v1::OptimizeRequest request;
  ASSERT_TRUE(ApplyOptimizeVerifyArgs(args, &request).ok());
  EXPECT_TRUE(request.options().no_cache());
  EXPECT_FALSE(request.options().has_verify());
  args.verify = true;
  args.inputs = {"x"};
  EXPECT_THAT(ApplyOptimizeVerifyArgs(args, &request).message(), HasSubstr("--verify-input"));
  args.inputs = {"x=/no/such/file.npy"};
  EXPECT_FALSE(ApplyOptimizeVerifyArgs(args, &request).ok());
}

TEST(OptimizeVerifyTest, CacheLine) {
  EXPECT_EQ(FormatCacheLine(v1::CACHE_RESULT_HIT), "cache: hit\n");
  EXPECT_EQ(FormatCacheLine(v1::CACHE_RESULT_MISS), "cache: miss\n");
  EXPECT_EQ(FormatCacheLine(v1::CACHE_RESULT_NOT_USED), "");
}

TEST(OptimizeVerifyTest, TableShowsEveryOutput) {
  v1::VerifyReport report;
  report.set_passed(true);
  report.set_rtol(1e-4);
  report.set_atol(1e-6);
  report.set_seed(3);
  report.add_generated_inputs("image");
  v1::OutputComparison* c = report.add_outputs();
  c->set_name("logits");
  c->set_max_abs_error(2.5e-7);
  c->set_max_rel_error(1e-7);
  c->set_passed(true);
  const std::string table = FormatVerifyReport(report);
  EXPECT_THAT(table, HasSubstr("verification: passed"));
  EXPECT_THAT(table, HasSubstr("logits"));
  EXPECT_THAT(table, HasSubstr("2.5e-07"));
  EXPECT_THAT(table, HasSubstr("generated inputs (seed 3): image"));
}

}  // namespace
}  // namespace graphopt
