#include "server/grpc_status.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

TEST(GrpcStatusTest, OkMapsToOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(GrpcStatusTest, KeepsCodeAndMessage) {
  const grpc::Status status =
      ToGrpcStatus(absl::InvalidArgumentError("node 'n3' (Add): bad input"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "node 'n3' (Add): bad input");
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("x")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcStatus(absl::UnauthenticatedError("x")).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST(GrpcStatusTest, EveryCodeRoundTrips) {
  for (int code = 1; code <= 16; ++code) {
    const absl::Status original(static_cast<absl::StatusCode>(code), "message");
    const grpc::Status converted = ToGrpcStatus(original);
    EXPECT_EQ(static_cast<int>(converted.error_code()), code);
    EXPECT_EQ(FromGrpcStatus(converted), original);
  }
}

TEST(GrpcStatusTest, UnknownCodeBecomesUnknown) {
  const absl::Status odd(static_cast<absl::StatusCode>(42), "strange");
  const grpc::Status converted = ToGrpcStatus(odd);
  EXPECT_EQ(converted.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(converted.error_message(), "strange");
  EXPECT_EQ(FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(99), "m")).code(),
            absl::StatusCode::kUnknown);
}

TEST(GrpcStatusTest, LongMessagesAreCutToFitTheTrailers) {
  const std::string name(70000, 'x');
  grpc::Status s = ToGrpcStatus(absl::InvalidArgumentError("node '" + name + "' is bad"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LE(s.error_message().size(), 2100u);
  EXPECT_NE(s.error_message().find("more bytes)"), std::string::npos);
  EXPECT_EQ(s.error_message().rfind("node 'xxx", 0), 0u);
  // A cut never splits a UTF-8 character.
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += "\xc3\xa9";
  s = ToGrpcStatus(absl::InvalidArgumentError(wide));
  const std::string kept = s.error_message().substr(0, s.error_message().find("..."));
  EXPECT_EQ(kept.size() % 2, 0u);
}

}  // namespace
}  // namespace graphopt
