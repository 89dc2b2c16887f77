#ifndef GRAPHOPT_SERVICE_OP_VALIDATION_H_
#define GRAPHOPT_SERVICE_OP_VALIDATION_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "graph/op_registry.h"
#include "proto/op.pb.h"
#include "service/op_compiler.h"

namespace graphopt {

// Bounds on what clients may register.
struct OpStoreLimits {
  // Ops one tenant may hold.
  int max_ops_per_tenant = 10000;
  // Descriptors one RegisterOps call (or one request's ops) may carry.
  int max_ops_per_call = 10000;
  // Serialized size of one descriptor.
  int64_t max_descriptor_bytes = int64_t{1} << 20;
  // Serialized size of all of one tenant's descriptors.
  int64_t max_tenant_bytes = int64_t{256} << 20;
  // Tenants with registered ops.
  int max_tenants = 1000;
  // Serialized size of every tenant's descriptors together.
  int64_t max_total_bytes = int64_t{1} << 30;
};

// (domain, name).
using OpKey = std::pair<std::string, std::string>;
// A tenant's registered ops as the clients sent them.
using OpSources = absl::btree_map<OpKey, v1::OpDescriptor>;

// One descriptor of a call that passed every check.
struct CheckedOp {
  enum class Kind { kNew, kChanged, kUnchanged };
  int index = 0;  // position in the call
  OpKey key;
  Kind kind = Kind::kNew;
  // The registered version this one replaces (kChanged, kUnchanged).
  int64_t previous_version = 0;
};

// What CheckOps needs to know besides the descriptors.
struct OpCheckContext {
  // The builtin ops: never overridden.
  const OpRegistry* builtins = nullptr;
  // The builtins plus `existing`: what bodies may use besides the call's own ops.
  const OpRegistry* visible = nullptr;
  // The tenant's registered ops (their descriptors as registered).
  const OpSources* existing = nullptr;
  const OpCompiler* compiler = nullptr;
  // The limits for this tenant (the store's, tightened by the tenant's quota).
  OpStoreLimits limits;
};

struct OpCheckResult {
  // Accepted descriptors in call order (all of them when `errors` is empty).
  std::vector<CheckedOp> ops;
  // (call index, error) for each refused descriptor, at most one each, by index. Each message
  // starts with "ops[i]: op domain::name: ".
  std::vector<std::pair<int, absl::Status>> errors;
  // An error of the call as a whole (too many descriptors, a tenant limit).
  absl::Status call_error;
  // The compiled new and changed ops over `visible` (complete only when ok()).
  std::unique_ptr<OpRegistry> layer;

  bool ok() const { return errors.empty() && call_error.ok(); }
  // OK, or the call error, or the first refused descriptor's error with "(and N more
  // descriptors refused)" appended.
  absl::Status FirstError() const;
};

// Checks one all-or-nothing batch of descriptors (a RegisterOps call, a request's ops, a
// tenant's stored ops) against the tenant's current ops. Every refusal is INVALID_ARGUMENT
// (UNIMPLEMENTED where the compiler says so), naming the descriptor and the field or rule:
//  - the serialized descriptor is larger than max_descriptor_bytes;
//  - no name, a name or domain with other characters than letters, digits, '_', '.' ('-' in
//    domains) or longer than 128;
//  - the default domain "" or "ai.onnx" (the builtins'), or the name of a builtin op;
//  - the same (domain, name) twice in the call;
//  - a negative version; a descriptor that differs from the registered one without a higher
//    version (an identical one is kUnchanged);
//  - no shape_rule and no body;
//  - the compiler refuses it (its message, with the rule's position, is kept);
//  - OpRegistry::Register refuses it (arguments, attributes, type constraints, ...);
//  - a body whose input/output count differs from the descriptor's, that fails VerifyGraph
//    against builtins + the tenant's ops + the call's ops (unknown op, arity, attributes,
//    undefined values, cycles), or whose ref_attr_name names an attribute the op does not
//    declare or of another type than the body node's op wants;
//  - a redefinition whose new arity or attributes break the body of another registered op;
//  - recursion: an op whose body uses itself, directly or through other ops' bodies (the call's
//    and the tenant's), reported with the cycle ("a -> b -> a").
// Linear in the total size of the descriptors and bodies involved; no recursion.
OpCheckResult CheckOps(const std::vector<const v1::OpDescriptor*>& call,
                       const OpCheckContext& context);

// The keys of the non-builtin ops `descriptor`'s body uses (sorted, unique): those present
// in `custom` (a lookup of the tenant's and the call's op keys). With `with_gradient`, the ops
// its gradient body uses count too (what unregistering and redefining must not break); the
// recursion check follows decomposition bodies alone.
template <typename Map>
std::vector<OpKey> BodyCustomOps(const v1::OpDescriptor& descriptor, const Map& custom,
                                 bool with_gradient = true) {
  std::vector<OpKey> out;
  for (const v1::Node& n : descriptor.body().nodes()) {
    OpKey key(n.domain(), n.op_type());
    if (custom.contains(key)) out.push_back(std::move(key));
  }
  if (with_gradient) {
    for (const v1::Node& n : descriptor.gradient().body().nodes()) {
      OpKey key(n.domain(), n.op_type());
      if (custom.contains(key)) out.push_back(std::move(key));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// "my.ops::Foo v2".
std::string OpVersionLabel(const v1::OpDescriptor& descriptor);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_OP_VALIDATION_H_
