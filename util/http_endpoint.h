#ifndef GRAPHOPT_UTIL_HTTP_ENDPOINT_H_
#define GRAPHOPT_UTIL_HTTP_ENDPOINT_H_

// A minimal HTTP/1.1 server for operational endpoints (GET /metrics, GET /healthz) on a port
// of their own. One thread multiplexes every connection with poll(), so a slow or silent client
// holds a connection slot, never the thread: each request has a byte limit and a deadline, at
// most `max_connections` are open at once (more are answered 503 and closed), every answer
// closes its connection. Only GET and HEAD of exact paths are served: anything else is 400
// (malformed), 404 (unknown path), 405 (other methods), 408 (too slow) or 431 (too large).
// Nothing here is meant for the open internet; it serves a scraper on a cluster network.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace graphopt {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Runs on the endpoint's thread, one request at a time; must not block for long.
using HttpHandler = std::function<HttpResponse()>;

struct HttpEndpointOptions {
  // HOST:PORT; "[::1]:PORT" for IPv6; an empty host listens on every interface. Port 0 picks
  // a free port (see HttpEndpoint::port()).
  std::string listen;
  // Exact paths (no query) and their handlers.
  std::map<std::string, HttpHandler> routes;
  int max_connections = 32;
  // The request line and headers together.
  size_t max_request_bytes = 8192;
  // From accept to the end of the headers, and again for sending the answer.
  absl::Duration request_timeout = absl::Seconds(5);
};

class HttpEndpoint {
 public:
  // Binds and starts serving. INVALID_ARGUMENT for a malformed address, UNAVAILABLE when it
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpEndpoint>> Start(HttpEndpointOptions options);
  // Stops and waits for the thread; open connections are closed unanswered.
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  // The port bound (the chosen one for port 0).
  int port() const { return port_; }

 private:
  HttpEndpoint(HttpEndpointOptions options, int listen_fd, int wake_read, int wake_write,
               int port);
  void Loop();

  const HttpEndpointOptions options_;
  const int listen_fd_;
  // A pipe whose write end the destructor closes to wake the poll.
  const int wake_read_;
  int wake_write_;
  const int port_;
  std::thread thread_;
};

// Splits "HOST:PORT" ("[v6]:PORT" too). INVALID_ARGUMENT naming `what` when malformed.
absl::Status SplitHostPort(const std::string& address, const std::string& what, std::string* host,
                           int* port);

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_HTTP_ENDPOINT_H_
