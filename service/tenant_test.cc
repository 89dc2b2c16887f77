#include "service/tenant.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

TEST(TenantTest, AcceptsWellFormedNames) {
  for (const char* name : {"default", "a", "0", "team-a", "acme.prod_1", "x-"}) {
    EXPECT_TRUE(ValidateTenantName(name).ok()) << name;
  }
  EXPECT_TRUE(ValidateTenantName(std::string(63, 'a')).ok());
}

TEST(TenantTest, RefusesMalformedNames) {
  for (const char* name : {"", "-a", ".a", "_a", "A", "team A", "a/b", "..", "é"}) {
    absl::Status s = ValidateTenantName(name);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << name;
  }
  absl::Status s = ValidateTenantName(std::string(64, 'a'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = ValidateTenantName("Bad/Name");
  EXPECT_THAT(s.message(), HasSubstr("tenant 'Bad/Name' is not a tenant name"));
  EXPECT_THAT(s.message(), HasSubstr("graphopt-tenant"));
}

}  // namespace
}  // namespace graphopt
