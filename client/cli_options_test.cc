#include "client/cli_options.h"

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(ParsePassListTest, NamesAndOptions) {
  absl::StatusOr<std::vector<v1::PassSpec>> passes =
      ParsePassList(" infer_shape , cse:a=1; b = two ,dce");
  ASSERT_TRUE(passes.ok()) << passes.status();
  ASSERT_EQ(passes->size(), 3);
  EXPECT_EQ((*passes)[0].name(), "infer_shape");
  EXPECT_TRUE((*passes)[0].options().empty());
  EXPECT_EQ((*passes)[1].name(), "cse");
  EXPECT_THAT((*passes)[1].options(), UnorderedElementsAre(Pair("a", "1"), Pair("b", "two")));
  EXPECT_EQ((*passes)[2].name(), "dce");
}

TEST(ParsePassListTest, ValueMayContainEqualsAndBeEmpty) {
  absl::StatusOr<std::vector<v1::PassSpec>> passes = ParsePassList("p:k=a=b;e=");
  ASSERT_TRUE(passes.ok()) << passes.status();
  EXPECT_THAT((*passes)[0].options(), UnorderedElementsAre(Pair("k", "a=b"), Pair("e", "")));
}

TEST(ParsePassListTest, Errors) {
  EXPECT_EQ(ParsePassList("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ParsePassList("a,,b").status().message(), HasSubstr("empty pass name"));
  EXPECT_THAT(ParsePassList("a:novalue").status().message(), HasSubstr("'novalue'"));
  EXPECT_THAT(ParsePassList("a:=1").status().message(), HasSubstr("without a key"));
  EXPECT_THAT(ParsePassList("a:k=1;k=2").status().message(), HasSubstr("given twice"));
}

TEST(ParseDimBindingsTest, Parses) {
  absl::StatusOr<std::map<std::string, int64_t>> bindings =
      ParseDimBindings({"batch=8", " seq = 128"});
  ASSERT_TRUE(bindings.ok()) << bindings.status();
  EXPECT_THAT(*bindings, UnorderedElementsAre(Pair("batch", 8), Pair("seq", 128)));
}

TEST(ParseDimBindingsTest, Errors) {
  EXPECT_THAT(ParseDimBindings({"batch"}).status().message(), HasSubstr("symbol=N"));
  EXPECT_THAT(ParseDimBindings({"batch=x"}).status().message(), HasSubstr("integer"));
  EXPECT_THAT(ParseDimBindings({"=3"}).status().message(), HasSubstr("integer"));
  EXPECT_THAT(ParseDimBindings({"b=1", "b=2"}).status().message(), HasSubstr("twice"));
}

}  // namespace
}  // namespace graphopt
