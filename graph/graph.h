#ifndef GRAPHOPT_GRAPH_GRAPH_H_
#define GRAPHOPT_GRAPH_GRAPH_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/huge_page_allocator.h"
#include "graph/ids.h"
#include "graph/shared_string.h"
#include "graph/types.h"
#include "proto/graph.pb.h"

namespace graphopt {

// Attributes of a node, sorted by name so that iteration is deterministic.
using AttributeMap = absl::btree_map<std::string, v1::Attribute>;

// A use of a value: input `input_index` of node `node`.
struct Use {
  NodeId node;
  int32_t input_index = 0;
};

// Small lists kept inline in nodes and values: most nodes have few inputs and outputs and most
// values few uses, and passes walk them for every node, so they should not be a heap hop away.
using ValueIdList = absl::InlinedVector<ValueId, 3>;
using UseList = absl::InlinedVector<Use, 2>;

// Fields are ordered like Node's: what passes scanning every value slot read comes first.
struct Value {
  bool alive = true;
  bool is_graph_input = false;
  // Number of times this value is listed among the graph outputs.
  int32_t graph_output_count = 0;
  // Index into Graph::initializers(), or -1.
  int32_t initializer = -1;
  // Producing node and which of its outputs; invalid for graph inputs and initializers.
  NodeId producer;
  int32_t producer_output = -1;
  // Node inputs reading this value, in no particular order.
  UseList uses;
  TensorType type;
  // Set through the Graph only (AddValue, RenameValue): its name table hashes this string.
  std::string name;
  SharedString doc_string;
};

// 128 bytes, two cache lines, fields ordered by how often passes read them: a pass scanning
// every node slot touches `alive`, the edges (inputs, outputs) and the op_type, all in the
// first line; attributes and the strings are in the second. The op is found through the
// graph's dense op kinds (Graph::op_kind) rather than the strings. The strings are
// SharedStrings (8 bytes: every node of a kind shares its op_type's text) and the use-list
// positions of the inputs are kept by the Graph, beside the slots. Sweeps over node slots that
// do not fit in the caches pay for every byte of a slot, so it is kept to two cache lines.
struct alignas(64) Node {
  bool alive = true;
  // Whether an attribute holds a graph (If/Loop/Scan bodies, fused groups): set by AddNode,
  // the only way a node gets graph attributes (VerifyGraph checks this). Passes may edit other
  // attributes in place.
  bool has_subgraphs = false;
  // Invalid ids mark omitted optional inputs/outputs.
  ValueIdList inputs;
  ValueIdList outputs;
  // Set by AddNode from the interned kind; not to be edited in place (VerifyGraph checks).
  SharedString op_type;
  AttributeMap attributes;
  // "" (the ONNX domain) for almost every node.
  SharedString domain;
  SharedString name;
  SharedString doc_string;
  // Device assignment ("" = the default); set by placement or carried from the input.
  SharedString device;
};
static_assert(sizeof(Node) == 128, "Node is meant to be two cache lines");

// The graph IR: dense node and value ids, O(1) producer and consumer lookup, and cheap
// mutation. Removed nodes and values stay as tombstones (alive == false) until the graph is
// written out, so ids stay stable while passes run.
//
// Invariants kept by every mutator: each live value has at most one producer; value names are
// unique among live values; Value::uses lists exactly the live node inputs reading the value.
class Graph {
 public:
  Graph() = default;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // --- Building -----------------------------------------------------------------------------

  // Reserves room for this many nodes and values (an optimization for bulk building).
  void Reserve(int nodes, int values);

  // Adds a value without a producer. Fails with ALREADY_EXISTS when the name is taken.
  absl::StatusOr<ValueId> AddValue(std::string name);
  // The live value named `name`, added (without a producer) when there is none: one hash-table
  // probe where FindValue and AddValue take two.
  ValueId FindOrAddValue(absl::string_view name);
  // Adds a value named after `base`, made unique with a numeric suffix when needed.
  ValueId AddUniqueValue(absl::string_view base);
  // Marks an existing value as a graph input (appended to inputs()).
  void AddGraphInput(ValueId value);
  // Appends `value` to the graph outputs.
  void AddGraphOutput(ValueId value);
  // Stores `tensor` as the initializer of `value`.
  void SetInitializer(ValueId value, v1::Tensor tensor);

