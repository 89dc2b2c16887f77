#include "passes/plan_memory_pass.h"

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_util.h"
#include "graph/types.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/plan_memory_test_util.h"
#include "bench/synthetic_graph.h"
#include "graph/liveness.h"
#include "graph/proto_convert.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "graph/test_ops.h"

namespace graphopt {
namespace {

using ::graphopt::testing::GraphText;
using ::graphopt::testing::PassTestEnv;
using ::testing::HasSubstr;

// Every name read by the nodes of `g` and of the graphs nested in them (a superset of what a
// node's subgraphs capture, which is all the checker needs).
void NamesRead(const v1::Node& node, std::set<std::string>* names) {
  std::vector<const v1::Graph*> pending;
  for (const std::string& i : node.inputs()) names->insert(i);
  for (const v1::Attribute& a : node.attributes()) {
    if (a.has_g()) pending.push_back(&a.g());
  }
  while (!pending.empty()) {
    const v1::Graph* g = pending.back();
    pending.pop_back();
    for (const v1::Node& n : g->nodes()) {
      for (const std::string& i : n.inputs()) names->insert(i);
      for (const v1::Attribute& a : n.attributes()) {
        if (a.has_g()) pending.push_back(&a.g());
      }
    }
    for (const v1::ValueInfo& o : g->outputs()) names->insert(o.name());
  }
}

// Checks a planned graph from scratch, by brute force over all pairs of planned values: ranges
// inside their arena and aligned, big enough for the value (symbols at `bounds`), and two
// values live at one step never share a byte unless one is written in place over the other:
// the op declares the pair, the other dies at this node, which reads no other value of it, and
// both have the same element type and element count.
void CheckPlan(const v1::Graph& g, const OpRegistry& ops,
               const std::map<std::string, int64_t>& bounds = {}) {
  ASSERT_TRUE(g.has_memory_plan());
  const v1::MemoryPlan& plan = g.memory_plan();
  std::map<std::string, int> def, last;
  std::map<std::string, const v1::Node*> producer;
  for (int s = 0; s < g.nodes_size(); ++s) {
    std::set<std::string> read;
    NamesRead(g.nodes(s), &read);
    for (const std::string& r : read) last[r] = s;
    for (const std::string& o : g.nodes(s).outputs()) {
      def[o] = s;
      producer[o] = &g.nodes(s);
    }
  }
  std::set<std::string> outputs;
  for (const auto& o : g.outputs()) outputs.insert(o.name());
  std::map<std::string, TensorType> types;
  for (const auto& vi : g.value_info()) types[vi.name()] = TensorTypeFromProto(vi.type());

  const int n = plan.buffers_size();
  std::set<std::string> planned;
  for (int i = 0; i < n; ++i) {
    const v1::PlannedBuffer& b = plan.buffers(i);
    SCOPED_TRACE(b.value());
    ASSERT_TRUE(planned.insert(b.value()).second) << "planned twice";
    ASSERT_TRUE(def.count(b.value())) << "not a node output";
    EXPECT_FALSE(outputs.count(b.value())) << "graph output planned";
    ASSERT_GE(b.arena(), 0);
    ASSERT_LT(b.arena(), plan.arenas_size());
    EXPECT_EQ(b.offset() % 64, 0);
    EXPECT_EQ(b.size() % 64, 0);
    EXPECT_GE(b.offset(), 0);
    EXPECT_LE(b.offset() + b.size(), plan.arenas(b.arena()).size_bytes());
    ASSERT_TRUE(types.count(b.value()));
    int64_t bytes = DataTypeSize(types[b.value()].dtype);
    for (const Dim& d : *types[b.value()].shape) {
      bytes *= d.is_known() ? d.size() : bounds.at(d.symbol());
    }
    EXPECT_GE(b.size(), bytes);
  }
  auto legal_in_place = [&](const v1::PlannedBuffer& later, const v1::PlannedBuffer& earlier) {
    if (later.shares_with() != earlier.value()) return false;
    if (later.offset() != earlier.offset() || later.size() != earlier.size()) return false;
    if (last[earlier.value()] != def[later.value()]) return false;
    const v1::Node& node = *producer[later.value()];
    const OpDef* op = ops.Find(node.domain(), node.op_type());
    bool declared = false;
    for (const v1::InPlacePair& p : op->descriptor.inplace()) {
      declared |= p.input() < node.inputs_size() && node.inputs(p.input()) == earlier.value() &&
                  p.output() < node.outputs_size() && node.outputs(p.output()) == later.value();
    }
    const TensorType& a = types[earlier.value()];
    const TensorType& b = types[later.value()];
    return declared && a.dtype == b.dtype && NumElements(*a.shape) == NumElements(*b.shape);
  };
  for (int i = 0; i < n; ++i) {
    const v1::PlannedBuffer& x = plan.buffers(i);
    if (!x.shares_with().empty()) {
      bool found = false;
      for (int j = 0; j < n; ++j) {
        if (plan.buffers(j).value() == x.shares_with()) {
          found = true;
          EXPECT_TRUE(legal_in_place(x, plan.buffers(j))) << x.value() << " over " << x.shares_with();
        }
      }
      EXPECT_TRUE(found) << x.value() << " shares with an unplanned value";
    }
    const int x_last = std::max(def[x.value()], last.count(x.value()) ? last[x.value()] : -1);
    for (int j = i + 1; j < n; ++j) {
      const v1::PlannedBuffer& y = plan.buffers(j);
      if (x.arena() != y.arena()) continue;
      const int y_last = std::max(def[y.value()], last.count(y.value()) ? last[y.value()] : -1);
      const bool same_time = def[x.value()] <= y_last && def[y.value()] <= x_last;
      const bool same_bytes =
          x.offset() < y.offset() + y.size() && y.offset() < x.offset() + x.size();
      if (same_time && same_bytes) {
        EXPECT_TRUE(legal_in_place(y, x) || legal_in_place(x, y))
            << "'" << x.value() << "' and '" << y.value() << "' overlap in " << GraphText(g);
      }
    }
  }
  for (const v1::MemoryArena& a : plan.arenas()) {
    EXPECT_LE(a.liveness_lower_bound(), a.size_bytes());
    EXPECT_LE(a.size_bytes(), a.naive_bytes());
  }
}

TEST(PlanMemoryPassTest, RandomGraphsNeverOverlapLiveValues) {
  PassTestEnv env;
  int planned = 0, in_place = 0, unplanned = 0;
  for (uint32_t seed = 1; seed <= 150; ++seed) {
    SCOPED_TRACE(seed);
    const std::string text = GraphText(testing::RandomPlanningGraph(seed, 10 + seed % 40));
    for (const char* inplace : {"1", "0"}) {
      auto out = env.RunSpecs(text, {{"schedule", {}}, {"plan_memory", {{"inplace", inplace}}}});
      ASSERT_TRUE(out.ok()) << out.status() << "\n" << text;
      CheckPlan(*out, env.ops());
      planned += out->memory_plan().buffers_size();
      unplanned += out->memory_plan().unplanned_size();
      for (const auto& b : out->memory_plan().buffers()) in_place += !b.shares_with().empty();
      if (std::string(inplace) == "0") {
        for (const auto& b : out->memory_plan().buffers()) EXPECT_EQ(b.shares_with(), "");
      }
    }
  }
  // The generator must keep exercising the planner.
  std::cerr << planned << " planned, " << in_place << " in place, " << unplanned << " unplanned\n";
  EXPECT_GT(planned, 4000);
  EXPECT_GT(in_place, 700);
}

TEST(PlanMemoryPassTest, SymbolicDimsArePlannedAtTheirBounds) {
  PassTestEnv env;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE(seed);
    const std::string text = GraphText(testing::RandomPlanningGraph(seed, 25, /*symbolic_rows=*/true));
    auto out = env.RunSpecs(text, {{"plan_memory", {{"dim_bounds", "batch:3"}}}});
    ASSERT_TRUE(out.ok()) << out.status();
    CheckPlan(*out, env.ops(), {{"batch", 3}});
    ASSERT_EQ(out->memory_plan().dim_bounds_size(), 1);
    EXPECT_EQ(out->memory_plan().dim_bounds(0).symbol(), "batch");
  }
}

constexpr char kChain[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 4 } dims { size: 8 } } } }
  initializers { name: "bias" dtype: DT_FLOAT32 dims: 1 dims: 8 raw_data: "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0" }
  nodes { op_type: "Relu" inputs: "x" outputs: "a" }
  nodes { op_type: "Sigmoid" inputs: "a" outputs: "b" }
  nodes { op_type: "Neg" inputs: "b" outputs: "c" }
  nodes { op_type: "Add" inputs: "bias" inputs: "c" outputs: "d" }
  nodes { op_type: "Add" inputs: "d" inputs: "b" outputs: "e" }
  nodes { op_type: "ReduceSum" inputs: "e" outputs: "s" attributes { name: "keepdims" i: 1 } }
  nodes { op_type: "Add" inputs: "s" inputs: "e" outputs: "f" }
  nodes { op_type: "Relu" inputs: "f" outputs: "y" }
  outputs { name: "y" }
)pb";

