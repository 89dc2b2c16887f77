#include "graph/graph.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphopt {

void Graph::Reserve(int nodes, int values) {
  nodes_.reserve(nodes);
  node_alive_.reserve(nodes);
  node_kind_.reserve(nodes);
  use_slots_.reserve(nodes);
  EnsureNameSource();
  values_.reserve(values);
  name_source_->values = values_.data();
  value_by_name_.reserve(values);
}

absl::StatusOr<ValueId> Graph::AddValue(std::string name) {
  const int32_t slots = static_cast<int32_t>(values_.size());
  const ValueId id = FindOrAddValue(name);
  // An id from before the call is a live value that already has the name.
  if (id.value() < slots) {
    return absl::AlreadyExistsError(absl::StrCat("value '", name, "' already exists"));
  }
  return id;
}

ValueId Graph::FindOrAddValue(absl::string_view name) {
  EnsureNameSource();
  const ValueId id(static_cast<int32_t>(values_.size()));
  // One probe: finds the name's entry, or makes room for `id` where the probe ended. The new
  // value's slot is added right after, before anything hashes `id`.
  bool inserted = false;
  auto it = value_by_name_.lazy_emplace(name, [&](const auto& construct) {
    inserted = true;
    construct(id);
  });
  if (!inserted && values_[it->value()].alive) return *it;
  Value v;
  v.name = std::string(name);
  AppendValue(std::move(v));
  if (!inserted) {
    // The name of a removed value is free again: its entry goes, the new value's comes.
    value_by_name_.erase(it);
    value_by_name_.insert(id);
  }
  return id;
}

void Graph::AppendValue(Value v) {
  values_.push_back(std::move(v));
  name_source_->values = values_.data();
}

void Graph::EnsureNameSource() {
  if (name_source_ != nullptr) return;
  name_source_ = std::make_unique<NameSource>();
  name_source_->values = values_.data();
  NameTable fresh(0, NameHash{name_source_.get()}, NameEq{name_source_.get()});
  for (int i = 0; i < static_cast<int>(values_.size()); ++i) fresh.insert(ValueId(i));
  value_by_name_ = std::move(fresh);
}

ValueId Graph::AddUniqueValue(absl::string_view base) {
  std::string name(base);
  // Suffixes grow from the current value count, so a fresh name is found in O(1) expected tries.
  for (int64_t suffix = static_cast<int64_t>(values_.size());; ++suffix) {
    if (!FindValue(name).valid()) break;
    name = absl::StrCat(base, "_", suffix);
  }
  return *AddValue(std::move(name));
}

void Graph::AddGraphInput(ValueId value) {
  values_[value.value()].is_graph_input = true;
  inputs_.push_back(value);
}

void Graph::AddGraphOutput(ValueId value) {
  values_[value.value()].graph_output_count++;
  outputs_.push_back(value);
}

void Graph::SetInitializer(ValueId value, v1::Tensor tensor) {
  Value& v = values_[value.value()];
  if (v.initializer >= 0) {
    initializers_[v.initializer] = std::move(tensor);
    return;
  }
  v.initializer = static_cast<int32_t>(initializers_.size());
  initializers_.push_back(std::move(tensor));
  initializer_values_.push_back(value);
}

