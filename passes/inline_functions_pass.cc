#include "passes/inline_functions_pass.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/verifier.h"

namespace graphopt {
namespace {

bool HasBody(const OpDef& op) {
  return op.descriptor.has_body() && op.descriptor.body().outputs_size() > 0;
}

std::string Label(const OpDef& op) { return OpLabel(op.descriptor.domain(), op.descriptor.name()); }

// One value of a body, by its position in Template::values.
struct LocalValue {
  std::string name;
  int input = -1;                           // body input index, or -1
  const v1::Tensor* initializer = nullptr;  // body initializer (a default when also an input)
  int producer = -1;                        // index of the body node producing it, or -1
};

struct BodyNode {
  const v1::Node* proto = nullptr;
  // "/name", or "/Op_k" for an unnamed node k: appended to the instance's prefix.
  std::string name_suffix;
  std::vector<int> inputs;   // local value indices; -1 for an absent input
  std::vector<int> outputs;  // local value indices; -1 for an omitted output
  int inner = -1;            // template of its op when that op is inlined too
};

// An op's body resolved once: names to local indices, checked, acyclic.
struct Template {
  const OpDef* op = nullptr;
  std::string label;
  int num_inputs = 0;
  std::vector<LocalValue> values;
  std::vector<BodyNode> nodes;
  std::vector<int> outputs;  // local value of each body output
  // From the walk over templates: nodes one instance becomes when fully expanded (an upper
  // bound, saturating), and bodies nested in it (1 when none of its nodes is inlined further).
  int64_t expanded_nodes = 0;
  // Node slots the expansion of one instance takes: besides the nodes it becomes, one for each
  // nested node, added before it is expanded in turn and left as a tombstone (saturating).
  int64_t slots = 0;
  int depth = 0;
};

struct Item {
  NodeId node;
  int tmpl = -1;
  int depth = 0;
};

struct Options {
  absl::btree_set<std::string> ops;  // op labels; empty: every op with a body and no effects
  int64_t max_new_nodes = kDefaultMaxInlinedNodes;
};

// Replaces every node whose op has a decomposition body (OpDescriptor.body with at least one
// output) by the body's nodes, so that later passes and workers see only primitives.
//
// Binding, for a node N and its op's body B: B.inputs[i] is N's input i (an absent optional
// input, or one past N's inputs, makes every use of it absent, unless B also has an initializer
// of that name, which is then the default); B.outputs[j] is N's output j: B's node producing it
// now produces N's value, which keeps its name, type and graph-output entries. When B's output j
// is no node's output of its own (it is one of B's inputs or initializers, or a value already
// bound to an earlier output), an Identity node copies it into N's output j (eliminate_identity
// removes it later where the graph's interface allows). Every other value of B gets a fresh name
// "<prefix>/<name in B>" (made unique with a numeric suffix), where the prefix is N's name or
// "<Op>#<node id>" for an unnamed node; B's nodes are named "<prefix>/<name in B>" (or
// "<prefix>/<Op>_<k>" when unnamed) and take N's device; B's initializers become graph
// initializers. An attribute with ref_attr_name takes N's attribute of that name, else the
// descriptor's declared default, else it is left out; other attributes, subgraphs included, are
// copied as they are.
//
// Bodies using ops with bodies are expanded from a worklist (no recursion), at most
// kMaxInlineNestingDepth levels deep. Before the graph is touched every body involved is checked
// (values defined once and before use, known ops, no cycle, ref_attr_name declared), ops whose
// bodies use themselves are refused, and the number of nodes the run adds is bounded by
// `max_new_nodes`: INVALID_ARGUMENT naming the op. Ops with side effects or mutated inputs are
// left alone unless named in `ops` (a pure body cannot carry their effects). Linear in the size
// of the result. On an error found while expanding (a body node the verifier rejects), the
// graph is left partly inlined; the pipeline returns the error and the graph is dropped.
class InlineFunctionsPass : public Pass {
 public:
  explicit InlineFunctionsPass(Options options) : options_(std::move(options)) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    ops_ = context.ops;
    for (const std::string& label : options_.ops) {
      if (!OpByLabel(label)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "option 'ops': '", label, "' is not a known op with a decomposition body"));
      }
    }
    // 1. The nodes to inline and the templates of their ops, nested ones included.
    std::vector<Item> work;
    int64_t left_with_effects = 0;
    // Without ops that have bodies (the builtins alone) there is nothing to look up per node.
    const int scanned = ops_->HasOpsWithBodies() ? graph.num_node_slots() : 0;
    for (int i = 0; i < scanned; ++i) {
      if (absl::Status s = context.CheckStopEvery(i); !s.ok()) return s;
      const Node& n = graph.node(NodeId(i));
      if (!n.alive) continue;
      const OpDef* op = ops_->Find(n.domain, n.op_type);
      if (op == nullptr) continue;
      if (!Selected(op)) {
        if (HasBody(*op) && HasEffects(*op)) ++left_with_effects;
        continue;
      }
      absl::StatusOr<int> t = TemplateFor(op);
      if (!t.ok()) return t.status();
      work.push_back(Item{NodeId(i), *t, 0});
    }
    if (absl::Status s = CompileNested(); !s.ok()) return s;
    if (absl::Status s = Measure(); !s.ok()) return s;
    // 2. Everything that can be checked before the first edit.
    int64_t total = 0;
    int64_t slots = 0;
    for (const Item& item : work) {
      const Template& t = templates_[item.tmpl];
      if (absl::Status s = CheckBinding(graph, item.node, t); !s.ok()) return s;
      total = std::min(total + t.expanded_nodes, options_.max_new_nodes + 1);
      slots = std::min(slots + t.slots, options_.max_new_nodes + 1);
      if (total > options_.max_new_nodes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "inlining would add more than ", options_.max_new_nodes, " nodes (", t.label,
            " becomes up to ", t.expanded_nodes, " nodes per node; option max_new_nodes)"));
      }
    }
    // Room for every slot the expansion takes (nested nodes too, which stay as tombstones): a
    // reservation short of that would copy the slot arrays into twice the memory near the end,
    // and on large graphs most of that copy's time is the kernel zeroing the new pages.
    if (slots > 0) {
      graph.Reserve(graph.num_node_slots() + static_cast<int>(slots),
                    graph.num_value_slots() + static_cast<int>(slots));
    }
    // 3. Expand, breadth first: nested nodes join the back of the list.
    absl::btree_map<std::string, int64_t> inlined;
    int64_t added = 0;
    for (size_t next = 0; next < work.size(); ++next) {
      // Expansions are a few nodes each, bounded by max_new_nodes in all.
      if (absl::Status s = context.CheckStopEvery(next); !s.ok()) return s;
      const Item item = work[next];
      const Template& t = templates_[item.tmpl];
      if (item.depth >= kMaxInlineNestingDepth) {
        return absl::InvalidArgumentError(absl::StrCat("op ", t.label, ": bodies nest more than ",
                                                       kMaxInlineNestingDepth, " deep"));
      }
      absl::StatusOr<int64_t> n = Expand(graph, item, &work);
      if (!n.ok()) return n.status();
      added += *n;
      if (added > options_.max_new_nodes) {
        return absl::InvalidArgumentError(
            absl::StrCat("inlining would add more than ", options_.max_new_nodes, " nodes"));
      }
      ++inlined[t.label];
    }
    std::string message = absl::StrCat("inlined ", work.size(), " nodes");
    if (!inlined.empty()) {
      absl::StrAppend(&message, " (", absl::StrJoin(inlined, ", ", absl::PairFormatter(": ")),
                      "), adding ", added, " nodes");
    }
    if (left_with_effects > 0) {
      absl::StrAppend(&message, "; left ", left_with_effects,
                      " nodes of ops with side effects or mutated inputs (name them in 'ops')");
    }
    context.Note(std::move(message));
    return !work.empty();
  }

 private:
  // True when nodes of `op` are inlined.
  bool Selected(const OpDef* op) {
    auto [it, inserted] = selected_.try_emplace(op, false);
    if (inserted) {
      it->second = HasBody(*op) &&
                   (options_.ops.empty() ? !HasEffects(*op) : options_.ops.contains(Label(*op)));
    }
    return it->second;
  }

  // The op named by "domain::name" or "name", when it has a body.
  bool OpByLabel(absl::string_view label) const {
    const size_t sep = label.rfind("::");
    const OpDef* op = sep == absl::string_view::npos
                          ? ops_->Find("", label)
                          : ops_->Find(label.substr(0, sep), label.substr(sep + 2));
    return op != nullptr && HasBody(*op);
  }

  // The index of `op`'s template, compiling it on first use (its nested ops are compiled by
  // CompileNested, from the same list, so nothing here recurses).
  absl::StatusOr<int> TemplateFor(const OpDef* op) {
    auto it = template_index_.find(op);
    if (it != template_index_.end()) return it->second;
    absl::StatusOr<Template> t = Compile(op);
    if (!t.ok()) return t.status();
    const int index = static_cast<int>(templates_.size());
    templates_.push_back(std::move(*t));
    template_index_.emplace(op, index);
    return index;
  }

  // Compiles the templates of inlined ops used inside bodies until none is missing, and links
  // body nodes to them.
  absl::Status CompileNested() {
    for (size_t i = 0; i < templates_.size(); ++i) {
      for (size_t k = 0; k < templates_[i].nodes.size(); ++k) {
        const v1::Node& p = *templates_[i].nodes[k].proto;
        const OpDef* inner = ops_->Find(p.domain(), p.op_type());
        if (!Selected(inner)) continue;
        absl::StatusOr<int> t = TemplateFor(inner);  // may grow templates_
        if (!t.ok()) return t.status();
        BodyNode& node = templates_[i].nodes[k];
        node.inner = *t;
        const Template& in = templates_[*t];
        if (static_cast<int>(node.inputs.size()) > in.num_inputs ||
            node.outputs.size() > in.outputs.size()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "op ", templates_[i].label, ": body node ", BodyNodeLabel(p, k), " has ",
              node.inputs.size(), " inputs and ", node.outputs.size(), " outputs; the body of ",
              in.label, " binds ", in.num_inputs, " and ", in.outputs.size()));
        }
      }
    }
    return absl::OkStatus();
  }

  // Depth and expanded size of every template in one iterative depth-first walk over the "body
  // uses op" graph; a template met again while it is on the walk's path uses itself.
  absl::Status Measure() {
    const int64_t cap = options_.max_new_nodes + 1;
    std::vector<char> state(templates_.size(), 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<int, size_t>> path;       // template, next body node to look at
    for (size_t root = 0; root < templates_.size(); ++root) {
      if (state[root] != 0) continue;
      state[root] = 1;
      path.emplace_back(static_cast<int>(root), 0);
      while (!path.empty()) {
        auto& [ti, k] = path.back();
        Template& t = templates_[ti];
        if (k < t.nodes.size()) {
          const int inner = t.nodes[k++].inner;
          if (inner < 0) continue;
          if (state[inner] == 1) {
            std::vector<std::string> cycle;
            for (auto it = path.rbegin(); it != path.rend(); ++it) {
              cycle.push_back(templates_[it->first].label);
              if (it->first == inner) break;
            }
            std::reverse(cycle.begin(), cycle.end());
            cycle.push_back(templates_[inner].label);
            return absl::InvalidArgumentError(absl::StrCat(
                "op ", templates_[inner].label, ": its body uses it again (",
                absl::StrJoin(cycle, " -> "), "); recursive bodies cannot be inlined"));
          }
          if (state[inner] == 0) {
            state[inner] = 1;
            path.emplace_back(inner, 0);
          }
          continue;
        }
        // All nested templates are done: size and depth of this one.
        int64_t size = 0;
        int64_t slots = 0;
        int depth = 1;
        for (const BodyNode& n : t.nodes) {
          if (n.inner < 0) {
            ++size;
            ++slots;
          } else {
            size += templates_[n.inner].expanded_nodes;
            slots += 1 + templates_[n.inner].slots;
            depth = std::max(depth, templates_[n.inner].depth + 1);
          }
          size = std::min(size, cap);
          slots = std::min(slots, cap);
        }
        // Identity nodes for outputs no body node produces itself (an upper bound).
        std::vector<char> bound(t.values.size(), 0);
        for (int lv : t.outputs) {
          if (t.values[lv].producer >= 0 && !bound[lv]) {
            bound[lv] = 1;
          } else {
            ++size;
            ++slots;
          }
        }
        t.expanded_nodes = std::min(size, cap);
        t.slots = std::min(slots, cap);
        t.depth = depth;
        if (depth > kMaxInlineNestingDepth) {
          return absl::InvalidArgumentError(absl::StrCat("op ", t.label, ": bodies nest ", depth,
                                                         " deep (at most ", kMaxInlineNestingDepth,
                                                         ")"));
        }
        state[ti] = 2;
        path.pop_back();
      }
    }
    return absl::OkStatus();
  }

  static std::string BodyNodeLabel(const v1::Node& n, size_t index) {
    const std::string op = OpLabel(n.domain(), n.op_type());
    if (n.name().empty()) return absl::StrCat("#", index, " (", op, ")");
    return absl::StrCat("'", n.name(), "' (", op, ")");
  }

  // Resolves and checks `op`'s body.
  absl::StatusOr<Template> Compile(const OpDef* op) const {
    Template t;
    t.op = op;
    t.label = Label(*op);
    const v1::Graph& body = op->descriptor.body();
    auto error = [&](auto&&... parts) {
      return absl::InvalidArgumentError(absl::StrCat("op ", t.label, ": body: ", parts...));
    };
    absl::flat_hash_map<std::string, int> local;
    t.num_inputs = body.inputs_size();
    for (int i = 0; i < body.inputs_size(); ++i) {
      const std::string& name = body.inputs(i).name();
      if (name.empty()) return error("input ", i, " has an empty name");
      if (!local.try_emplace(name, static_cast<int>(t.values.size())).second) {
        return error("input '", name, "' is listed twice");
      }
      t.values.push_back(LocalValue{name, i, nullptr, -1});
    }
    for (const v1::Tensor& init : body.initializers()) {
      if (init.name().empty()) return error("an initializer has an empty name");
      auto [it, inserted] = local.try_emplace(init.name(), static_cast<int>(t.values.size()));
      if (inserted) {
        t.values.push_back(LocalValue{init.name(), -1, &init, -1});
      } else if (t.values[it->second].initializer == nullptr) {
        t.values[it->second].initializer = &init;  // the default of an optional input
      } else {
        return error("initializer '", init.name(), "' is given twice");
      }
    }
    t.nodes.resize(body.nodes_size());
    // Definitions first, so that nodes may be listed in any order.
    for (int k = 0; k < body.nodes_size(); ++k) {
      const v1::Node& p = body.nodes(k);
      BodyNode& n = t.nodes[k];
      n.proto = &p;
      if (ops_->Find(p.domain(), p.op_type()) == nullptr) {
        return error("node ", BodyNodeLabel(p, k), " uses unknown op '",
                     OpLabel(p.domain(), p.op_type()), "'");
      }
      n.name_suffix =
          p.name().empty() ? absl::StrCat("/", p.op_type(), "_", k) : absl::StrCat("/", p.name());
      for (const std::string& name : p.outputs()) {
        if (name.empty()) {
          n.outputs.push_back(-1);
          continue;
        }
        if (!local.try_emplace(name, static_cast<int>(t.values.size())).second) {
          return error("node ", BodyNodeLabel(p, k), ": value '", name, "' is defined twice");
        }
        n.outputs.push_back(static_cast<int>(t.values.size()));
        t.values.push_back(LocalValue{name, -1, nullptr, k});
      }
      absl::flat_hash_map<std::string, int> seen_attrs;
      for (const v1::Attribute& a : p.attributes()) {
        if (a.name().empty() || !seen_attrs.try_emplace(a.name(), 0).second) {
          return error("node ", BodyNodeLabel(p, k), ": attribute '", a.name(),
                       "' has an empty name or is given twice");
        }
        if (!a.ref_attr_name().empty()) {
          if (op->attribute_spec(a.ref_attr_name()) == nullptr) {
            return error("node ", BodyNodeLabel(p, k), ": attribute '", a.name(), "' refers to '",
                         a.ref_attr_name(), "', which ", t.label, " does not declare");
          }
        } else if (a.value_case() == v1::Attribute::VALUE_NOT_SET) {
          return error("node ", BodyNodeLabel(p, k), ": attribute '", a.name(), "' has no value");
        }
      }
    }
    // Uses, and each node's count of inputs produced inside the body (for the cycle check).
    std::vector<int> pending(t.nodes.size(), 0);
    std::vector<std::vector<int>> consumers(t.values.size());
    for (int k = 0; k < body.nodes_size(); ++k) {
      const v1::Node& p = body.nodes(k);
      for (const std::string& name : p.inputs()) {
        if (name.empty()) {
          t.nodes[k].inputs.push_back(-1);
          continue;
        }
        auto it = local.find(name);
        if (it == local.end()) {
          return error("node ", BodyNodeLabel(p, k), " reads '", name,
                       "', which the body does not define");
        }
        t.nodes[k].inputs.push_back(it->second);
        if (t.values[it->second].producer >= 0) {
          ++pending[k];
          consumers[it->second].push_back(k);
        }
      }
    }
    for (int j = 0; j < body.outputs_size(); ++j) {
      auto it = local.find(body.outputs(j).name());
      if (it == local.end()) {
        return error("output ", j, " '", body.outputs(j).name(), "' is not defined");
      }
      t.outputs.push_back(it->second);
    }
    // Kahn's algorithm: every node must become ready.
    std::vector<int> ready;
    for (int k = 0; k < static_cast<int>(t.nodes.size()); ++k) {
      if (pending[k] == 0) ready.push_back(k);
    }
    size_t done = 0;
    while (!ready.empty()) {
      const int k = ready.back();
      ready.pop_back();
      ++done;
      for (int lv : t.nodes[k].outputs) {
        if (lv < 0) continue;
        for (int c : consumers[lv]) {
          if (--pending[c] == 0) ready.push_back(c);
        }
      }
    }
    if (done != t.nodes.size()) return error("its nodes form a cycle");
    return t;
  }

  // What inlining `id` with `t` needs from the node: no more inputs or outputs than the body
  // binds, and no output bound to an absent input.
  absl::Status CheckBinding(const Graph& graph, NodeId id, const Template& t) const {
    const Node& n = graph.node(id);
    if (static_cast<int>(n.inputs.size()) > t.num_inputs || n.outputs.size() > t.outputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          graph.NodeLabel(id), ": has ", n.inputs.size(), " inputs and ", n.outputs.size(),
          " outputs; the body of ", t.label, " binds ", t.num_inputs, " and ", t.outputs.size()));
    }
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      if (!n.outputs[j].valid()) continue;
      const LocalValue& v = t.values[t.outputs[j]];
      if (v.input < 0 || v.initializer != nullptr) continue;
      if (v.input >= static_cast<int>(n.inputs.size()) || !n.inputs[v.input].valid()) {
        return absl::InvalidArgumentError(absl::StrCat(graph.NodeLabel(id), ": output ", j,
                                                       " is the body's input '", v.name,
                                                       "', which the node does not give"));
      }
    }
    return absl::OkStatus();
  }

  // Replaces the node of `item` by its body; queues the new nodes that are inlined too. Returns
  // the number of nodes added.
  absl::StatusOr<int64_t> Expand(Graph& graph, const Item& item, std::vector<Item>* work) {
    const Template& t = templates_[item.tmpl];
    if (absl::Status s = CheckBinding(graph, item.node, t); !s.ok()) return s;
    // Everything read from the node is read before the first edit (AddNode may move nodes).
    const Node& n = graph.node(item.node);
    const std::string label = graph.NodeLabel(item.node);
    const std::string prefix =
        n.name.empty() ? absl::StrCat(n.op_type.str(), "#", item.node.value()) : n.name.str();
    const std::string device = n.device;
    const ValueIdList inputs = n.inputs;
    const ValueIdList outputs = n.outputs;
    std::vector<AttributeMap> attributes(t.nodes.size());
    for (size_t k = 0; k < t.nodes.size(); ++k) {
      for (const v1::Attribute& a : t.nodes[k].proto->attributes()) {
        if (a.ref_attr_name().empty()) {
          attributes[k].emplace(a.name(), a);
          continue;
        }
        const v1::Attribute* source = nullptr;
        auto it = n.attributes.find(a.ref_attr_name());
        if (it != n.attributes.end()) {
          source = &it->second;
        } else if (const v1::AttributeSpec* spec = t.op->attribute_spec(a.ref_attr_name());
                   spec != nullptr && spec->has_default_value()) {
          source = &spec->default_value();
        }
        if (source == nullptr) continue;  // Neither given nor defaulted: left out.
        v1::Attribute value = *source;
        value.set_name(a.name());
        value.clear_ref_attr_name();
        attributes[k].emplace(a.name(), std::move(value));
      }
    }
    // Bindings: inputs, then outputs produced by a body node; the rest are copied by Identity.
    std::vector<ValueId> local(t.values.size());
    for (size_t v = 0; v < t.values.size(); ++v) {
      const int i = t.values[v].input;
      if (i >= 0 && i < static_cast<int>(inputs.size())) local[v] = inputs[i];
    }
    std::vector<int> copied;  // output indices an Identity node produces
    for (size_t j = 0; j < outputs.size(); ++j) {
      if (!outputs[j].valid()) continue;
      const int lv = t.outputs[j];
      if (t.values[lv].producer >= 0 && !local[lv].valid()) {
        local[lv] = outputs[j];
      } else {
        copied.push_back(static_cast<int>(j));
      }
    }
    if (!copied.empty() && ops_->Find("", "Identity") == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, ": inlining ", t.label, " needs the Identity op, which is not registered"));
    }

    // Edits.
    for (size_t j = 0; j < outputs.size(); ++j) graph.DetachOutput(item.node, static_cast<int>(j));
    graph.RemoveNode(item.node);
    for (size_t v = 0; v < t.values.size(); ++v) {
      const LocalValue& lv = t.values[v];
      if (local[v].valid() || (lv.initializer == nullptr && lv.producer < 0)) continue;
      local[v] = graph.AddUniqueValue(absl::StrCat(prefix, "/", lv.name));
      if (lv.initializer != nullptr) {
        v1::Tensor tensor = *lv.initializer;
        tensor.set_name(graph.value(local[v]).name);
        TensorType type;
        type.dtype = tensor.dtype();
        type.shape.emplace();
        for (int64_t d : tensor.dims()) type.shape->push_back(Dim::Known(d));
        graph.mutable_value(local[v]).type = std::move(type);
        graph.SetInitializer(local[v], std::move(tensor));
      }
    }
    const int first_new = graph.num_node_slots();
    auto map = [&](const std::vector<int>& ids) {
      std::vector<ValueId> out;
      out.reserve(ids.size());
      for (int lv : ids) out.push_back(lv < 0 ? ValueId() : local[lv]);
      return out;
    };
    for (size_t k = 0; k < t.nodes.size(); ++k) {
      const BodyNode& b = t.nodes[k];
      absl::StatusOr<NodeId> id =
          graph.AddNode(absl::StrCat(prefix, b.name_suffix), b.proto->op_type(), b.proto->domain(),
                        map(b.inputs), map(b.outputs), std::move(attributes[k]));
      if (!id.ok()) return absl::InternalError(absl::StrCat(label, ": ", id.status().message()));
      Node& added = graph.mutable_node(*id);
      added.doc_string = b.proto->doc_string();
      added.device = device;
      if (b.inner >= 0) work->push_back(Item{*id, b.inner, item.depth + 1});
    }
    for (int j : copied) {
      absl::StatusOr<NodeId> id = graph.AddNode(absl::StrCat(prefix, "/Identity_", j), "Identity",
                                                "", {local[t.outputs[j]]}, {outputs[j]});
      if (!id.ok()) return absl::InternalError(absl::StrCat(label, ": ", id.status().message()));
      graph.mutable_node(*id).device = device;
    }
    // The body's nodes against their descriptors, with this node's attributes bound.
    for (int i = first_new; i < graph.num_node_slots(); ++i) {
      if (absl::Status s = VerifyNode(graph, NodeId(i), *ops_); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("inlining ", label, ": body of ", t.label, ": ", s.message()));
      }
    }
    return graph.num_node_slots() - first_new;
  }

  Options options_;
  const OpRegistry* ops_ = nullptr;
  std::vector<Template> templates_;
  absl::flat_hash_map<const OpDef*, int> template_index_;
  absl::flat_hash_map<const OpDef*, bool> selected_;
};