const v1::PlannedBuffer* Find(const v1::Graph& g, const std::string& value) {
  for (const v1::PlannedBuffer& b : g.memory_plan().buffers()) {
    if (b.value() == value) return &b;
  }
  return nullptr;
}

TEST(PlanMemoryPassTest, InPlaceOnlyWhenLegal) {
  PassTestEnv env;
  PipelineResult result;
  auto out = env.Run(kChain, {"plan_memory"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  CheckPlan(*out, env.ops());
  // 'a' dies at Sigmoid: b takes it over.
  EXPECT_EQ(Find(*out, "b")->shares_with(), "a");
  // 'b' is read again by the Add making 'e': c needs its own range.
  EXPECT_EQ(Find(*out, "c")->shares_with(), "");
  // Add(bias, c): the bias is broadcast (and a constant); c dies here and has the output's size.
  EXPECT_EQ(Find(*out, "d")->shares_with(), "c");
  // Add(d, b): both die here; the first declared pair wins.
  EXPECT_EQ(Find(*out, "e")->shares_with(), "d");
  // Add(s, e) with s of shape [4,1]: never over s; over e, which dies here.
  EXPECT_EQ(Find(*out, "f")->shares_with(), "e");
  // The graph output is not planned.
  EXPECT_EQ(Find(*out, "y"), nullptr);
  ASSERT_EQ(out->memory_plan().arenas_size(), 1);
  const v1::MemoryArena& arena = out->memory_plan().arenas(0);
  EXPECT_EQ(arena.size_bytes(), arena.liveness_lower_bound());
  EXPECT_EQ(arena.naive_bytes(), 6 * 128 + 64);
  ASSERT_EQ(result.runs.size(), 3u);  // infer_type and infer_shape first
  EXPECT_THAT(result.runs[2].messages[0], HasSubstr("liveness lower bound"));
}

TEST(PlanMemoryPassTest, MutatedValuesAreNotShared) {
  PassTestEnv env;
  OpDef acc = graphopt::testing::MakeTestOp("Accumulate", {"acc", "x"}, {"y"});
  acc.descriptor.set_domain("my.ops");
  acc.descriptor.add_mutated_inputs(0);
  ASSERT_TRUE(env.AddOp(std::move(acc)).ok());
  auto out = env.Run(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 16 } } } }
    nodes { op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { op_type: "Accumulate" domain: "my.ops" inputs: "a" inputs: "x" outputs: "b" }
    nodes { op_type: "Relu" inputs: "a" outputs: "c" }
    nodes { op_type: "Add" inputs: "b" inputs: "c" outputs: "y" }
    outputs { name: "y" })pb",
                     {"plan_memory"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Find(*out, "c")->shares_with(), "");
}