absl::StatusOr<NodeId> Graph::AddNode(std::string name, std::string op_type, std::string domain,
                                      absl::Span<const ValueId> inputs,
                                      absl::Span<const ValueId> outputs,
                                      AttributeMap attributes) {
  NodeId id(static_cast<int32_t>(nodes_.size()));
  // Each output is claimed for the new node as it is checked, so that a repeated one is seen
  // in O(1) (linear in the node's outputs); on an error the claims are undone.
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].valid()) continue;
    Value& v = values_[outputs[i].value()];
    const bool repeated = v.producer == id;
    if (repeated || v.producer.valid() || v.is_graph_input || v.initializer >= 0) {
      std::string message =
          repeated ? absl::StrCat("value '", v.name, "' is listed twice as an output")
                   : absl::StrCat("value '", v.name, "' is already defined");
      for (size_t j = 0; j < i; ++j) {
        if (outputs[j].valid()) values_[outputs[j].value()].producer = NodeId();
      }
      return absl::FailedPreconditionError(message);
    }
    v.producer = id;
  }
  topo_valid_ = false;
  const OpKindId kind = InternOpKind(std::move(domain), std::move(op_type));
  Node n;
  n.name = std::move(name);
  n.op_type = kind_names_[kind.value()].second;
  n.domain = kind_names_[kind.value()].first;
  n.inputs.assign(inputs.begin(), inputs.end());
  n.outputs.assign(outputs.begin(), outputs.end());
  n.attributes = std::move(attributes);
  n.has_subgraphs = HasGraphAttribute(n.attributes);
  num_subgraph_nodes_ += n.has_subgraphs ? 1 : 0;
  use_slots_.emplace_back(n.inputs.size(), -1);
  nodes_.push_back(std::move(n));
  node_alive_.push_back(1);
  node_kind_.push_back(kind);
  ++kind_live_count_[node_kind_.back().value()];
  Node& node = nodes_.back();
  for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) {
    if (node.inputs[i].valid()) AddUse(id, i);
  }
  for (int i = 0; i < static_cast<int>(node.outputs.size()); ++i) {
    if (!node.outputs[i].valid()) continue;
    Value& v = values_[node.outputs[i].value()];
    v.producer = id;
    v.producer_output = i;
  }
  ++num_live_nodes_;
  return id;
}

void Graph::AddUse(NodeId node, int index) {
  Value& v = values_[nodes_[node.value()].inputs[index].value()];
  use_slots_[node.value()][index] = static_cast<int32_t>(v.uses.size());
  v.uses.push_back(Use{node, index});
}

void Graph::RemoveUse(NodeId node, int index) {
  Value& v = values_[nodes_[node.value()].inputs[index].value()];
  int32_t& own_slot = use_slots_[node.value()][index];
  const int32_t slot = own_slot;
  // Swap-remove, then fix the back-pointer of the use that moved into `slot`.
  const Use moved = v.uses.back();
  v.uses[slot] = moved;
  v.uses.pop_back();
  if (slot < static_cast<int32_t>(v.uses.size())) {
    use_slots_[moved.node.value()][moved.input_index] = slot;
  }
  own_slot = -1;
}

void Graph::SetInput(NodeId node, int index, ValueId value) {
  Node& n = nodes_[node.value()];
  if (n.inputs[index] == value) return;
  topo_valid_ = false;
  if (n.inputs[index].valid()) RemoveUse(node, index);
  n.inputs[index] = value;
  if (value.valid()) AddUse(node, index);
}

void Graph::ReplaceAllUsesWith(ValueId from, ValueId to) {
  if (from == to) return;
  if (topo_valid_ && !values_[from.value()].uses.empty()) {
    // Every use of `from` comes after its producer; they stay in order when `to` is defined
    // no later than that (a graph input, an initializer, or an earlier node).
    const NodeId to_producer = values_[to.value()].producer;
    const NodeId from_producer = values_[from.value()].producer;
    if (to_producer.valid() &&
        (!from_producer.valid() ||
         topo_position_[to_producer.value()] > topo_position_[from_producer.value()])) {
      topo_valid_ = false;
    }
  }
  UseList uses = std::move(values_[from.value()].uses);
  values_[from.value()].uses.clear();
  Value& target = values_[to.value()];
  target.uses.reserve(target.uses.size() + uses.size());
  for (const Use& u : uses) {
    nodes_[u.node.value()].inputs[u.input_index] = to;
    use_slots_[u.node.value()][u.input_index] = static_cast<int32_t>(target.uses.size());
    target.uses.push_back(u);
  }
}

void Graph::ReplaceGraphOutput(ValueId from, ValueId to) {
  for (ValueId& out : outputs_) {
    if (out == from) {
      out = to;
      values_[from.value()].graph_output_count--;
      values_[to.value()].graph_output_count++;
    }
  }
}

ValueId Graph::DetachOutput(NodeId node, int index) {
  Node& n = nodes_[node.value()];
  const ValueId out = n.outputs[index];
  if (!out.valid()) return out;
  n.outputs[index] = ValueId();
  Value& v = values_[out.value()];
  v.producer = NodeId();
  v.producer_output = -1;
  // Its uses now wait for a producer that AddNode gives a new id.
  topo_valid_ = false;
  return out;
}

