#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

}  // namespace
}  // namespace graphopt::runtime