// In-place matching is linear in a node's inputs, outputs and its op's pairs: one node of an op
// declaring 100,000 inputs, outputs and pairs (input i -> output i) is planned in well under a
// second (10^10 steps when each output scanned every pair and every input).
TEST(PlanMemoryPassTest, InPlaceMatchingIsLinearInTheNodesEdgesAndTheOpsPairs) {
  constexpr int kWidth = 100000;
  PassTestEnv env;
  std::vector<std::string> ins, outs;
  for (int i = 0; i < kWidth; ++i) {
    ins.push_back(absl::StrCat("x", i));
    outs.push_back(absl::StrCat("y", i));
  }
  OpDef wide = graphopt::testing::MakeTestOp("Wide", ins, outs);
  wide.descriptor.set_domain("my.ops");
  for (int i = 0; i < kWidth; ++i) {
    v1::InPlacePair* p = wide.descriptor.add_inplace();
    p->set_input(i);
    p->set_output(i);
  }
  ASSERT_TRUE(env.AddOp(std::move(wide)).ok());
  v1::Graph proto;
  v1::ValueInfo* x = proto.add_inputs();
  x->set_name("x");
  x->mutable_type()->set_dtype(v1::DT_FLOAT32);
  x->mutable_type()->mutable_shape()->add_dims()->set_size(16);
  v1::Node* w = nullptr;
  for (int i = 0; i < kWidth; ++i) {
    v1::Node* r = proto.add_nodes();
    r->set_op_type("Relu");
    r->add_inputs("x");
    r->add_outputs(absl::StrCat("a", i));
  }
  w = proto.add_nodes();
  w->set_name("wide");
  w->set_op_type("Wide");
  w->set_domain("my.ops");
  for (int i = 0; i < kWidth; ++i) {
    w->add_inputs(absl::StrCat("a", i));
    w->add_outputs(absl::StrCat("b", i));
  }
  v1::Node* last = proto.add_nodes();
  last->set_op_type("Relu");
  last->add_inputs("b0");
  last->add_outputs("y");
  proto.add_outputs()->set_name("y");
  absl::StatusOr<Graph> g = GraphFromProto(std::move(proto));
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<PipelineResult> r =
      RunPipeline(*g, {{"plan_memory", {}}}, env.passes(), env.ops());
  ASSERT_TRUE(r.ok()) << r.status();
  int shared = 0;
  for (const v1::PlannedBuffer& b : g->memory_plan->buffers()) {
    if (absl::StartsWith(b.value(), "b")) {
      EXPECT_EQ(b.shares_with(), absl::StrCat("a", b.value().substr(1)));
      ++shared;
    }
  }
  EXPECT_EQ(shared, kWidth);
}