void Graph::RemoveNode(NodeId node) {
  Node& n = nodes_[node.value()];
  if (!n.alive) return;
  for (int i = 0; i < static_cast<int>(n.inputs.size()); ++i) {
    if (n.inputs[i].valid()) RemoveUse(node, i);
  }
  for (ValueId out : n.outputs) {
    if (!out.valid()) continue;
    Value& v = values_[out.value()];
    // Programmer error, not request data: passes must rewire uses before removing a producer.
    if (!v.uses.empty() || v.graph_output_count > 0) {
      std::abort();
    }
    // The name map keeps the entry; FindValue ignores dead values (no hash-table work here).
    v.alive = false;
    v.producer = NodeId();
  }
  n.alive = false;
  node_alive_[node.value()] = 0;
  --kind_live_count_[node_kind_[node.value()].value()];
  --num_live_nodes_;
  num_subgraph_nodes_ -= n.has_subgraphs ? 1 : 0;
}

absl::Status Graph::RenameValue(ValueId value, std::string name) {
  Value& v = values_[value.value()];
  if (v.name == name) return absl::OkStatus();
  if (auto it = value_by_name_.find(absl::string_view(name)); it != value_by_name_.end()) {
    if (values_[it->value()].alive) {
      return absl::AlreadyExistsError(absl::StrCat("value '", name, "' already exists"));
    }
    value_by_name_.erase(it);  // a removed value's name, free again
  }
  // The old name's entry (when it is this value's) goes before the name changes: it is found
  // by hashing the name.
  if (auto old = value_by_name_.find(absl::string_view(v.name));
      old != value_by_name_.end() && *old == value) {
    value_by_name_.erase(old);
  }
  v.name = std::move(name);
  value_by_name_.insert(value);
  // Subgraphs read values by name: a capture may now resolve elsewhere. Without subgraphs the
  // order stands.
  if (num_subgraph_nodes_ > 0) topo_valid_ = false;
  return absl::OkStatus();
}

void Graph::RemoveInitializer(ValueId value) {
  Value& v = values_[value.value()];
  if (v.initializer < 0 || !v.uses.empty() || v.is_graph_input || v.graph_output_count > 0) {
    return;
  }
  initializers_[v.initializer] = v1::Tensor();
  initializer_values_[v.initializer] = ValueId();
  v.initializer = -1;
  v.alive = false;
}

OpKindId Graph::InternOpKind(std::string domain, std::string op_type) {
  if (OpKindId kind = FindOpKind(domain, op_type); kind.valid()) return kind;
  const OpKindId kind(static_cast<int32_t>(kind_names_.size()));
  kinds_by_op_type_[op_type].push_back(kind);
  kind_names_.emplace_back(std::move(domain), std::move(op_type));
  kind_live_count_.push_back(0);
  return kind;
}

OpKindId Graph::FindOpKind(absl::string_view domain, absl::string_view op_type) const {
  auto it = kinds_by_op_type_.find(op_type);
  if (it == kinds_by_op_type_.end()) return OpKindId();
  for (OpKindId kind : it->second) {
    if (op_kind_domain(kind) == domain) return kind;
  }
  return OpKindId();
}

std::vector<NodeId> Graph::LiveNodesOfKinds(absl::Span<const OpKindId> kinds) const {
  std::vector<NodeId> out;
  int64_t expected = 0;
  for (OpKindId k : kinds) expected += num_live_nodes_of_kind(k);
  if (expected == 0) return out;
  out.reserve(expected);
  for (int i = 0; i < static_cast<int>(node_kind_.size()); ++i) {
    if (!node_alive_[i]) continue;
    for (OpKindId k : kinds) {
      if (node_kind_[i] == k) {
        out.push_back(NodeId(i));
        break;
      }
    }
  }
  return out;
}

std::vector<ValueId> Graph::InitializerValues() const {
  std::vector<ValueId> values;
  values.reserve(initializer_values_.size());
  for (ValueId v : initializer_values_) {
    if (v.valid()) values.push_back(v);
  }
  return values;
}

ValueId Graph::FindValue(absl::string_view name) const {
  auto it = value_by_name_.find(name);
  if (it == value_by_name_.end() || !values_[it->value()].alive) return ValueId();
  return *it;
}

const v1::Tensor* Graph::initializer_of(ValueId value) const {
  const Value& v = values_[value.value()];
  return v.initializer >= 0 ? &initializers_[v.initializer] : nullptr;
}

