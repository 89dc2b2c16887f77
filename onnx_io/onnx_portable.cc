#include "onnx_io/onnx_portable.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/proto_util.h"
#include "onnx_io/graphopt_op_bodies.h"

namespace graphopt {
namespace {

using onnx_portable::kGraphoptDomain;
using onnx_portable::ValueFacts;

// Subgraph and fused-group nesting is bounded as on import; recursion is per nesting level.
constexpr int kMaxNesting = 64;
// Inlining stops with an error past this many nodes in one graph.
constexpr int64_t kMaxInlinedNodes = int64_t{1} << 24;

std::string Canonical(const std::string& domain) { return domain == "ai.onnx" ? "" : domain; }

std::string NodeLabel(const onnx::NodeProto& n, int index) {
  const std::string op = absl::StrCat(n.domain(), "::", n.op_type());
  if (n.name().empty()) return absl::StrCat("node #", index, " (", op, ")");
  return absl::StrCat("node '", n.name(), "' (", op, ")");
}

bool HasSubgraph(const onnx::NodeProto& n) {
  for (const onnx::AttributeProto& a : n.attribute()) {
    if (a.has_g() || a.graphs_size() > 0) return true;
  }
  return false;
}

class Exporter {
 public:
  Exporter(onnx::ModelProto* model, int64_t default_opset) : model_(model) {
    for (const onnx::OperatorSetIdProto& o : model->opset_import()) {
      versions_[Canonical(o.domain())] = o.version();
    }
    if (!versions_.contains("")) {
      versions_[""] = default_opset;
      add_default_import_ = true;
    }
  }

  absl::Status Run() {
    if (absl::Status s = Graph(model_->mutable_graph(), nullptr, 0); !s.ok()) return s;
    if (functions_.empty()) return absl::OkStatus();
    for (onnx::FunctionProto& f : functions_) *model_->add_functions() = std::move(f);
    if (model_->ir_version() < 8) model_->set_ir_version(8);
    if (!versions_.contains(kGraphoptDomain)) {
      onnx::OperatorSetIdProto* o = model_->add_opset_import();
      o->set_domain(kGraphoptDomain);
      o->set_version(1);
    }
    if (add_default_import_) model_->add_opset_import()->set_version(versions_[""]);
    return absl::OkStatus();
  }

 private:

  // Rewrites the graphopt nodes of `g` (and of its subgraphs) into function calls.
  absl::Status Graph(onnx::GraphProto* g, const ValueFacts* parent, int depth) {
    if (depth > kMaxNesting) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph '", g->name(), "' is nested more than ", kMaxNesting, " deep"));
    }
    ValueFacts facts(parent);
    facts.AddGraph(*g);
    UniqueNodeNames(g);
    for (int i = 0; i < g->node_size(); ++i) {
      onnx::NodeProto* n = g->mutable_node(i);
      const std::string what = NodeLabel(*n, i);
      if (n->domain() != kGraphoptDomain) {
        for (onnx::AttributeProto& a : *n->mutable_attribute()) {
          if (a.has_g()) {
            if (absl::Status s = Graph(a.mutable_g(), &facts, depth + 1); !s.ok()) return s;
          }
          for (onnx::GraphProto& sub : *a.mutable_graphs()) {
            if (absl::Status s = Graph(&sub, &facts, depth + 1); !s.ok()) return s;
          }
        }
        continue;
      }
      absl::StatusOr<onnx::FunctionProto> f =
          n->op_type() == "FusedGroup" ? FusedGroup(*n, what, depth)
                                       : onnx_portable::GraphoptOpBody(*n, what, facts,
                                                                       versions_[""]);
      if (!f.ok()) return f.status();
      const std::string name = Intern(*std::move(f), n->op_type());
      n->set_op_type(name);
      n->clear_attribute();
      while (n->input_size() > 0 && n->input(n->input_size() - 1).empty()) {
        n->mutable_input()->RemoveLast();
      }
    }
    return absl::OkStatus();
  }

  // ONNX Runtime refuses a graph where two nodes share a name (ONNX itself does not mind):
  // the second and later get "#<k>" appended, to a name no node of the graph has.
  static void UniqueNodeNames(onnx::GraphProto* g) {
    absl::flat_hash_set<std::string> all, seen;
    for (const onnx::NodeProto& n : g->node()) all.insert(n.name());
    for (onnx::NodeProto& n : *g->mutable_node()) {
      if (n.name().empty() || seen.insert(n.name()).second) continue;
      std::string fresh;
      for (int k = 2;; ++k) {
        fresh = absl::StrCat(n.name(), "#", k);
        if (!all.contains(fresh)) break;
      }
      all.insert(fresh);
      seen.insert(fresh);
      n.set_name(std::move(fresh));
    }
  }