  // Adds a node reading `inputs` and producing `outputs` (values without a producer yet).
  // Returns FAILED_PRECONDITION when an output already has a producer or is an input or
  // initializer.
  absl::StatusOr<NodeId> AddNode(std::string name, std::string op_type, std::string domain,
                                 absl::Span<const ValueId> inputs,
                                 absl::Span<const ValueId> outputs, AttributeMap attributes = {});

  // --- Mutation -----------------------------------------------------------------------------

  // Rewires input `index` of `node` to `value` (may be invalid to omit it).
  void SetInput(NodeId node, int index, ValueId value);
  // Points every node input that reads `from` at `to`. Graph outputs are not touched.
  void ReplaceAllUsesWith(ValueId from, ValueId to);
  // Replaces graph output entries equal to `from` by `to`.
  void ReplaceGraphOutput(ValueId from, ValueId to);
  // Makes `node` stop producing its output `index` (the slot becomes omitted) and returns that
  // value, which keeps its name, type, uses and graph-output entries and waits for a new
  // producer (AddNode): how a node is replaced by others that produce its values. Invalid when
  // the slot was already omitted.
  ValueId DetachOutput(NodeId node, int index);
  // Removes `node`, unlinking its inputs; its outputs become dead values. The outputs must have
  // no remaining uses and must not be graph outputs (checked).
  void RemoveNode(NodeId node);
  // Renames a value; fails with ALREADY_EXISTS if the name is taken by another live value.
  absl::Status RenameValue(ValueId value, std::string name);
  // Drops an initializer that is neither used, a graph input nor a graph output.
  void RemoveInitializer(ValueId value);

  // --- Lookup -------------------------------------------------------------------------------

  int num_node_slots() const { return static_cast<int>(nodes_.size()); }
  int num_value_slots() const { return static_cast<int>(values_.size()); }
  // Node slots the graph has room for without reallocating (Reserve).
  int node_slot_capacity() const { return static_cast<int>(nodes_.capacity()); }
  int num_live_nodes() const { return num_live_nodes_; }
  // Live nodes with graph attributes. When 0 (most graphs), nothing reads values by name and
  // passes can skip looking for captures.
  int num_subgraph_nodes() const { return num_subgraph_nodes_; }

  const Node& node(NodeId id) const { return nodes_[id.value()]; }
  Node& mutable_node(NodeId id) { return nodes_[id.value()]; }
  const Value& value(ValueId id) const { return values_[id.value()]; }
  Value& mutable_value(ValueId id) { return values_[id.value()]; }

  // Live value with this name, or an invalid id.
  ValueId FindValue(absl::string_view name) const;

  // --- Op kinds -----------------------------------------------------------------------------
  // Every node's (domain, op_type) is interned when the node is added (the two fields do not
  // change afterwards; VerifyGraph checks), so a pass looking for one op reads 4 dense bytes
  // per node slot instead of the node, and one that finds none of its ops in the graph skips
  // the sweep.

  // Kinds interned so far: valid kind ids are below this.
  int num_op_kinds() const { return static_cast<int>(kind_names_.size()); }
  // The interned kind of a node slot (dead ones keep theirs).
  OpKindId op_kind(NodeId id) const { return node_kind_[id.value()]; }
  // The (domain, op_type) a kind stands for: the texts its nodes' fields share.
  const SharedString& op_kind_domain(OpKindId kind) const {
    return kind_names_[kind.value()].first;
  }
  const SharedString& op_kind_type(OpKindId kind) const {
    return kind_names_[kind.value()].second;
  }
  // The kind of (domain, op_type), or an invalid id when no node of the graph ever had it.
  OpKindId FindOpKind(absl::string_view domain, absl::string_view op_type) const;
  // Live nodes of this kind (0 for an invalid id).
  int num_live_nodes_of_kind(OpKindId kind) const {
    return kind.valid() ? kind_live_count_[kind.value()] : 0;
  }
  int num_live_nodes_of_op(absl::string_view domain, absl::string_view op_type) const {
    return num_live_nodes_of_kind(FindOpKind(domain, op_type));
  }
  // The live nodes of any of these kinds (invalid ones ignored), in id order. O(node slots)
  // over the dense kind array; nothing when none of them has a live node.
  std::vector<NodeId> LiveNodesOfKinds(absl::Span<const OpKindId> kinds) const;

  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }

  // All initializer tensors, indexed by Value::initializer. Removed ones are left empty.
  const std::vector<v1::Tensor>& initializers() const { return initializers_; }
  // The values holding an initializer, in initializers() order, removed ones left out: lets a
  // pass visit the initializers without a sweep over every value slot.
  std::vector<ValueId> InitializerValues() const;
  const v1::Tensor* initializer_of(ValueId value) const;
  // Moves the initializer tensors out, for writing a graph out once at the end of its life;
  // afterwards the graph may only be read for its structure (GraphToProto) and destroyed.
  std::vector<v1::Tensor> TakeInitializers() { return std::move(initializers_); }

  // True when `value` is defined: produced by a node, a graph input, or an initializer.
  bool IsDefined(ValueId value) const;

  // Live nodes in a deterministic topological order: the recorded schedule (SetSchedule) while
  // it still is a topological order of exactly the live nodes; otherwise the node-id order
  // whenever it already is topological, otherwise the order that always picks the smallest
  // ready node id. A node comes after the producers of its inputs and of the values its
  // subgraphs read by name (CapturedInputs). O(n) in the first cases, O(n log n) in the last,
  // plus the size of the subgraphs. INVALID_ARGUMENT naming nodes on a cycle.
  // The order is cached until an edit that can change it (AddNode, SetInput,
  // ReplaceAllUsesWith with a value defined later than the one replaced; removing nodes keeps
  // it), so a Graph must not be read from two threads.
  absl::StatusOr<std::vector<NodeId>> TopologicalOrder() const;

  // For a caller that has checked, in a sweep of its own, that every input of every live node
  // is produced by a node with a smaller id (or is a graph input or initializer): records
  // node-id order as the cached topological order, sparing TopologicalOrder a sweep over every
  // node and value. Does nothing while a schedule is recorded or when some node has subgraphs
  // (whose captures the caller's check does not see). VerifyGraph is the caller. O(nodes) over
  // dense bytes.
  void NoteIdOrderIsTopological() const;

  // Records `order` as the execution schedule that TopologicalOrder() returns (dead nodes left
  // out) until an edit adds a node or an edge it does not respect. INVALID_ARGUMENT unless
  // `order` lists every live node once, producers before readers. O(n).
  absl::Status SetSchedule(std::vector<NodeId> order);

  // Values of this graph that the graph attributes of `node` (If/Loop/Scan bodies) read by name,
  // sorted by id; names a body reads that this graph does not define (values of graphs further
  // out) are left out. They order the node after their producers in TopologicalOrder.
  std::vector<ValueId> CapturedInputs(NodeId node) const;

  // Where input `index` of `node` is listed in that input's Value::uses (-1 when the input is
  // omitted). For checking the graph's invariants.
  int32_t use_slot(NodeId node, int index) const { return use_slots_[node.value()][index]; }

  // "node 'conv1' (Conv)" or "node #12 (Conv)" for unnamed nodes; used in every error message.
  std::string NodeLabel(NodeId id) const;

  // Graph-level fields carried through unchanged.
  std::string name;
  std::string doc_string;
  std::vector<v1::OpsetImport> opset_imports;
  // Model-level metadata of an imported model (absent for native graphs).
  std::optional<v1::ModelMetadata> model;
  // Memory plan annotation (the plan_memory pass); absent when the graph is unplanned.
  std::optional<v1::MemoryPlan> memory_plan;
  // Persistent state and the outputs that replace it after each execution (see
  // v1::Graph.state_updates); VerifyGraph checks the names.
  std::vector<v1::StateUpdate> state_updates;