bool Graph::IsDefined(ValueId value) const {
  const Value& v = values_[value.value()];
  return v.alive && (v.producer.valid() || v.is_graph_input || v.initializer >= 0);
}

std::string Graph::NodeLabel(NodeId id) const {
  const Node& n = nodes_[id.value()];
  std::string op =
      n.domain.empty() ? n.op_type.str() : absl::StrCat(n.domain.str(), "::", n.op_type.str());
  if (n.name.empty()) return absl::StrCat("node #", id.value(), " (", op, ")");
  return absl::StrCat("node '", n.name.str(), "' (", op, ")");
}

absl::StatusOr<std::vector<NodeId>> Graph::TopologicalOrder() const {
  if (!topo_valid_) {
    absl::StatusOr<std::vector<NodeId>> order = ComputeTopologicalOrder();
    if (!order.ok()) return order.status();
    CacheOrder(*std::move(order));
  }
  // Removing nodes never breaks a topological order: drop the dead ones.
  std::vector<NodeId> order;
  order.reserve(num_live_nodes_);
  for (NodeId id : topo_cache_) {
    if (node_alive_[id.value()]) order.push_back(id);
  }
  return order;
}

void Graph::CacheOrder(std::vector<NodeId> order) const {
  topo_cache_ = std::move(order);
  topo_position_.assign(nodes_.size(), -1);
  for (size_t i = 0; i < topo_cache_.size(); ++i) {
    topo_position_[topo_cache_[i].value()] = static_cast<int32_t>(i);
  }
  topo_valid_ = true;
}

std::vector<NodeId> Graph::LiveNodesById() const {
  std::vector<NodeId> order;
  order.reserve(num_live_nodes_);
  for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) {
    if (node_alive_[i]) order.push_back(NodeId(i));
  }
  return order;
}

void Graph::NoteIdOrderIsTopological() const {
  if (topo_valid_ || !schedule_.empty() || num_subgraph_nodes_ > 0) return;
  CacheOrder(LiveNodesById());
}

std::string Graph::ScheduleProblem(const std::vector<NodeId>& order) const {
  std::vector<int32_t> position(nodes_.size(), -1);
  int32_t live = 0;
  for (NodeId id : order) {
    if (!id.valid() || id.value() >= static_cast<int>(nodes_.size())) {
      return absl::StrCat("node id ", id.value(), " does not exist");
    }
    if (!node_alive_[id.value()]) continue;
    if (position[id.value()] >= 0) return absl::StrCat(NodeLabel(id), " is listed twice");
    position[id.value()] = live++;
  }
  if (live != num_live_nodes_) {
    return absl::StrCat("it lists ", live, " of the ", num_live_nodes_, " live nodes");
  }
  for (NodeId id : order) {
    if (!node_alive_[id.value()]) continue;
    for (ValueId in : nodes_[id.value()].inputs) {
      if (!in.valid()) continue;
      NodeId p = values_[in.value()].producer;
      if (p.valid() && position[p.value()] >= position[id.value()]) {
        return absl::StrCat(NodeLabel(id), " comes before ", NodeLabel(p),
                            ", which produces its input '", values_[in.value()].name, "'");
      }
    }
    for (ValueId in : CapturedInputs(id)) {
      NodeId p = values_[in.value()].producer;
      if (p.valid() && position[p.value()] >= position[id.value()]) {
        return absl::StrCat(NodeLabel(id), " comes before ", NodeLabel(p), ", which produces '",
                            values_[in.value()].name, "' that its subgraph reads");
      }
    }
  }
  return "";
}