  // The fused group's body as a function, values renamed by position so that groups that
  // compute the same thing share one function.
  absl::StatusOr<onnx::FunctionProto> FusedGroup(const onnx::NodeProto& n, const std::string& what,
                                                 int depth) {
    onnx::GraphProto body;
    bool found = false;
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.name() == "body" && a.has_g()) {
        body = a.g();
        found = true;
      }
    }
    if (!found) return absl::InvalidArgumentError(absl::StrCat(what, " has no graph 'body'"));
    if (body.input_size() != n.input_size() || body.output_size() != n.output_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": its body has ", body.input_size(), " inputs and ", body.output_size(),
          " outputs, the node ", n.input_size(), " and ", n.output_size()));
    }
    if (absl::Status s = Graph(&body, nullptr, depth + 1); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("in the body of ", what, ": ", s.message()));
    }
    // Body nodes with subgraphs may name body values from inside them: names are kept.
    bool rename = true;
    for (const onnx::NodeProto& b : body.node()) rename &= !HasSubgraph(b);
    absl::flat_hash_map<std::string, std::string> names;
    auto define = [&](const std::string& name, std::string canonical) {
      names.emplace(name, rename ? std::move(canonical) : name);
    };
    onnx::FunctionProto f;
    f.set_domain(kGraphoptDomain);
    for (int i = 0; i < body.input_size(); ++i) {
      define(body.input(i).name(), absl::StrCat("x", i));
      f.add_input(names[body.input(i).name()]);
    }
    int next = 0;
    for (const onnx::TensorProto& t : body.initializer()) {
      define(t.name(), absl::StrCat("t", next++));
      onnx::NodeProto* c = f.add_node();
      c->set_op_type("Constant");
      c->add_output(names[t.name()]);
      onnx::AttributeProto* value = c->add_attribute();
      value->set_name("value");
      value->set_type(onnx::AttributeProto::TENSOR);
      *value->mutable_t() = t;
      value->mutable_t()->clear_name();
    }
    absl::flat_hash_map<std::string, int> output_index;
    for (int i = 0; i < body.output_size(); ++i) output_index.emplace(body.output(i).name(), i);
    absl::btree_map<std::string, int64_t> domains;
    for (const onnx::NodeProto& b : body.node()) {
      onnx::NodeProto* out = f.add_node();
      out->set_op_type(b.op_type());
      if (!b.domain().empty()) out->set_domain(b.domain());
      domains[Canonical(b.domain())] = 0;
      for (const std::string& in : b.input()) {
        if (in.empty()) {
          out->add_input("");
          continue;
        }
        auto it = names.find(in);
        if (it == names.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, ": its body reads '", in, "', which the body neither takes nor computes"));
        }
        out->add_input(it->second);
      }
      for (const std::string& o : b.output()) {
        if (o.empty()) {
          out->add_output("");
          continue;
        }
        auto oi = output_index.find(o);
        define(o, oi != output_index.end() ? absl::StrCat("y", oi->second)
                                           : absl::StrCat("t", next++));
        out->add_output(names[o]);
      }
      *out->mutable_attribute() = b.attribute();
    }
    for (int i = 0; i < body.output_size(); ++i) {
      auto it = names.find(body.output(i).name());
      if (it == names.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": body output '", body.output(i).name(), "' is computed by no body node"));
      }
      if (rename && it->second != absl::StrCat("y", i)) {
        // An output that is also an input, or listed twice: an Identity gives it its own name.
        onnx::NodeProto* id = f.add_node();
        id->set_op_type("Identity");
        id->add_input(it->second);
        id->add_output(absl::StrCat("y", i));
        domains[""] = 0;
        f.add_output(absl::StrCat("y", i));
      } else {
        f.add_output(it->second);
      }
    }
    domains[""] = 0;
    for (const auto& [domain, unused] : domains) {
      onnx::OperatorSetIdProto* o = f.add_opset_import();
      o->set_domain(domain);
      auto v = versions_.find(domain);
      o->set_version(v != versions_.end() ? v->second : 1);
    }
    return f;
  }

  // The function's name: the one already given to an identical body, or a new "<op>_<k>".
  std::string Intern(onnx::FunctionProto f, const std::string& op) {
    f.clear_name();
    std::string key = SerializeDeterministic(f);
    auto it = by_content_.find(key);
    if (it != by_content_.end()) return it->second;
    std::string name = absl::StrCat(op, "_", ++count_[op]);
    f.set_name(name);
    by_content_.emplace(std::move(key), name);
    functions_.push_back(std::move(f));
    return name;
  }

  onnx::ModelProto* model_;
  absl::flat_hash_map<std::string, int64_t> versions_;
  bool add_default_import_ = false;
  absl::flat_hash_map<std::string, std::string> by_content_;
  absl::flat_hash_map<std::string, int> count_;
  std::vector<onnx::FunctionProto> functions_;
};