 private:
  // Starts loading the name table's slot for `name` (graph/prefetch.h).
  friend inline void PrefetchName(const Graph& graph, absl::string_view name);
  absl::StatusOr<std::vector<NodeId>> ComputeTopologicalOrder() const;
  // Makes `order` (a topological order of the node slots) the cached one.
  void CacheOrder(std::vector<NodeId> order) const;
  // The live nodes in id order.
  std::vector<NodeId> LiveNodesById() const;
  // Why `order` is not a topological order of exactly the live nodes ("" when it is).
  std::string ScheduleProblem(const std::vector<NodeId>& order) const;
  // Appends a value slot (its name already set) and points the name table at the new buffer.
  void AppendValue(Value v);
  void AddUse(NodeId node, int index);
  void RemoveUse(NodeId node, int index);
  OpKindId InternOpKind(std::string domain, std::string op_type);
  // The node and value slots live on huge pages once large (HugePageAllocator): passes sweep
  // them and jump between them by id.
  std::vector<Node, HugePageAllocator<Node>> nodes_;
  // For each node slot, per input: the position of that use in the input's Value::uses (O(1)
  // unlinking). Beside the slots rather than in them: only edits read it.
  std::vector<absl::InlinedVector<int32_t, 3>> use_slots_;
  // Node::alive of every slot, dense: scans that only skip dead nodes read a byte per node
  // instead of a node's cache line.
  std::vector<char> node_alive_;
  // Interned op kind of every node slot (see op_kind); per kind its (domain, op_type) and live
  // node count; the kinds of each op_type (one per domain it appears in).
  std::vector<OpKindId> node_kind_;
  std::vector<std::pair<SharedString, SharedString>> kind_names_;
  std::vector<int32_t> kind_live_count_;
  absl::flat_hash_map<std::string, absl::InlinedVector<OpKindId, 1>> kinds_by_op_type_;
  std::vector<Value, HugePageAllocator<Value>> values_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<v1::Tensor> initializers_;
  // initializer_values_[i] holds initializers_[i]; invalid once removed.
  std::vector<ValueId> initializer_values_;
  // The name table: value ids hashed and compared by their values' names, which are stored
  // once, in the values, and looked up by string_view: 4 bytes a slot, a tenth of a map holding
  // a copy of every name (a lookup is one memory round trip per edge while a graph is read, and
  // the table's pages are zeroed afresh for every graph). The functors reach the names through
  // `NameSource`, on the heap so that its address survives moves of the Graph; it follows
  // values_'s buffer, which moves only when values_ grows (FindOrAddValue, Reserve).
  struct NameSource {
    const Value* values = nullptr;
    absl::string_view name(ValueId id) const { return values[id.value()].name; }
  };
  struct NameHash {
    using is_transparent = void;
    const NameSource* source = nullptr;
    size_t operator()(absl::string_view s) const { return absl::Hash<absl::string_view>()(s); }
    size_t operator()(ValueId id) const { return (*this)(source->name(id)); }
  };
  struct NameEq {
    using is_transparent = void;
    const NameSource* source = nullptr;
    bool operator()(ValueId a, ValueId b) const { return source->name(a) == source->name(b); }
    bool operator()(ValueId a, absl::string_view b) const { return source->name(a) == b; }
    bool operator()(absl::string_view a, ValueId b) const { return a == source->name(b); }
  };
  using NameTable = absl::flat_hash_set<ValueId, NameHash, NameEq, HugePageAllocator<ValueId>>;
  // Gives a graph that was moved from (and so lost its NameSource) a fresh, empty name table
  // before it grows again.
  void EnsureNameSource();
  std::unique_ptr<NameSource> name_source_ = std::make_unique<NameSource>();
  // Holds, per name, the id of the value that had it last (dead ones included: FindValue
  // checks). Declared after name_source_, whose address its functors hold.
  NameTable value_by_name_{0, NameHash{name_source_.get()}, NameEq{name_source_.get()}};
  int num_live_nodes_ = 0;
  int num_subgraph_nodes_ = 0;
  // Topological order of the node slots (dead ones included) while topo_valid_, and each
  // cached node's position in it.
  mutable std::vector<NodeId> topo_cache_;
  mutable std::vector<int32_t> topo_position_;
  mutable bool topo_valid_ = false;
  // Set by SetSchedule; may hold dead nodes.
  std::vector<NodeId> schedule_;
};

// Names read by `graph` (and by graphs nested in its attributes) that `graph` itself does not
// define, in first-read order: what a subgraph captures from its enclosing graphs. Iterative.
std::vector<std::string> FreeNames(const v1::Graph& graph);

// True when some attribute holds a graph or a list of graphs.
bool HasGraphAttribute(const AttributeMap& attributes);

// How deep graphs may nest in graph attributes (If/Loop/Scan bodies, fused groups): a plan's
// graph is level 0, a body of one of its nodes level 1. Deeper graphs are refused
// (GraphFromProto, Executor) with INVALID_ARGUMENT: what walks nested graphs is then bounded.
inline constexpr int kMaxSubgraphDepth = 64;

// OK when no graph nested in `attribute` (as a graph or list of graphs) lies more than
// `levels_left` levels down; INVALID_ARGUMENT saying so otherwise. Iterative.
absl::Status CheckSubgraphDepth(const v1::Attribute& attribute, int levels_left);

// Names the graph attributes of `node` (If/Loop/Scan bodies) read from outside themselves, in
// first-read order without duplicates.
std::vector<std::string> SubgraphFreeNames(const Node& node);

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_GRAPH_H_
