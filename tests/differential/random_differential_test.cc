// Every pass alone and every optimization level on 1,000 seeded random graphs: the optimized
// graph must compute what the original computes. A failure prints the seed, the smallest number
// of generation steps that still fails, and that graph in text form.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/differential/differential.h"
#include "tests/differential/random_graph.h"

namespace graphopt::differential {
namespace {

constexpr int kGraphs = 1000;
// Failures reported in full per check; further ones are only counted.
constexpr int kReportedPerCheck = 3;

int StepsFor(uint64_t seed) { return 3 + static_cast<int>(seed % 14); }

// OK when `check` preserves the outputs of GenerateRandomGraph(seed, steps).
absl::Status CheckSteps(const Env& env, uint64_t seed, int steps, const Check& check) {
  RandomCase c = GenerateRandomGraph(seed, steps);
  absl::StatusOr<std::vector<runtime::Tensor>> reference = Execute(env, c.graph, c.inputs);
  if (!reference.ok()) {
    return absl::InternalError(absl::StrCat("the generated graph itself does not run (a "
                                            "generator bug): ", reference.status().ToString()));
  }
  return CompareAfter(env, c.graph, c.inputs, *reference, check);
}

TEST(RandomDifferentialTest, EveryPassAndLevelPreservesOutputs) {
  absl::StatusOr<std::unique_ptr<Env>> env = Env::Create();
  ASSERT_TRUE(env.ok()) << env.status();
  const std::vector<Check> checks = AllChecks((*env)->passes());
  ASSERT_FALSE(checks.empty());
  std::map<std::string, int> failures;
  int64_t nodes = 0;
  for (uint64_t seed = 0; seed < kGraphs; ++seed) {
    RandomCase c = GenerateRandomGraph(seed, StepsFor(seed));
    nodes += c.graph.nodes_size();
    absl::StatusOr<std::vector<runtime::Tensor>> reference = Execute(**env, c.graph, c.inputs);
    ASSERT_TRUE(reference.ok()) << "seed " << seed << ": the generated graph does not run (a "
                                << "generator bug): " << reference.status();
    for (const Check& check : checks) {
      absl::Status s = CompareAfter(**env, c.graph, c.inputs, *reference, check);
      if (s.ok()) continue;
      if (failures[check.name]++ >= kReportedPerCheck) continue;
      // The smallest prefix of the generation that still fails.
      int minimal = StepsFor(seed);
      for (int steps = 1; steps < StepsFor(seed); ++steps) {
        if (!CheckSteps(**env, seed, steps, check).ok()) {
          minimal = steps;
          break;
        }
      }
      RandomCase small = GenerateRandomGraph(seed, minimal);
      std::string text;
      google::protobuf::TextFormat::PrintToString(small.graph, &text);
      ADD_FAILURE() << check.name << " changes the outputs of random graph seed " << seed
                    << " (" << StepsFor(seed) << " steps): " << s.message()
                    << "\nsmallest failing graph: GenerateRandomGraph(" << seed << ", " << minimal
                    << "): " << CheckSteps(**env, seed, minimal, check).message() << "\n"
                    << text;
    }
  }
  for (const auto& [name, count] : failures) {
    ADD_FAILURE() << name << ": " << count << " of " << kGraphs << " random graphs differ";
  }
  std::printf("random differential: %d graphs (%lld nodes) x %zu checks\n", kGraphs,
              static_cast<long long>(nodes), checks.size());
}

TEST(RandomDifferentialTest, GeneratorIsDeterministicAndPrefixStable) {
  RandomCase a = GenerateRandomGraph(42, 10);
  RandomCase b = GenerateRandomGraph(42, 10);
  EXPECT_EQ(a.graph.SerializeAsString(), b.graph.SerializeAsString());
  RandomCase prefix = GenerateRandomGraph(42, 4);
  ASSERT_LE(prefix.graph.nodes_size(), a.graph.nodes_size());
  for (int i = 0; i < prefix.graph.nodes_size(); ++i) {
    EXPECT_EQ(prefix.graph.nodes(i).SerializeAsString(), a.graph.nodes(i).SerializeAsString());
  }
}

TEST(RandomDifferentialTest, ComparisonCatchesADifference) {
  // The harness itself must be able to fail: a pipeline that changes a value is caught.
  runtime::Tensor a = runtime::Tensor::Allocate(v1::DT_FLOAT32, {2}).value();
  runtime::Tensor b = runtime::Tensor::Allocate(v1::DT_FLOAT32, {2}).value();
  a.data<float>()[0] = b.data<float>()[0] = 1.0f;
  a.data<float>()[1] = 1.0f;
  b.data<float>()[1] = 1.0f + 1e-6f;
  EXPECT_NE(CompareTensors(a, b, /*exact=*/true, 0, 0), "");
  EXPECT_EQ(CompareTensors(a, b, /*exact=*/false, 1e-4, 1e-5), "");
  b.data<float>()[1] = 1.1f;
  EXPECT_NE(CompareTensors(a, b, /*exact=*/false, 1e-4, 1e-5), "");
}

// A pass that turns the first Add into a Sub: the harness must catch it on the graphs that have
// an Add whose second operand is not zero.
class AddToSubPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext&) override {
    for (int i = 0; i < graph.num_node_slots(); ++i) {
      Node& n = graph.mutable_node(NodeId(i));
      if (n.alive && n.op_type == "Add") {
        n.op_type = "Sub";
        return true;
      }
    }
    return false;
  }
};

TEST(RandomDifferentialTest, AWrongPassIsCaught) {
  absl::StatusOr<std::unique_ptr<Env>> env = Env::Create();
  ASSERT_TRUE(env.ok()) << env.status();
  PassInfo info;
  info.name = "add_to_sub";
  info.description = "deliberately wrong";
  info.factory = OptionlessFactory<AddToSubPass>();
  ASSERT_TRUE((*env)->mutable_passes().Register(std::move(info)).ok());
  Check check;
  check.name = "pass add_to_sub";
  check.pipeline = {{"add_to_sub", {}}};
  int caught = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    if (!CheckSteps(**env, seed, StepsFor(seed), check).ok()) ++caught;
  }
  EXPECT_GT(caught, 10) << "the harness misses a pass that changes Add into Sub";
}

}  // namespace
}  // namespace graphopt::differential