absl::Status Graph::SetSchedule(std::vector<NodeId> order) {
  std::string problem = ScheduleProblem(order);
  if (!problem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("not a schedule of the graph: ", problem));
  }
  schedule_ = std::move(order);
  topo_valid_ = false;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NodeId>> Graph::ComputeTopologicalOrder() const {
  const int n = static_cast<int>(nodes_.size());
  std::vector<NodeId> order;
  order.reserve(num_live_nodes_);

  // A recorded schedule wins while edits have kept it valid.
  if (!schedule_.empty() && ScheduleProblem(schedule_).empty()) {
    for (NodeId id : schedule_) {
      if (node_alive_[id.value()]) order.push_back(id);
    }
    return order;
  }

  // Values a node's subgraphs read by name (If/Loop/Scan captures) order it after their
  // producers just as its inputs do. Only nodes with graph attributes can have them.
  // Kept sparse: most graphs have no such node, and a per-node table would cost a pass over
  // memory of its own.
  absl::flat_hash_map<int32_t, std::vector<ValueId>> captured;     // node -> captured values
  absl::flat_hash_map<int32_t, std::vector<int32_t>> captured_by;  // value -> capturing nodes
  for (int i = 0; i < n && num_subgraph_nodes_ > 0; ++i) {
    if (!node_alive_[i] || !nodes_[i].has_subgraphs) continue;
    std::vector<ValueId> values = CapturedInputs(NodeId(i));
    if (values.empty()) continue;
    for (ValueId v : values) captured_by[v.value()].push_back(i);
    captured.emplace(i, std::move(values));
  }
  auto dependencies = [&](int i, auto&& fn) {
    const Node& node = nodes_[i];
    for (ValueId in : node.inputs) {
      if (in.valid()) fn(in);
    }
    if (captured.empty() || !node.has_subgraphs) return;
    if (auto it = captured.find(i); it != captured.end()) {
      for (ValueId in : it->second) fn(in);
    }
  };

  // Fast path: node-id order is already topological when every input is produced by a node
  // with a smaller id.
  bool sorted = true;
  for (int i = 0; i < n && sorted; ++i) {
    if (!node_alive_[i]) continue;
    dependencies(i, [&](ValueId in) {
      NodeId p = values_[in.value()].producer;
      if (p.valid() && p.value() >= i) sorted = false;
    });
  }
  if (sorted) return LiveNodesById();

  // Kahn's algorithm, always taking the smallest ready id: equals node-id order wherever the
  // dependencies allow it.
  std::vector<int32_t> pending(n, 0);
  for (int i = 0; i < n; ++i) {
    if (!node_alive_[i]) continue;
    dependencies(i, [&](ValueId in) {
      if (values_[in.value()].producer.valid()) ++pending[i];
    });
  }
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>> ready;
  for (int i = 0; i < n; ++i) {
    if (node_alive_[i] && pending[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    int32_t i = ready.top();
    ready.pop();
    order.push_back(NodeId(i));
    for (ValueId out : nodes_[i].outputs) {
      if (!out.valid()) continue;
      for (const Use& u : values_[out.value()].uses) {
        if (--pending[u.node.value()] == 0) ready.push(u.node.value());
      }
      if (auto it = captured_by.find(out.value()); it != captured_by.end()) {
        for (int32_t c : it->second) {
          if (--pending[c] == 0) ready.push(c);
        }
      }
    }
  }
  if (static_cast<int>(order.size()) == num_live_nodes_) return order;

  // A cycle: start at the smallest unsorted node and follow unsorted producers until a node
  // repeats; that tail is a cycle. Iterative, bounded by the node count.
  std::vector<int32_t> seen_at(n, -1);
  std::vector<int32_t> path;
  int32_t cur = -1;
  for (int i = 0; i < n; ++i) {
    if (node_alive_[i] && pending[i] > 0) {
      cur = i;
      break;
    }
  }
  while (cur >= 0 && seen_at[cur] < 0) {
    seen_at[cur] = static_cast<int32_t>(path.size());
    path.push_back(cur);
    int32_t next = -1;
    dependencies(cur, [&](ValueId in) {
      NodeId p = values_[in.value()].producer;
      if (next < 0 && p.valid() && pending[p.value()] > 0) next = p.value();
    });
    cur = next;
  }
  std::vector<std::string> labels;
  if (cur >= 0) {
    for (size_t k = seen_at[cur]; k < path.size() && labels.size() < 8; ++k) {
      labels.push_back(NodeLabel(NodeId(path[k])));
    }
  }
  const size_t cycle_len = cur >= 0 ? path.size() - seen_at[cur] : 0;
  std::reverse(labels.begin(), labels.end());
  return absl::InvalidArgumentError(absl::StrCat(
      "graph has a cycle through ", labels.empty() ? "unknown nodes" : labels.front(), " (",
      absl::StrJoin(labels, " -> "), cycle_len > labels.size() ? " -> ..." : "", ")"));
}

std::vector<std::string> FreeNames(const v1::Graph& root) {
  // Frames of nested graphs, walked without recursion: each keeps the names it defines.
  struct Frame {
    const v1::Graph* graph;
    absl::flat_hash_set<std::string> defined;
    int parent;
  };
  std::vector<Frame> frames;
  std::vector<std::string> free;
  absl::flat_hash_set<std::string> seen;
  frames.push_back({&root, {}, -1});
  for (size_t f = 0; f < frames.size(); ++f) {
    const v1::Graph& g = *frames[f].graph;
    auto& defined = frames[f].defined;
    for (const auto& v : g.inputs()) defined.insert(v.name());
    for (const auto& t : g.initializers()) defined.insert(t.name());
    for (const auto& n : g.nodes()) {
      for (const auto& o : n.outputs()) defined.insert(o);
    }
    for (const auto& n : g.nodes()) {
      for (const auto& a : n.attributes()) {
        if (a.value_case() == v1::Attribute::kG) frames.push_back({&a.g(), {}, static_cast<int>(f)});
        if (a.value_case() == v1::Attribute::kGraphs) {
          for (const auto& sub : a.graphs().values()) frames.push_back({&sub, {}, static_cast<int>(f)});
        }
      }
    }
  }
  // A name read in frame f is free when no frame on the path from f to the root defines it.
  for (size_t f = 0; f < frames.size(); ++f) {
    auto visit = [&](const std::string& name) {
      if (name.empty()) return;
      for (int p = static_cast<int>(f); p >= 0; p = frames[p].parent) {
        if (frames[p].defined.contains(name)) return;
      }
      if (seen.insert(name).second) free.push_back(name);
    };
    for (const auto& n : frames[f].graph->nodes()) {
      for (const auto& i : n.inputs()) visit(i);
    }
    for (const auto& o : frames[f].graph->outputs()) visit(o.name());
  }
  return free;
}

absl::Status CheckSubgraphDepth(const v1::Attribute& attribute, int levels_left) {
  // Graphs still to look into, with their level below the attribute's node (1: a body).
  std::vector<std::pair<const v1::Graph*, int>> stack;
  auto push = [&](const v1::Attribute& a, int level) -> absl::Status {
    if (a.value_case() != v1::Attribute::kG && a.value_case() != v1::Attribute::kGraphs) {
      return absl::OkStatus();
    }
    if (level > levels_left) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph attributes nest more than ", kMaxSubgraphDepth, " levels deep"));
    }
    if (a.value_case() == v1::Attribute::kG) stack.emplace_back(&a.g(), level);
    for (const v1::Graph& g : a.graphs().values()) stack.emplace_back(&g, level);
    return absl::OkStatus();
  };
  if (absl::Status s = push(attribute, 1); !s.ok()) return s;
  while (!stack.empty()) {
    const auto [graph, level] = stack.back();
    stack.pop_back();
    for (const v1::Node& n : graph->nodes()) {
      for (const v1::Attribute& a : n.attributes()) {
        if (absl::Status s = push(a, level + 1); !s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

bool HasGraphAttribute(const AttributeMap& attributes) {
  for (const auto& [name, attribute] : attributes) {
    if (attribute.value_case() == v1::Attribute::kG ||
        attribute.value_case() == v1::Attribute::kGraphs) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> SubgraphFreeNames(const Node& node) {
  std::vector<std::string> names;
  absl::flat_hash_set<std::string> seen;
  auto add = [&](const v1::Graph& body) {
    for (std::string& name : FreeNames(body)) {
      if (seen.insert(name).second) names.push_back(std::move(name));
    }
  };
  for (const auto& [name, attribute] : node.attributes) {
    if (attribute.value_case() == v1::Attribute::kG) add(attribute.g());
    if (attribute.value_case() == v1::Attribute::kGraphs) {
      for (const v1::Graph& body : attribute.graphs().values()) add(body);
    }
  }
  return names;
}

std::vector<ValueId> Graph::CapturedInputs(NodeId id) const {
  std::vector<ValueId> captured;
  const Node& node = nodes_[id.value()];
  if (node.attributes.empty()) return captured;
  for (const std::string& name : SubgraphFreeNames(node)) {
    ValueId v = FindValue(name);
    if (v.valid()) captured.push_back(v);  // else read from a graph further out
  }
  std::sort(captured.begin(), captured.end());
  return captured;
}

}  // namespace graphopt
