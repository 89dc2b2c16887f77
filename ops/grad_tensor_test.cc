// Builtin gradients of the tensor ops against finite differences (passes/gradient_check.h).

#include <string>

#include "gtest/gtest.h"
#include "passes/gradient_check.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::CheckGradients;
using ::graphopt::testing::InputText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::RandomTensor;

}  // namespace
}  // namespace graphopt
