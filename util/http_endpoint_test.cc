#include "util/http_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

// Everything the server sends until it closes (or 10 s pass).
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  const absl::Time end = absl::Now() + absl::Seconds(10);
  while (absl::Now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string answer = ReadAll(fd);
  close(fd);
  return answer;
}

class HttpEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpEndpointOptions options;
    options.listen = "127.0.0.1:0";
    options.max_request_bytes = 1024;
    options.request_timeout = absl::Milliseconds(300);
    options.max_connections = 4;
    options.routes["/metrics"] = [this] {
      ++scrapes_;
      return HttpResponse{200, "text/plain; version=0.0.4", "up 1\n"};
    };
    options.routes["/healthz"] = [] { return HttpResponse{200, "text/plain", "ok\n"}; };
    auto e = HttpEndpoint::Start(std::move(options));
    ASSERT_TRUE(e.ok()) << e.status();
    endpoint_ = *std::move(e);
    ASSERT_GT(endpoint_->port(), 0);
  }
  int port() const { return endpoint_->port(); }

  std::atomic<int> scrapes_{0};
  std::unique_ptr<HttpEndpoint> endpoint_;
};

TEST_F(HttpEndpointTest, ServesGet) {
  const std::string a = Exchange(port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(a, "HTTP/1.1 200 OK\r\n")) << a;
  EXPECT_TRUE(absl::StrContains(a, "Content-Type: text/plain; version=0.0.4\r\n")) << a;
  EXPECT_TRUE(absl::StrContains(a, "Content-Length: 5\r\n")) << a;
  EXPECT_TRUE(absl::StrContains(a, "Connection: close\r\n")) << a;
  EXPECT_TRUE(absl::EndsWith(a, "\r\n\r\nup 1\n")) << a;
  EXPECT_EQ(scrapes_.load(), 1);
}

TEST_F(HttpEndpointTest, QueryIsIgnoredAndBareNewlinesAccepted) {
  const std::string a = Exchange(port(), "GET /healthz?x=1 HTTP/1.0\n\n");
  EXPECT_TRUE(absl::StartsWith(a, "HTTP/1.1 200 OK")) << a;
  EXPECT_TRUE(absl::EndsWith(a, "ok\n")) << a;
}

TEST_F(HttpEndpointTest, HeadHasNoBody) {
  const std::string a = Exchange(port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(a, "HTTP/1.1 200 OK")) << a;
  EXPECT_TRUE(absl::StrContains(a, "Content-Length: 5\r\n")) << a;
  EXPECT_TRUE(absl::EndsWith(a, "\r\n\r\n")) << a;
}

TEST_F(HttpEndpointTest, UnknownPathIs404) {
  EXPECT_TRUE(absl::StartsWith(Exchange(port(), "GET /nope HTTP/1.1\r\n\r\n"),
                               "HTTP/1.1 404 Not Found"));
  EXPECT_TRUE(absl::StartsWith(Exchange(port(), "GET /metrics/x HTTP/1.1\r\n\r\n"),
                               "HTTP/1.1 404 Not Found"));
  EXPECT_EQ(scrapes_.load(), 0);
}

TEST_F(HttpEndpointTest, OtherMethodsAre405) {
  const std::string a =
      Exchange(port(), "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_TRUE(absl::StartsWith(a, "HTTP/1.1 405 Method Not Allowed")) << a;
  EXPECT_TRUE(absl::StrContains(a, "Allow: GET, HEAD\r\n")) << a;
}

TEST_F(HttpEndpointTest, MalformedIs400) {
  for (const std::string& request : std::vector<std::string>{
           "garbage\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n", "GET /metrics SPDY/3\r\n\r\n",
        "get /metrics HTTP/1.1\r\n\r\n", std::string("GET /\0 HTTP/1.1\r\n\r\n", 19)}) {
    const std::string a = Exchange(port(), request);
    EXPECT_TRUE(absl::StartsWith(a, "HTTP/1.1 400 Bad Request")) << request << " -> " << a;
  }
}

TEST_F(HttpEndpointTest, OversizedIs431) {
  const std::string big = "GET /metrics HTTP/1.1\r\nX: " + std::string(5000, 'a') + "\r\n\r\n";
  const std::string a = Exchange(port(), big);
  EXPECT_TRUE(absl::StartsWith(a, "HTTP/1.1 431")) << a.substr(0, 100);
  // A request that never ends its headers is cut at the limit too.
  const std::string endless = "GET /metrics HTTP/1.1\r\n" + std::string(4000, 'b');
  EXPECT_TRUE(absl::StartsWith(Exchange(port(), endless), "HTTP/1.1 431"));
  EXPECT_EQ(scrapes_.load(), 0);
}

TEST_F(HttpEndpointTest, SlowClientTimesOutWithoutBlockingOthers) {
  const int slow = Connect(port());
  ASSERT_GT(send(slow, "GET /met", 8, MSG_NOSIGNAL), 0);
  // Served while the slow one holds its connection.
  EXPECT_TRUE(absl::StartsWith(Exchange(port(), "GET /metrics HTTP/1.1\r\n\r\n"),
                               "HTTP/1.1 200 OK"));
  const absl::Time start = absl::Now();
  const std::string a = ReadAll(slow);
  close(slow);
  EXPECT_TRUE(absl::StartsWith(a, "HTTP/1.1 408")) << a;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

TEST_F(HttpEndpointTest, ConnectionsBeyondTheLimitAreRefused) {
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(Connect(port()));
  absl::SleepFor(absl::Milliseconds(50));  // accepted before the next one
  const std::string a = Exchange(port(), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(a.empty() || absl::StartsWith(a, "HTTP/1.1 503")) << a;
  for (int fd : idle) close(fd);
  // Slots free again once they time out or close.
  absl::SleepFor(absl::Milliseconds(400));
  EXPECT_TRUE(absl::StartsWith(Exchange(port(), "GET /metrics HTTP/1.1\r\n\r\n"),
                               "HTTP/1.1 200 OK"));
}

TEST_F(HttpEndpointTest, ManyClientsAtOnce) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        if (absl::StartsWith(Exchange(port(), "GET /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 200")) {
          ++ok;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Four clients and four slots: each one's previous connection may still be draining, so a
  // few may be refused, never most.
  EXPECT_GE(ok.load(), 90);
}

TEST(HttpEndpointStartTest, BadAddresses) {
  for (const char* listen : {"nohostport", "127.0.0.1:x", "127.0.0.1:70000"}) {
    HttpEndpointOptions options;
    options.listen = listen;
    auto e = HttpEndpoint::Start(std::move(options));
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << listen;
  }
}

TEST(HttpEndpointStartTest, PortInUse) {
  HttpEndpointOptions first;
  first.listen = "127.0.0.1:0";
  auto a = HttpEndpoint::Start(first);
  ASSERT_TRUE(a.ok());
  HttpEndpointOptions second;
  second.listen = "127.0.0.1:" + std::to_string((*a)->port());
  auto b = HttpEndpoint::Start(second);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace graphopt