absl::StatusOr<std::unique_ptr<Pass>> MakeInlineFunctionsPass(const PassOptions& options) {
  Options o;
  if (auto it = options.find("ops"); it != options.end()) {
    for (absl::string_view part :
         absl::StrSplit(it->second, absl::ByAnyChar(", \t"), absl::SkipWhitespace())) {
      o.ops.insert(std::string(part));
    }
    if (o.ops.empty()) {
      return absl::InvalidArgumentError("option 'ops': no op named (leave it out for all)");
    }
  }
  if (auto it = options.find("max_new_nodes"); it != options.end()) {
    if (!absl::SimpleAtoi(it->second, &o.max_new_nodes) || o.max_new_nodes <= 0 ||
        o.max_new_nodes > (int64_t{1} << 30)) {
      return absl::InvalidArgumentError(
          absl::StrCat("option 'max_new_nodes': '", it->second, "' is not a count from 1 to 2^30"));
    }
  }
  return std::unique_ptr<Pass>(std::make_unique<InlineFunctionsPass>(std::move(o)));
}

}  // namespace

PassInfo InlineFunctionsPassInfo() {
  PassInfo info;
  info.name = "inline_functions";
  info.description =
      "Expands nodes of ops with a decomposition body into the body's nodes (nested bodies "
      "too), so that later passes see primitives; keeps the nodes' output names.";
  info.options = {
      {"ops",
       "ops to inline, as 'domain::Name' or 'Name', separated by commas or spaces (default: "
       "every op with a body and no side effects or mutated inputs)"},
      {"max_new_nodes",
       absl::StrCat("refuse to add more nodes than this (default ", kDefaultMaxInlinedNodes, ")")},
  };
  info.budget_options["max_new_nodes"] = {kDefaultMaxInlinedNodes, nullptr};
  // New values carry no types or shapes until inference runs again.
  info.preserves = {};
  info.min_opt_level = 1;
  info.factory = MakeInlineFunctionsPass;
  return info;
}

}  // namespace graphopt
