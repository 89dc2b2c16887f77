#include "passes/builtin_passes.h"

#include "passes/common_subexpression_elimination_pass.h"
#include "passes/dead_code_elimination_pass.h"
#include "passes/eliminate_identity_pass.h"
#include "passes/infer_shape_pass.h"
#include "passes/infer_type_pass.h"
#include "passes/inline_functions_pass.h"

namespace graphopt {

absl::Status RegisterBuiltinPasses(PassRegistry* registry) {
  for (PassInfo info : {InferTypePassInfo(), InferShapePassInfo(), DeadCodeEliminationPassInfo(),
                        CommonSubexpressionEliminationPassInfo(), EliminateIdentityPassInfo(),
                        InlineFunctionsPassInfo()}) {
    if (absl::Status s = registry->Register(std::move(info)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace graphopt
