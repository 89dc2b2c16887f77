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

TEST(ParsePassListTest, QuotedValuesHoldSeparators) {
  absl::StatusOr<std::vector<v1::PassSpec>> passes = ParsePassList(
      R"(plan_memory:dim_bounds="batch:8,seq:128";inplace=0, gradient:wrt="a;b";loss=l,dce)");
  ASSERT_TRUE(passes.ok()) << passes.status();
  ASSERT_EQ(passes->size(), 3);
  EXPECT_EQ((*passes)[0].name(), "plan_memory");
  EXPECT_THAT((*passes)[0].options(),
              UnorderedElementsAre(Pair("dim_bounds", "batch:8,seq:128"), Pair("inplace", "0")));
  EXPECT_EQ((*passes)[1].name(), "gradient");
  EXPECT_THAT((*passes)[1].options(), UnorderedElementsAre(Pair("wrt", "a;b"), Pair("loss", "l")));
  EXPECT_EQ((*passes)[2].name(), "dce");
}

TEST(ParsePassListTest, EscapesEmptyValuesAndJoinedPieces) {
  absl::StatusOr<std::vector<v1::PassSpec>> passes =
      ParsePassList(R"(p:a=x\,y\;z;b="q\"uote \\ back";c=;d="";e=k"=v, w"end;f= " pad " )");
  ASSERT_TRUE(passes.ok()) << passes.status();
  ASSERT_EQ(passes->size(), 1);
  EXPECT_THAT((*passes)[0].options(),
              UnorderedElementsAre(Pair("a", "x,y;z"), Pair("b", "q\"uote \\ back"), Pair("c", ""),
                                   Pair("d", ""), Pair("e", "k=v, wend"), Pair("f", " pad ")));
}

// Every value survives quoting: what a tool that writes --passes from a map would do.
TEST(ParsePassListTest, QuotingRoundTripsAnyValue) {
  const std::string values[] = {"", ",", ";", "=", "\"", "\\", " a b ", "x=1,y=2;z", "\\\"\\",
                                "\t\n", "\xff\xfe"};
  for (const std::string& value : values) {
    std::string quoted = "\"";
    for (char c : value) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    quoted += '"';
    absl::StatusOr<std::vector<v1::PassSpec>> passes = ParsePassList("p:k=" + quoted + ",q");
    ASSERT_TRUE(passes.ok()) << quoted << ": " << passes.status();
    ASSERT_EQ(passes->size(), 2) << quoted;
    EXPECT_EQ((*passes)[0].options().at("k"), value) << quoted;
  }
}

TEST(ParsePassListTest, Errors) {
  EXPECT_EQ(ParsePassList("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePassList("  ").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ParsePassList("a,,b").status().message(), HasSubstr("empty pass name"));
  EXPECT_THAT(ParsePassList("a:novalue").status().message(),
              HasSubstr("pass 'a': option 'novalue': is not key=value"));
  EXPECT_THAT(ParsePassList("a:=1").status().message(), HasSubstr("without a key"));
  EXPECT_THAT(ParsePassList("a:k=1;k=2").status().message(), HasSubstr("given twice"));
}

// Hostile and mistaken inputs: each is an error naming the pass, the option and the column,
// never a silently different pipeline.
TEST(ParsePassListTest, MisparsesAreErrorsNamingPassOptionAndColumn) {
  const std::pair<const char*, const char*> cases[] = {
      // The issue's case: a comma-separated list unquoted splits into a bogus pass.
      {"plan_memory:dim_bounds=batch:8,seq:128",
       "column 39: pass 'seq': option '128': is not key=value (a value holding ',' or ';' "
       "is quoted"},
      // ... and a blank-separated one.
      {"plan_memory:dim_bounds=batch:8 seq:128",
       "column 31: pass 'plan_memory': option 'dim_bounds': unquoted blank"},
      {"gradient:wrt=a;b;loss=l", "column 17: pass 'gradient': option 'b': is not key=value"},
      {"p:k=\"abc", "column 5: pass 'p': option 'k': unterminated '\"'"},
      {"p:k=\"abc\\\"", "column 5: pass 'p': option 'k': unterminated '\"'"},
      {"p:k=abc\\", "column 8: pass 'p': option 'k': trailing backslash"},
      {"p:k=a=b", "column 6: pass 'p': option 'k': unquoted '='"},
      {"p:k==b", "column 5: pass 'p': option 'k': unquoted '='"},
      {"p=k", "column 2: pass 'p': options follow ':'"},
      {"p:k=1;;j=2", "column 7: pass 'p': empty option"},
      {"p:k=1;", "column 7: pass 'p': empty option"},
      {"p:", "column 3: pass 'p': empty option"},
      {"p,", "column 3: empty pass name"},
      {":k=1", "column 1: empty pass name"},
      {"\"p\"", "column 1: '\"' cannot start a pass name"},
      {"p q", "column 3: pass 'p': 'q' after the name"},
      {"p:k\"=1", "column 4: pass 'p': option 'k': '\"' after the key"},
      {"p:k x=1", "column 5: pass 'p': option 'k': 'x' after the key"},
      {"p:\x01=1", "column 3: pass 'p': byte 0x01 cannot start an option key"},
  };
  for (const auto& [text, expected] : cases) {
    absl::StatusOr<std::vector<v1::PassSpec>> passes = ParsePassList(text);
    ASSERT_FALSE(passes.ok()) << text;
    EXPECT_EQ(passes.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(passes.status().message(), HasSubstr(expected)) << text;
  }
}

// A long hostile input is scanned once: no quadratic blow-up, no recursion.
TEST(ParsePassListTest, LongInputsAreLinear) {
  std::string many_passes;
  for (int i = 0; i < 100000; ++i) many_passes += "p:k=\"a,b\",";
  many_passes += "q";
  absl::StatusOr<std::vector<v1::PassSpec>> passes = ParsePassList(many_passes);
  ASSERT_TRUE(passes.ok()) << passes.status();
  EXPECT_EQ(passes->size(), 100001);
  EXPECT_FALSE(ParsePassList("p:k=\"" + std::string(1 << 20, 'x')).ok());
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
