#include "server/health_port.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/credentials.h"
#include "client/health_check.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

// What a plaintext client (the kubelet's gRPC probe) is told.
ServingStatus Check(int port) {
  auto connection =
      ServerConnection::Create({.server = absl::StrCat("127.0.0.1:", port)}, 1 << 20).value();
  absl::StatusOr<ServingStatus> status = CheckHealth(*connection, "", absl::Seconds(5));
  EXPECT_TRUE(status.ok()) << status.status();
  return status.value_or(ServingStatus::kUnknown);
}

TEST(HealthPortTest, MirrorsTheStatusInPlaintext) {
  auto port = HealthPort::Start("127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT((*port)->port(), 0);
  // NOT_SERVING until the main server is up.
  EXPECT_EQ(Check((*port)->port()), ServingStatus::kNotServing);
  (*port)->SetServingStatus(true);
  EXPECT_EQ(Check((*port)->port()), ServingStatus::kServing);
  (*port)->SetServingStatus(false);
  EXPECT_EQ(Check((*port)->port()), ServingStatus::kNotServing);
}

TEST(HealthPortTest, ABadAddressIsRefused) {
  auto port = HealthPort::Start("not an address");
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().message().find("--health_listen"), std::string::npos);
}

}  // namespace
}  // namespace graphopt