TEST(PlanMemoryPassTest, UnboundedDimsAreLeftUnplannedAndReported) {
  PassTestEnv env;
  PipelineResult result;
  auto out = env.Run(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "seq" } dims { size: 8 } } } }
    inputs { name: "k" type { dtype: DT_FLOAT32 shape { dims { size: 8 } } } }
    nodes { op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { op_type: "Relu" inputs: "k" outputs: "b" }
    nodes { op_type: "Add" inputs: "a" inputs: "b" outputs: "y" }
    outputs { name: "y" })pb",
                     {"plan_memory"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->memory_plan().unplanned_size(), 1);
  EXPECT_EQ(out->memory_plan().unplanned(0).value(), "a");
  EXPECT_EQ(out->memory_plan().unplanned(0).reason(),
            "dim 'seq' has no bound (option dim_bounds)");
  EXPECT_NE(Find(*out, "b"), nullptr);
  EXPECT_EQ(result.runs.back().messages.back(),
            "1 values left unplanned (allocated at run time): 1 because dim 'seq' has no bound "
            "(option dim_bounds) (e.g. 'a')");
}

TEST(PlanMemoryPassTest, SequencesAreLeftUnplanned) {
  // A sequence's tensors are allocated by the kernels that build it: its element type must
  // not be planned as if it were one tensor.
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 8 } } } }
    nodes { op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { op_type: "SequenceConstruct" inputs: "a" inputs: "x" outputs: "s" }
    nodes { op_type: "SequenceAt" inputs: "s" inputs: "zero" outputs: "b" }
    nodes { op_type: "Relu" inputs: "b" outputs: "y" }
    initializers { name: "zero" dtype: DT_INT64 raw_data: "\000\000\000\000\000\000\000\000" }
    outputs { name: "y" })pb",
                     {"infer_type", "infer_shape", "plan_memory"});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->memory_plan().unplanned_size(), 1);
  EXPECT_EQ(out->memory_plan().unplanned(0).value(), "s");
  EXPECT_EQ(out->memory_plan().unplanned(0).reason(), "it is a sequence, not a tensor");
  EXPECT_NE(Find(*out, "a"), nullptr);
  EXPECT_NE(Find(*out, "b"), nullptr);
}

