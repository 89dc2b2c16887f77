#include "service/op_validation.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/message_differencer.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/proto_convert.h"
#include "graph/verifier.h"

namespace graphopt {
namespace {

constexpr size_t kMaxNameLength = 128;

std::string KeyLabel(const OpKey& key) { return OpLabel(key.first, key.second); }

// The descriptor's "domain::name" for a message: escaped and shortened.
std::string DescriptorLabel(const v1::OpDescriptor& d) {
  auto shown = [](absl::string_view s) {
    return s.size() <= kMaxNameLength
               ? absl::CHexEscape(s)
               : absl::StrCat(absl::CHexEscape(s.substr(0, kMaxNameLength)), "...");
  };
  if (d.name().empty()) return absl::StrCat("<no name> (domain '", shown(d.domain()), "')");
  return OpLabel(shown(d.domain()), shown(d.name()));
}

// "ops[3]: op my.ops::Foo: <detail>".
absl::Status Refusal(int index, const v1::OpDescriptor& d, absl::string_view detail,
                     absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  return absl::Status(code,
                      absl::StrCat("ops[", index, "]: op ", DescriptorLabel(d), ": ", detail));
}

// [A-Za-z_][A-Za-z0-9_.]* for names; domains also allow '-' and a leading digit.
bool IsIdentifier(absl::string_view s, bool domain) {
  if (s.empty() || s.size() > kMaxNameLength) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' ||
                    ((i > 0 || domain) && absl::ascii_isdigit(c)) ||
                    (i > 0 && (c == '.' || (domain && c == '-')));
    if (!ok) return false;
  }
  return true;
}

// The gradient fields on their own: "" or the problem.
std::string GradientDefinitionProblem(const v1::OpDescriptor& d) {
  absl::flat_hash_set<int> nondiff;
  for (int i : d.non_differentiable_inputs()) {
    if (i < 0 || i >= d.inputs_size()) {
      return absl::StrCat("non_differentiable_inputs: ", i, " is not an input index (the op has ",
                          d.inputs_size(), " inputs)");
    }
    if (!nondiff.insert(i).second) {
      return absl::StrCat("non_differentiable_inputs: ", i, " is given twice");
    }
  }
  switch (d.gradient().kind_case()) {
    case v1::GradientDef::KIND_NOT_SET:
      return "";
    case v1::GradientDef::kBuiltin:
      return "gradient.builtin names a gradient written inside the server, for builtin ops only; "
             "a custom op sends a gradient body";
    case v1::GradientDef::kBody:
      break;
  }
  for (const auto* args : {&d.inputs(), &d.outputs()}) {
    for (const v1::ArgSpec& a : *args) {
      if (a.arity() == v1::ARITY_VARIADIC) {
        return absl::StrCat("gradient body: the op has variadic argument '", a.name(),
                            "'; a gradient body binds arguments by position, so it needs a "
                            "fixed number of them");
      }
    }
  }
  const v1::Graph& body = d.gradient().body();
  const int n = d.inputs_size();
  const int m = d.outputs_size();
  if (body.inputs_size() != n + 2 * m) {
    return absl::StrCat("gradient body has ", body.inputs_size(), " inputs; it takes the op's ", n,
                        " inputs, its ", m, " outputs and their ", m, " gradients, ", n + 2 * m,
                        " in all (they bind by position)");
  }
  const int differentiable = n - static_cast<int>(nondiff.size());
  if (body.outputs_size() != differentiable) {
    return absl::StrCat("gradient body has ", body.outputs_size(),
                        " outputs; it must give one gradient per differentiable input, ",
                        differentiable, " (inputs not in non_differentiable_inputs, in order)");
  }
  return "";
}

// The checks that need nothing but the descriptor and the builtins; "" when it passes.
std::string DescriptorProblem(const v1::OpDescriptor& d, const OpCheckContext& context) {
  const int64_t bytes = static_cast<int64_t>(d.ByteSizeLong());
  if (bytes > context.limits.max_descriptor_bytes) {
    return absl::StrCat("descriptor is ", bytes, " bytes serialized; at most ",
                        context.limits.max_descriptor_bytes);
  }
  if (d.name().empty()) return "name is required";
  if (!IsIdentifier(d.name(), false)) {
    return absl::StrCat("name must be 1 to ", kMaxNameLength,
                        " letters, digits, '_' and '.', starting with a letter or '_'");
  }
  if (d.domain().empty() || d.domain() == "ai.onnx") {
    return absl::StrCat(
        "domain '", d.domain(),
        "' is the builtin ONNX ops' domain; a custom op needs a domain of its own, such as "
        "\"com.example\"");
  }
  if (!IsIdentifier(d.domain(), true)) {
    return absl::StrCat("domain must be 1 to ", kMaxNameLength,
                        " letters, digits, '_', '.' and '-', starting with a letter, digit or "
                        "'_'");
  }
  if (context.builtins->Find(d.domain(), d.name()) != nullptr) {
    return "is a builtin op and cannot be overridden";
  }
  if (d.version() < 0) return absl::StrCat("version must not be negative, got ", d.version());
  if (d.shape_rule().kind_case() == v1::Rule::KIND_NOT_SET && !d.has_body()) {
    return "shape_rule is required (or a body the op expands into): every op must state its "
           "output shapes";
  }
  if (std::string problem = GradientDefinitionProblem(d); !problem.empty()) return problem;
  if (d.has_body()) {
    if (d.body().inputs_size() != d.inputs_size()) {
      return absl::StrCat("body has ", d.body().inputs_size(), " inputs; the op declares ",
                          d.inputs_size(), " (they bind by position)");
    }
    if (d.body().outputs_size() != d.outputs_size()) {
      return absl::StrCat("body has ", d.body().outputs_size(), " outputs; the op declares ",
                          d.outputs_size(), " (they bind by position)");
    }
  }
  return "";
}

// A value of the kind `type` declares, standing in for a ref_attr_name attribute.
v1::Attribute Placeholder(v1::AttributeType type) {
  v1::Attribute a;
  switch (type) {
    case v1::ATTR_INT:
      a.set_i(0);
      break;
    case v1::ATTR_FLOAT:
      a.set_f(0);
      break;
    case v1::ATTR_STRING:
      a.set_s("");
      break;
    case v1::ATTR_TENSOR:
      a.mutable_t();
      break;
    case v1::ATTR_GRAPH:
      a.mutable_g();
      break;
    case v1::ATTR_INTS:
      a.mutable_ints();
      break;
    case v1::ATTR_FLOATS:
      a.mutable_floats();
      break;
    case v1::ATTR_STRINGS:
      a.mutable_strings();
      break;
    case v1::ATTR_TENSORS:
      a.mutable_tensors();
      break;
    case v1::ATTR_GRAPHS:
      a.mutable_graphs();
      break;
    case v1::ATTR_DTYPE:
      a.set_dtype(v1::DT_FLOAT32);
      break;
    case v1::ATTR_SHAPE:
      a.mutable_shape();
      break;
    default:
      break;
  }
  return a;
}

const v1::AttributeSpec* FindAttribute(const v1::OpDescriptor& d, absl::string_view name) {
  for (const v1::AttributeSpec& a : d.attributes()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// A body of `d` (its decomposition, or its gradient body) against `ops` (builtins, the tenant's
// and the call's ops): "" or the problem, starting with `prefix` ("body", "gradient body").
std::string GraphBodyProblem(const v1::OpDescriptor& d, v1::Graph body, absl::string_view prefix,
                             const OpRegistry& ops) {
  for (int i = 0; i < body.nodes_size(); ++i) {
    v1::Node& node = *body.mutable_nodes(i);
    const std::string label =
        absl::StrCat(prefix, ": node '", node.name().empty() ? absl::StrCat("#", i) : node.name(),
                     "' (", OpLabel(node.domain(), node.op_type()), ")");
    const OpDef* inner = ops.Find(node.domain(), node.op_type());
    for (v1::Attribute& a : *node.mutable_attributes()) {
      if (a.ref_attr_name().empty()) continue;
      if (a.value_case() != v1::Attribute::VALUE_NOT_SET) {
        return absl::StrCat(label, ": attribute '", a.name(),
                            "' has both a value and ref_attr_name");
      }
      const v1::AttributeSpec* outer = FindAttribute(d, a.ref_attr_name());
      if (outer == nullptr) {
        return absl::StrCat(label, ": attribute '", a.name(), "' refers to attribute '",
                            a.ref_attr_name(), "', which the op does not declare");
      }
      v1::Attribute value = Placeholder(outer->type());
      const v1::AttributeSpec* wanted =
          inner == nullptr ? nullptr : inner->attribute_spec(a.name());
      if (wanted != nullptr && !AttributeValueMatches(value, wanted->type())) {
        return absl::StrCat(label, ": attribute '", a.name(), "' refers to attribute '",
                            a.ref_attr_name(), "' of type ", v1::AttributeType_Name(outer->type()),
                            "; ", OpLabel(node.domain(), node.op_type()), " wants ",
                            v1::AttributeType_Name(wanted->type()));
      }
      value.set_name(a.name());
      a = std::move(value);
    }
  }
  absl::StatusOr<Graph> graph = GraphFromProto(std::move(body));
  if (!graph.ok()) return absl::StrCat(prefix, ": ", graph.status().message());
  if (absl::Status s = VerifyGraph(*graph, ops); !s.ok()) {
    return absl::StrCat(prefix, ": ", s.message());
  }
  return "";
}

std::string BodyProblem(const v1::OpDescriptor& d, const OpRegistry& ops) {
  return GraphBodyProblem(d, d.body(), "body", ops);
}

// Whether `dtype` may bind the type constraint of argument `arg` of `d` (true when the argument
// names no constraint of the descriptor, or the body leaves the type unsaid).
std::string ArgTypeProblem(const v1::OpDescriptor& d, const v1::ArgSpec& arg,
                           const v1::ValueInfo& value, absl::string_view role) {
  if (!value.has_type() || value.type().dtype() == v1::DT_UNDEFINED) return "";
  for (const v1::TypeConstraint& c : d.type_constraints()) {
    if (c.name() != arg.type_constraint()) continue;
    for (int t : c.allowed()) {
      if (t == value.type().dtype()) return "";
    }
    return absl::StrCat("gradient body: ", role, " '", value.name(), "' is ",
                        v1::DataType_Name(value.type().dtype()), ", which type constraint '",
                        c.name(), "' of ", role == "output" ? "input" : "argument", " '",
                        arg.name(), "' does not allow");
  }
  return "";
}

// The gradient body of `d` against `ops`: its types against the op's arguments, then its graph.
std::string GradientBodyProblem(const v1::OpDescriptor& d, const OpRegistry& ops) {
  const v1::Graph& body = d.gradient().body();
  const int n = d.inputs_size();
  const int m = d.outputs_size();
  for (int i = 0; i < body.inputs_size(); ++i) {
    const v1::ArgSpec& arg = i < n ? d.inputs(i) : d.outputs((i - n) % m);
    if (std::string p = ArgTypeProblem(d, arg, body.inputs(i), "input"); !p.empty()) return p;
  }
  absl::flat_hash_set<int> nondiff(d.non_differentiable_inputs().begin(),
                                   d.non_differentiable_inputs().end());
  int k = 0;
  for (int i = 0; i < n && k < body.outputs_size(); ++i) {
    if (nondiff.contains(i)) continue;
    if (std::string p = ArgTypeProblem(d, d.inputs(i), body.outputs(k++), "output"); !p.empty()) {
      return p;
    }
  }
  return GraphBodyProblem(d, body, "gradient body", ops);
}

// Shapes of a body-only op: unknown rank for every output (the body says more once inlined).
absl::Status UnknownOutputShapes(InferenceContext& context) {
  for (int i = 0; i < context.num_outputs(); ++i) context.set_output_shape(i, std::nullopt);
  return absl::OkStatus();
}

}  // namespace

std::string OpVersionLabel(const v1::OpDescriptor& descriptor) {
  return absl::StrCat(OpLabel(descriptor.domain(), descriptor.name()), " v", descriptor.version());
}

absl::Status OpCheckResult::FirstError() const {
  if (!call_error.ok()) return call_error;
  if (errors.empty()) return absl::OkStatus();
  const absl::Status& first = errors.front().second;
  if (errors.size() == 1) return first;
  return absl::Status(first.code(), absl::StrCat(first.message(), " (and ", errors.size() - 1,
                                                 " more descriptors refused)"));
}

OpCheckResult CheckOps(const std::vector<const v1::OpDescriptor*>& call,
                       const OpCheckContext& context) {
  OpCheckResult result;
  result.layer = std::make_unique<OpRegistry>(context.visible);
  const OpStoreLimits& limits = context.limits;
  const int n = static_cast<int>(call.size());
  if (n > limits.max_ops_per_call) {
    result.call_error = absl::InvalidArgumentError(
        absl::StrCat(n, " op descriptors in one call; at most ", limits.max_ops_per_call));
    return result;
  }
  std::vector<absl::Status> error(n);
  std::vector<CheckedOp> checked(n);
  std::vector<std::optional<OpDef>> compiled(n);
  absl::flat_hash_map<OpKey, int> index_of;

  // 1. Each descriptor on its own, then the compiler.
  for (int i = 0; i < n; ++i) {
    const v1::OpDescriptor& d = *call[i];
    if (std::string problem = DescriptorProblem(d, context); !problem.empty()) {
      error[i] = Refusal(i, d, problem);
      continue;
    }
    OpKey key(d.domain(), d.name());
    if (auto [it, inserted] = index_of.try_emplace(key, i); !inserted) {
      error[i] =
          Refusal(i, d, absl::StrCat("is given twice in this call (also ops[", it->second, "])"));
      continue;
    }
    CheckedOp& op = checked[i];
    op.index = i;
    op.key = key;
    if (auto it = context.existing->find(key); it != context.existing->end()) {
      op.previous_version = it->second.version();
      if (google::protobuf::util::MessageDifferencer::Equals(it->second, d)) {
        op.kind = CheckedOp::Kind::kUnchanged;
        continue;
      }
      if (d.version() <= it->second.version()) {
        error[i] =
            Refusal(i, d,
                    absl::StrCat("differs from the registered v", it->second.version(),
                                 "; a redefinition must raise version (got ", d.version(), ")"));
        continue;
      }
      op.kind = CheckedOp::Kind::kChanged;
    }
    absl::StatusOr<OpDef> def = (*context.compiler)(d);
    if (!def.ok()) {
      // The compiler may name the op itself ("op 'a::B' shape_rule: ...", "op a::B: ..."); the
      // refusal already does.
      absl::string_view message = def.status().message();
      const std::string label = OpLabel(d.domain(), d.name());
      for (const std::string& prefix : {absl::StrCat("op '", label, "': "),
                                        absl::StrCat("op '", label, "' "),
                                        absl::StrCat("op ", label, ": ")}) {
        if (absl::ConsumePrefix(&message, prefix)) break;
      }
      error[i] = Refusal(i, d, message,
                         def.status().code() == absl::StatusCode::kUnimplemented
                             ? absl::StatusCode::kUnimplemented
                             : absl::StatusCode::kInvalidArgument);
      continue;
    }
    // The store keeps the descriptor exactly as the client sent it.
    def->descriptor = d;
    if (!def->shape_fn && d.has_body() && d.shape_rule().kind_case() == v1::Rule::KIND_NOT_SET) {
      def->shape_fn = UnknownOutputShapes;
    }
    compiled[i] = std::move(*def);
  }

  // 2. The registry's own checks (arguments, attributes, constraints) while building the layer.
  for (int i = 0; i < n; ++i) {
    if (!compiled[i].has_value()) continue;
    if (absl::Status s = result.layer->Register(std::move(*compiled[i])); !s.ok()) {
      error[i] = absl::InvalidArgumentError(absl::StrCat("ops[", i, "]: ", s.message()));
    }
    compiled[i].reset();
  }
  // Accepted so far and new or changed.
  auto replaces = [&](int i) {
    return error[i].ok() && checked[i].kind != CheckedOp::Kind::kUnchanged;
  };

  // 3. Bodies of the call's ops, and registered bodies that use a redefined op.
  for (int i = 0; i < n; ++i) {
    if (!replaces(i) || !call[i]->has_body()) continue;
    if (std::string problem = BodyProblem(*call[i], *result.layer); !problem.empty()) {
      error[i] = Refusal(i, *call[i], problem);
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!replaces(i) || !call[i]->gradient().has_body()) continue;
    if (std::string problem = GradientBodyProblem(*call[i], *result.layer); !problem.empty()) {
      error[i] = Refusal(i, *call[i], problem);
    }
  }
  absl::flat_hash_map<OpKey, int> changed;
  for (int i = 0; i < n; ++i) {
    if (replaces(i) && checked[i].kind == CheckedOp::Kind::kChanged) changed[checked[i].key] = i;
  }
  if (!changed.empty()) {
    for (const auto& [key, source] : *context.existing) {
      if (!source.has_body() && !source.gradient().has_body()) continue;
      if (auto it = index_of.find(key); it != index_of.end() && replaces(it->second)) continue;
      std::vector<OpKey> used = BodyCustomOps(source, changed);
      if (used.empty()) continue;
      std::string problem = source.has_body() ? BodyProblem(source, *result.layer) : "";
      if (problem.empty() && source.gradient().has_body()) {
        problem = GradientBodyProblem(source, *result.layer);
      }
      if (!problem.empty()) {
        const int i = changed[used.front()];
        if (error[i].ok()) {
          error[i] = Refusal(i, *call[i],
                             absl::StrCat("the new descriptor breaks the body of "
                                          "registered op ",
                                          KeyLabel(key), ": ", problem));
        }
      }
    }
  }

  // 4. Recursion through bodies: iterative depth-first search over op -> ops its body uses.
  absl::btree_map<OpKey, const v1::OpDescriptor*> final_ops;
  for (const auto& [key, source] : *context.existing) final_ops[key] = &source;
  for (int i = 0; i < n; ++i) {
    if (replaces(i)) final_ops[checked[i].key] = call[i];
  }
  enum class Color { kWhite, kGray, kBlack };
  absl::flat_hash_map<OpKey, Color> color;
  struct Frame {
    OpKey key;
    std::vector<OpKey> next;
    size_t pos = 0;
  };
  for (const auto& [root, root_source] : final_ops) {
    if (!root_source->has_body() || color[root] != Color::kWhite) continue;
    std::vector<Frame> stack;
    stack.push_back({root, BodyCustomOps(*root_source, final_ops, false)});
    color[root] = Color::kGray;
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.pos == top.next.size()) {
        color[top.key] = Color::kBlack;
        stack.pop_back();
        continue;
      }
      const OpKey next = top.next[top.pos++];
      Color& c = color[next];
      if (c == Color::kBlack) continue;
      if (c == Color::kGray) {
        // stack[k..] -> next is a cycle; blame the call's op in it that comes first.
        size_t k = 0;
        while (stack[k].key != next) ++k;
        std::vector<std::string> path;
        int blamed = -1;
        for (size_t j = k; j < stack.size(); ++j) {
          path.push_back(KeyLabel(stack[j].key));
          if (auto it = index_of.find(stack[j].key);
              it != index_of.end() && replaces(it->second) && (blamed < 0 || it->second < blamed)) {
            blamed = it->second;
          }
        }
        path.push_back(KeyLabel(next));
        if (blamed >= 0 && error[blamed].ok()) {
          error[blamed] = Refusal(blamed, *call[blamed],
                                  absl::StrCat("body is recursive: ", absl::StrJoin(path, " -> ")));
        }
        continue;
      }
      c = Color::kGray;
      stack.push_back({next, BodyCustomOps(*final_ops[next], final_ops, false)});
    }
  }

