#ifndef GRAPHOPT_FUZZ_FUZZ_UTIL_H_
#define GRAPHOPT_FUZZ_FUZZ_UTIL_H_

// Helpers shared by the fuzz targets (fuzz/*_fuzzer.cc) and their seed tool: the registries
// they run against, the layout of their inputs, and the one-node graphs on which the rule and
// descriptor targets evaluate an op's rules.

#include <cstddef>
#include <cstdint>

#include "graph/op_registry.h"
#include "proto/graph.pb.h"
#include "proto/op.pb.h"

namespace graphopt {
namespace fuzz {

// Silences protobuf's error log (every mutated input that is not valid UTF-8 in a string field
// logs one line). Every target linking this library does so at start: fuzz_util.cc defines
// libFuzzer's LLVMFuzzerInitialize.
void QuietProtobuf();

// The builtin ops, registered once per process and never changed afterwards (libFuzzer's entry
// point has no context to carry them). Aborts when registration fails: a programmer bug.
const OpRegistry& BuiltinOps();

// --- graph_pipeline_fuzzer: byte 0 holds these flags, the rest is a serialized v1::Graph. ---
inline constexpr uint8_t kGraphO3 = 1;           // -O3 instead of -O2
inline constexpr uint8_t kGraphVerifyEach = 2;   // verify after every pass that changed
inline constexpr uint8_t kGraphBindBatch = 4;    // dim binding batch=2
inline constexpr size_t kGraphHeaderBytes = 1;

// --- rule_fuzzer: 4 header bytes, then the rule text. ---
// Byte 0: the op whose descriptor the rule is checked against (index into RuleFuzzOps(),
// modulo its size); byte 1: the rule kind (modulo 3: shape, type, cost.flops); byte 2: the
// first scenario of OneNodeGraph evaluated; byte 3: the opset version imported (0: none).
inline constexpr size_t kRuleHeaderBytes = 4;
// Builtin ops whose descriptors the rule target uses (the rule-language ports of
// rules/dogfood/onnx_ops.pbtxt and rules/example_rules.h among them).
const char* const* RuleFuzzOps(size_t* count);
// Index of `name` in RuleFuzzOps(), or -1.
int RuleFuzzOpIndex(const char* name);

// A graph with one node of `op` (its domain and name) for `scenario` (any int; it is reduced
// modulo the number of scenarios): inputs are graph inputs of the first dtype their type
// constraint allows, with shapes that vary by scenario and input (static, symbolic, scalar,
// unknown rank, unknown dims) or, where the constraint allows int64, small int64 initializers
// (shape tensors, axes). Optional inputs are present or omitted by scenario, a variadic input
// repeats one to three times, required attributes get a value of their type (and, in some
// scenarios, the optional ones too). opset_version 0 imports no opset.
v1::Graph OneNodeGraph(const v1::OpDescriptor& op, int scenario, int64_t opset_version);
inline constexpr int kNumScenarios = 6;

}  // namespace fuzz
}  // namespace graphopt

#endif  // GRAPHOPT_FUZZ_FUZZ_UTIL_H_