// --- Inlining ---------------------------------------------------------------------------------

struct FunctionKey {
  std::string domain, name;
  template <typename H>
  friend H AbslHashValue(H h, const FunctionKey& k) {
    return H::combine(std::move(h), k.domain, k.name);
  }
  bool operator==(const FunctionKey& o) const { return domain == o.domain && name == o.name; }
};

class Inliner {
 public:
  explicit Inliner(onnx::ModelProto* model) : model_(model) {}

  absl::Status Run() {
    for (const onnx::OperatorSetIdProto& o : model_->opset_import()) {
      versions_[Canonical(o.domain())] = o.version();
    }
    for (const onnx::FunctionProto& f : model_->functions()) {
      functions_[FunctionKey{Canonical(f.domain()), f.name()}] = &f;
      for (const onnx::OperatorSetIdProto& o : f.opset_import()) {
        const std::string d = Canonical(o.domain());
        auto it = versions_.find(d);
        if (it == versions_.end()) {
          versions_[d] = o.version();
          added_imports_.push_back(o);
        } else if (d.empty() && it->second != o.version()) {
          return absl::UnimplementedError(absl::StrCat(
              "model-local function '", f.name(), "' imports default-domain opset ", o.version(),
              ", the model ", it->second, "; graphopt reads a model at one opset"));
        }
      }
    }
    CollectNames(model_->graph());
    std::vector<onnx::GraphProto*> pending = {model_->mutable_graph()};
    while (!pending.empty()) {
      onnx::GraphProto* g = pending.back();
      pending.pop_back();
      if (absl::Status s = InlineGraph(g); !s.ok()) return s;
      for (onnx::NodeProto& n : *g->mutable_node()) {
        for (onnx::AttributeProto& a : *n.mutable_attribute()) {
          if (a.has_g()) pending.push_back(a.mutable_g());
          for (onnx::GraphProto& sub : *a.mutable_graphs()) pending.push_back(&sub);
        }
      }
    }
    for (onnx::OperatorSetIdProto& o : added_imports_) *model_->add_opset_import() = std::move(o);
    model_->clear_functions();
    return absl::OkStatus();
  }

 private:
  void CollectNames(const onnx::GraphProto& root) {
    std::vector<const onnx::GraphProto*> pending = {&root};
    while (!pending.empty()) {
      const onnx::GraphProto* g = pending.back();
      pending.pop_back();
      for (const auto& v : g->input()) taken_.insert(v.name());
      for (const auto& t : g->initializer()) taken_.insert(t.name());
      for (const onnx::NodeProto& n : g->node()) {
        for (const std::string& o : n.output()) taken_.insert(o);
        for (const onnx::AttributeProto& a : n.attribute()) {
          if (a.has_g()) pending.push_back(&a.g());
          for (const onnx::GraphProto& sub : a.graphs()) pending.push_back(&sub);
        }
      }
    }
  }

  const onnx::FunctionProto* Find(const onnx::NodeProto& n) const {
    auto it = functions_.find(FunctionKey{Canonical(n.domain()), n.op_type()});
    return it == functions_.end() ? nullptr : it->second;
  }

