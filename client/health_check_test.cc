#include "client/health_check.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "proto/optimizer.grpc.pb.h"

namespace graphopt {
namespace {

TEST(HealthCheckCodecTest, EncodesTheServiceName) {
  EXPECT_EQ(EncodeHealthCheckRequest(""), "");
  EXPECT_EQ(EncodeHealthCheckRequest("graphopt.v1.GraphOptimizer"),
            absl::StrCat("\x0a\x1a", "graphopt.v1.GraphOptimizer"));
  const std::string long_name(300, 'x');
  EXPECT_EQ(EncodeHealthCheckRequest(long_name), absl::StrCat("\x0a\xac\x02", long_name));
}

TEST(HealthCheckCodecTest, DecodesTheStatusAndSkipsUnknownFields) {
  EXPECT_EQ(DecodeHealthCheckResponse("").value(), ServingStatus::kUnknown);
  EXPECT_EQ(DecodeHealthCheckResponse(std::string("\x08\x01", 2)).value(),
            ServingStatus::kServing);
  EXPECT_EQ(DecodeHealthCheckResponse(std::string("\x08\x02", 2)).value(),
            ServingStatus::kNotServing);
  EXPECT_EQ(DecodeHealthCheckResponse(std::string("\x08\x03", 2)).value(),
            ServingStatus::kServiceUnknown);
  EXPECT_EQ(DecodeHealthCheckResponse(std::string("\x08\x09", 2)).value(),
            ServingStatus::kUnknown);
  // Field 2 (bytes "ab"), field 3 (fixed32), then the status.
  EXPECT_EQ(DecodeHealthCheckResponse(std::string("\x12\x02" "ab" "\x1d\x00\x00\x00\x00\x08\x01",
                                                  11))
                .value(),
            ServingStatus::kServing);
  EXPECT_EQ(ServingStatusName(ServingStatus::kServing), "SERVING");
  EXPECT_EQ(ServingStatusName(ServingStatus::kNotServing), "NOT_SERVING");
}

TEST(HealthCheckCodecTest, RejectsBytesThatAreNotAMessage) {
  for (const std::string& bytes :
       {std::string("\x08", 1), std::string("\x08\xff", 2), std::string("\x12\x05" "ab", 4),
        std::string("\x0f", 1), std::string("\x00\x01", 2), std::string("\x1d\x00", 2),
        std::string(11, '\xff')}) {
    EXPECT_EQ(DecodeHealthCheckResponse(bytes).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

class HealthCheckServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    // The health service needs one synchronous service beside it; every RPC of this one is
    // UNIMPLEMENTED.
    builder.RegisterService(&optimizer_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    connection_ = ServerConnection::Create({.server = absl::StrCat("127.0.0.1:", port_)}, 1 << 20)
                      .value();
  }
  void TearDown() override { server_->Shutdown(std::chrono::system_clock::now()); }

  int port_ = 0;
  v1::GraphOptimizer::Service optimizer_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<const ServerConnection> connection_;
};

TEST_F(HealthCheckServerTest, ReportsServingThenNotServing) {
  EXPECT_EQ(CheckHealth(*connection_, "", absl::Seconds(10)).value(), ServingStatus::kServing);
  server_->GetHealthCheckService()->SetServingStatus(false);
  EXPECT_EQ(CheckHealth(*connection_, "", absl::Seconds(10)).value(),
            ServingStatus::kNotServing);
}

TEST_F(HealthCheckServerTest, UnknownServiceIsNotFound) {
  EXPECT_EQ(CheckHealth(*connection_, "no.such.Service", absl::Seconds(10)).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(HealthCheckTest, NoServerIsUnavailableWithinTheTimeout) {
  // Port 1 on loopback: nothing listens there.
  auto connection = ServerConnection::Create({.server = "127.0.0.1:1"}, 1 << 20).value();
  absl::StatusOr<ServingStatus> status = CheckHealth(*connection, "", absl::Seconds(2));
  EXPECT_TRUE(status.status().code() == absl::StatusCode::kUnavailable ||
              status.status().code() == absl::StatusCode::kDeadlineExceeded)
      << status.status();
  EXPECT_NE(status.status().message().find("127.0.0.1:1"), std::string::npos);
}

}  // namespace
}  // namespace graphopt