  // 4b. A gradient body must not use its own op, directly or through the decomposition bodies
  // of the ops it uses: the gradient would be defined in terms of what it defines. Breadth-first
  // over decomposition edges from the ops the gradient body uses.
  for (int i = 0; i < n; ++i) {
    if (!replaces(i) || !call[i]->gradient().has_body()) continue;
    const OpKey self = checked[i].key;
    absl::flat_hash_map<OpKey, OpKey> parent;  // op -> the op whose body led to it
    std::vector<OpKey> queue;
    for (const v1::Node& node : call[i]->gradient().body().nodes()) {
      OpKey key(node.domain(), node.op_type());
      if (final_ops.contains(key) && parent.try_emplace(key, self).second) queue.push_back(key);
    }
    bool found = false;
    for (size_t q = 0; q < queue.size() && !found; ++q) {
      const OpKey current = queue[q];
      if (current == self) {
        found = true;
        break;
      }
      for (OpKey next : BodyCustomOps(*final_ops[current], final_ops, false)) {
        if (parent.try_emplace(next, current).second) queue.push_back(next);
      }
    }
    if (!found || !error[i].ok()) continue;
    std::vector<std::string> path = {KeyLabel(self)};
    for (OpKey k = parent[self]; k != self; k = parent[k]) path.push_back(KeyLabel(k));
    path.push_back(KeyLabel(self));
    std::reverse(path.begin() + 1, path.end() - 1);
    error[i] = Refusal(i, *call[i],
                       absl::StrCat("gradient body is recursive: ", absl::StrJoin(path, " -> "),
                                    "; write the gradient in other ops"));
  }

  // 5. The tenant's limits.
  int64_t total_bytes = 0;
  for (const auto& [key, source] : final_ops) total_bytes += source->ByteSizeLong();
  if (static_cast<int>(final_ops.size()) > limits.max_ops_per_tenant) {
    result.call_error = absl::ResourceExhaustedError(
        absl::StrCat("the tenant would hold ", final_ops.size(), " ops; at most ",
                     limits.max_ops_per_tenant, " (quota max_ops)"));
  } else if (total_bytes > limits.max_tenant_bytes) {
    result.call_error = absl::ResourceExhaustedError(
        absl::StrCat("the tenant's ops would take ", total_bytes, " bytes serialized; at most ",
                     limits.max_tenant_bytes, " (quota op_store_mb)"));
  }

  for (int i = 0; i < n; ++i) {
    if (!error[i].ok()) {
      result.errors.emplace_back(i, std::move(error[i]));
    } else {
      result.ops.push_back(std::move(checked[i]));
    }
  }
  return result;
}

}  // namespace graphopt