  // Expands calls in `g` in place, nested calls too, keeping the node order topological.
  absl::Status InlineGraph(onnx::GraphProto* g) {
    bool any = false;
    for (const onnx::NodeProto& n : g->node()) any |= Find(n) != nullptr;
    if (!any) return absl::OkStatus();
    // A stack of (node, nesting depth), the next node to emit on top.
    std::vector<std::pair<onnx::NodeProto, int>> stack;
    stack.reserve(g->node_size());
    for (int i = g->node_size() - 1; i >= 0; --i) stack.emplace_back(std::move(*g->mutable_node(i)), 0);
    g->clear_node();
    int64_t emitted = 0;
    while (!stack.empty()) {
      auto [n, depth] = std::move(stack.back());
      stack.pop_back();
      const onnx::FunctionProto* f = Find(n);
      if (f == nullptr) {
        if (++emitted > kMaxInlinedNodes) {
          return absl::InvalidArgumentError(absl::StrCat(
              "inlining model-local functions makes graph '", g->name(), "' larger than ",
              kMaxInlinedNodes, " nodes"));
        }
        *g->add_node() = std::move(n);
        continue;
      }
      if (depth >= kMaxNesting) {
        return absl::InvalidArgumentError(absl::StrCat(
            "model-local function calls nest more than ", kMaxNesting, " deep (at '", f->name(),
            "')"));
      }
      absl::StatusOr<std::vector<onnx::NodeProto>> body = Instantiate(*f, n);
      if (!body.ok()) return body.status();
      if (static_cast<int64_t>(stack.size() + body->size()) > kMaxInlinedNodes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "inlining model-local functions makes graph '", g->name(), "' larger than ",
            kMaxInlinedNodes, " nodes"));
      }
      for (auto it = body->rbegin(); it != body->rend(); ++it) {
        stack.emplace_back(std::move(*it), depth + 1);
      }
    }
    return absl::OkStatus();
  }

  // The body of `f` for the call `call`: names bound to the call's, the rest made unique.
  absl::StatusOr<std::vector<onnx::NodeProto>> Instantiate(const onnx::FunctionProto& f,
                                                           const onnx::NodeProto& call) {
    const std::string label = absl::StrCat("call of model-local function '", f.name(), "'");
    if (call.input_size() > f.input_size() || call.output_size() > f.output_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, " has ", call.input_size(), " inputs and ", call.output_size(),
          " outputs; the function takes ", f.input_size(), " and gives ", f.output_size()));
    }
    std::string base = call.output_size() > 0 && !call.output(0).empty()
                           ? call.output(0)
                           : (call.name().empty() ? std::string("call") : call.name());
    absl::StrAppend(&base, "/", f.name(), "/");
    absl::flat_hash_map<std::string, std::string> names;
    for (int i = 0; i < f.input_size(); ++i) {
      names[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    }
    for (int i = 0; i < call.output_size(); ++i) {
      if (!call.output(i).empty()) names[f.output(i)] = call.output(i);
    }
    auto local = [&](const std::string& name) -> std::string {
      if (name.empty()) return name;
      auto it = names.find(name);
      if (it != names.end()) return it->second;
      std::string fresh = absl::StrCat(base, name);
      for (int k = 1; taken_.contains(fresh); ++k) fresh = absl::StrCat(base, name, "#", k);
      taken_.insert(fresh);
      names[name] = fresh;
      return fresh;
    };
    absl::flat_hash_map<std::string, const onnx::AttributeProto*> call_attrs;
    for (const onnx::AttributeProto& a : call.attribute()) call_attrs[a.name()] = &a;
    std::vector<onnx::NodeProto> out;
    out.reserve(f.node_size());
    for (const onnx::NodeProto& b : f.node()) {
      if (HasSubgraph(b)) {
        return absl::UnimplementedError(absl::StrCat(
            "model-local function '", f.name(), "': node '", b.name(), "' (", b.op_type(),
            ") has a subgraph; inlining such bodies is not supported"));
      }
      onnx::NodeProto n;
      n.set_op_type(b.op_type());
      if (!b.domain().empty()) n.set_domain(b.domain());
      if (!b.name().empty()) n.set_name(absl::StrCat(base, b.name()));
      for (const std::string& in : b.input()) n.add_input(local(in));
      for (const std::string& o : b.output()) n.add_output(local(o));
      for (const onnx::AttributeProto& a : b.attribute()) {
        if (a.ref_attr_name().empty()) {
          *n.add_attribute() = a;
          continue;
        }
        auto it = call_attrs.find(a.ref_attr_name());
        if (it == call_attrs.end()) continue;  // not given: the body node goes without it
        onnx::AttributeProto* copy = n.add_attribute();
        *copy = *it->second;
        copy->set_name(a.name());
      }
      if (!b.doc_string().empty()) n.set_doc_string(b.doc_string());
      out.push_back(std::move(n));
    }
    return out;
  }

  onnx::ModelProto* model_;
  absl::flat_hash_map<std::string, int64_t> versions_;
  std::vector<onnx::OperatorSetIdProto> added_imports_;
  absl::flat_hash_map<FunctionKey, const onnx::FunctionProto*> functions_;
  absl::flat_hash_set<std::string> taken_;
};

}  // namespace

absl::Status ExportGraphoptOpsAsFunctions(onnx::ModelProto* model, int64_t default_opset) {
  return Exporter(model, default_opset).Run();
}

absl::Status InlineLocalFunctions(onnx::ModelProto* model) {
  if (model->functions_size() == 0) return absl::OkStatus();
  return Inliner(model).Run();
}

}  // namespace graphopt