TEST(PlanMemoryPassTest, BadOptionsAreInvalidArgumentNamingTheOption) {
  PassTestEnv env;
  for (const char* bad : {"batch", "batch:x", ":3", "batch:-1", "batch:2,batch:3", "a:1,,",
                          "batch:8 seq:128", "a:1 b:2,c:3"}) {
    auto out = env.RunSpecs(kChain, {{"plan_memory", {{"dim_bounds", bad}}}});
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(out.status().message(), HasSubstr("'dim_bounds'")) << bad;
  }
  auto out = env.RunSpecs(kChain, {{"plan_memory", {{"inplace", "yes"}}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("'inplace'"));
  EXPECT_TRUE(env.RunSpecs(kChain, {{"plan_memory", {{"dim_bounds", " b : 2 , c:0 "}}}}).ok());
  // A symbol may hold blanks and ':' (ONNX dim_param is free text).
  EXPECT_TRUE(
      env.RunSpecs(kChain, {{"plan_memory", {{"dim_bounds", "batch size:2,a:b c:3"}}}}).ok());
  auto list = env.RunSpecs(kChain, {{"plan_memory", {{"dim_bounds", "batch:8 seq:128"}}}});
  EXPECT_THAT(list.status().message(), HasSubstr("blank-separated list"));
}

TEST(PlanMemoryPassTest, DeterministicAndUnchangedTheSecondTime) {
  PassTestEnv env;
  const std::string text = GraphText(testing::RandomPlanningGraph(99, 60));
  auto a = env.Run(text, {"schedule", "plan_memory"});
  auto b = env.Run(text, {"schedule", "plan_memory"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(SerializeDeterministic(*a), SerializeDeterministic(*b));
  PipelineResult result;
  auto again = env.Run(GraphText(*a), {"plan_memory"}, &result);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(result.runs.back().changed);
  // (value_info comes in value-id order, which reading the graph again renumbers.)
  EXPECT_EQ(SerializeDeterministic(again->memory_plan()), SerializeDeterministic(a->memory_plan()));
  EXPECT_EQ(testing::OpTypes(*again), testing::OpTypes(*a));
}

}  // namespace
}  // namespace graphopt

namespace graphopt {
namespace {

// Large graphs: schedule and plan_memory stay n log n (no recursion, no quadratic step); the plan
// is checked with the executor's O(n log n) check instead of the brute force.
TEST(PlanMemoryPassTest, LargeGraph) {
  PassTestEnv env;
  for (int64_t n : {20000, 200000}) {
    absl::StatusOr<Graph> graph = GraphFromProto(MakeSyntheticGraph(n));
    ASSERT_TRUE(graph.ok());
    const absl::Time start = absl::Now();
    absl::StatusOr<PipelineResult> r =
        RunPipeline(*graph,
                    {{"schedule", {{"dim_bounds", "batch:4"}}},
                     {"plan_memory", {{"dim_bounds", "batch:4"}}}},
                    env.passes(), env.ops());
    ASSERT_TRUE(r.ok()) << r.status();
    std::cerr << n << " nodes: " << absl::ToDoubleSeconds(absl::Now() - start) << " s:";
    for (const PassRun& run : r->runs) std::cerr << " " << run.name << " " << run.wall_time_us << " us";
    std::cerr << "\n";
    ASSERT_TRUE(graph->memory_plan.has_value());
    const std::vector<NodeId> order = *graph->TopologicalOrder();
    const Liveness live = ComputeLiveness(*graph, order);
    // Storages: each in-place chain from its first value to its last value's last step.
    std::map<std::string, std::string> root;
    std::map<std::string, Placement> storage;
    for (const v1::PlannedBuffer& b : graph->memory_plan->buffers()) {
      const ValueId v = graph->FindValue(b.value());
      const int32_t def = live.def_step[v.value()];
      const int32_t last = std::max(def, live.last_use[v.value()]);
      if (b.shares_with().empty()) {
        root[b.value()] = b.value();
        storage[b.value()] = {def, last, b.offset(), b.size(), v.value()};
      } else {
        const std::string& r = root[b.value()] = root.at(b.shares_with());
        storage[r].last_step = std::max(storage[r].last_step, last);
      }
    }
    std::vector<Placement> placements;
    for (const auto& [name, p] : storage) placements.push_back(p);
    EXPECT_TRUE(CheckPlacements(placements).ok());
    EXPECT_GT(graph->memory_plan->buffers_size(), n / 2);
  }
}

}  // namespace
}  // namespace graphopt
