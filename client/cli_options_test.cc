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

// x (input), w and b (float initializers), steps (an int64 initializer), y and loss (outputs).
v1::Graph GradModel() {
  v1::Graph g;
  v1::ValueInfo* x = g.add_inputs();
  x->set_name("x");
  x->mutable_type()->set_dtype(v1::DT_FLOAT32);
  v1::ValueInfo* ids = g.add_inputs();
  ids->set_name("ids");
  ids->mutable_type()->set_dtype(v1::DT_INT64);
  for (const char* name : {"w", "b"}) {
    v1::Tensor* t = g.add_initializers();
    t->set_name(name);
    t->set_dtype(v1::DT_FLOAT32);
  }
  v1::Tensor* steps = g.add_initializers();
  steps->set_name("steps");
  steps->set_dtype(v1::DT_INT64);
  v1::Node* n = g.add_nodes();
  n->set_op_type("Foo");
  n->add_outputs("y");
  n->add_outputs("loss");
  return g;
}

TEST(GradientPassOptionsTest, ExpandsParamsAndInputs) {
  GradNames names;
  names.wrt = {"inputs", "params", "x"};
  names.loss = {"loss"};
  names.stop_gradient = {"y"};
  absl::StatusOr<std::map<std::string, std::string>> options =
      GradientPassOptions(GradModel(), names);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_THAT(*options, UnorderedElementsAre(Pair("wrt", "x;w;b"), Pair("loss", "loss"),
                                             Pair("stop_gradient", "y")));
}

TEST(GradientPassOptionsTest, NamesTheMissingValue) {
  GradNames names;
  names.wrt = {"w", "nope"};
  absl::StatusOr<std::map<std::string, std::string>> options =
      GradientPassOptions(GradModel(), names);
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(options.status().message(), HasSubstr("--wrt: the model has no value 'nope'"));
  names.wrt = {"w"};
  names.outputs = {"y", "z"};
  options = GradientPassOptions(GradModel(), names);
  EXPECT_THAT(options.status().message(), HasSubstr("--outputs: the model has no value 'z'"));
  names.outputs = {};
  names.stop_gradient = {"a;b"};
  options = GradientPassOptions(GradModel(), names);
  EXPECT_THAT(options.status().message(), HasSubstr("--stop-gradient"));
}

TEST(GradientPassOptionsTest, NothingToDifferentiate) {
  v1::Graph g = GradModel();
  g.clear_inputs();
  GradNames names;
  names.wrt = {"inputs"};
  absl::StatusOr<std::map<std::string, std::string>> options = GradientPassOptions(g, names);
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(options.status().message(), HasSubstr("--wrt"));
}

}  // namespace
}  // namespace graphopt
