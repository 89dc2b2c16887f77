#include "util/http_endpoint.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"

namespace graphopt {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
  }
  return "Unknown";
}

std::string Answer(int status, absl::string_view content_type, const std::string& body,
                   bool head) {
  std::string out = absl::StrCat("HTTP/1.1 ", status, " ", Reason(status),
                                 "\r\nContent-Type: ", content_type,
                                 "\r\nContent-Length: ", body.size(), "\r\n");
  if (status == 405) out += "Allow: GET, HEAD\r\n";
  out += "Connection: close\r\nCache-Control: no-store\r\n\r\n";
  if (!head) out += body;
  return out;
}

std::string PlainAnswer(int status) {
  return Answer(status, "text/plain; charset=utf-8", absl::StrCat(Reason(status), "\n"), false);
}

struct Connection {
  int fd = -1;
  std::string in;
  std::string out;
  size_t sent = 0;
  absl::Time deadline;
  bool answering = false;
  // Answer sent and our side shut: reading what the client still sends until it closes (or
  // briefly), because closing a socket with unread input resets the connection, which can
  // discard the answer before the client reads it.
  bool draining = false;
  // The client shut its side: nothing more to read.
  bool peer_closed = false;
};

// The end of the header block, or npos while incomplete.
size_t HeaderEnd(const std::string& in) {
  const size_t crlf = in.find("\r\n\r\n");
  if (crlf != std::string::npos) return crlf + 4;
  const size_t lf = in.find("\n\n");
  return lf == std::string::npos ? std::string::npos : lf + 2;
}

// An origin-form request target: printable ASCII, no spaces, starting with '/'.
bool IsTarget(absl::string_view s) {
  if (s.empty() || s[0] != '/') return false;
  for (char c : s) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < 'A' || c > 'Z') return false;
  }
  return true;
}

}  // namespace

absl::Status SplitHostPort(const std::string& address, const std::string& what, std::string* host,
                           int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be HOST:PORT, got '", address, "'"));
  }
  std::string h = address.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  int p = -1;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &p) || p < 0 || p > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the port of '", address, "' is not a number in 0..65535"));
  }
  *host = std::move(h);
  *port = p;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(HttpEndpointOptions options) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(options.listen, "the listen address", &host, &port);
      !s.ok()) {
    return s;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve '", options.listen, "': ", gai_strerror(rc)));
  }
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0) break;
    error = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on '", options.listen, "': ", error));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  const int actual = ntohs(bound.ss_family == AF_INET6
                               ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  int wake[2];
  if (pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat("pipe: ", why));
  }
  std::unique_ptr<HttpEndpoint> endpoint(
      new HttpEndpoint(std::move(options), fd, wake[0], wake[1], actual));
  endpoint->thread_ = std::thread([e = endpoint.get()] { e->Loop(); });
  return endpoint;
}

HttpEndpoint::HttpEndpoint(HttpEndpointOptions options, int listen_fd, int wake_read,
                           int wake_write, int port)
    : options_(std::move(options)),
      listen_fd_(listen_fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      port_(port) {}

HttpEndpoint::~HttpEndpoint() {
  close(wake_write_);  // the poll sees the pipe's end
  if (thread_.joinable()) thread_.join();
  close(wake_read_);
  close(listen_fd_);
}

void HttpEndpoint::Loop() {
  std::list<Connection> conns;
  std::vector<pollfd> fds;
  auto respond = [this](Connection& c) {
    const size_t end = HeaderEnd(c.in);
    const absl::string_view head(c.in.data(), end);
    const size_t line_end = head.find('\n');
    absl::string_view line = head.substr(0, line_end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
    if (parts.size() != 3 || !IsToken(parts[0]) || !IsTarget(parts[1]) ||
        !(parts[2] == "HTTP/1.1" || parts[2] == "HTTP/1.0")) {
      c.out = PlainAnswer(400);
      return;
    }
    const bool head_only = parts[0] == "HEAD";
    if (parts[0] != "GET" && !head_only) {
      c.out = PlainAnswer(405);
      return;
    }
    const absl::string_view path = parts[1].substr(0, parts[1].find('?'));
    auto route = options_.routes.find(std::string(path));
    if (route == options_.routes.end()) {
      c.out = PlainAnswer(404);
      return;
    }
    HttpResponse r = route->second();
    c.out = Answer(r.status, r.content_type, r.body, head_only);
  };
  auto start_answer = [&](Connection& c) {
    c.answering = true;
    c.sent = 0;
    c.deadline = absl::Now() + options_.request_timeout;
  };
  while (true) {
    fds.clear();
    fds.push_back({wake_read_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    absl::Time next = absl::InfiniteFuture();
    for (const Connection& c : conns) {
      short events = c.peer_closed ? 0 : POLLIN;
      if (c.answering && !c.draining) events |= POLLOUT;
      fds.push_back({c.fd, events, 0});
      next = std::min(next, c.deadline);
    }
    int timeout_ms = -1;
    if (next != absl::InfiniteFuture()) {
      timeout_ms = static_cast<int>(
          std::clamp<int64_t>(absl::ToInt64Milliseconds(next - absl::Now()) + 1, 0, 60000));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // the destructor closed the pipe
    const absl::Time now = absl::Now();
    size_t i = 2;
    for (auto it = conns.begin(); it != conns.end(); ++i) {
      Connection& c = *it;
      const short ev = fds[i].revents;
      bool done = false;
      if (ev & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
        if (n > 0 && !c.answering) {
          c.in.append(buf, static_cast<size_t>(n));
          const size_t end = HeaderEnd(c.in);
          if (end != std::string::npos && end <= options_.max_request_bytes) {
            respond(c);
            start_answer(c);
          } else if (c.in.size() > options_.max_request_bytes) {
            c.out = PlainAnswer(431);
            start_answer(c);
          }
        } else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
          // The client closed: before a whole request, or after reading what it wanted.
          done = !c.answering || c.draining || n < 0;
          c.peer_closed = true;
        }
      }
      if (!done && c.answering && !c.draining && (ev & (POLLOUT | POLLERR))) {
        const ssize_t n =
            send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) c.sent += static_cast<size_t>(n);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
          done = true;
        } else if (c.sent == c.out.size()) {
          if (c.peer_closed) {
            done = true;
          }
          shutdown(c.fd, SHUT_WR);
          c.draining = true;
          c.deadline = std::min(c.deadline, now + absl::Seconds(1));
        }
      }
      if (!done && now >= c.deadline) {
        if (c.answering) {
          done = true;  // a client not reading its answer
        } else {
          c.out = PlainAnswer(408);
          start_answer(c);
        }
      }
      if (done) {
        close(c.fd);
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
    if (fds[1].revents & POLLIN) {
      while (true) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (static_cast<int>(conns.size()) >= options_.max_connections) {
          const std::string busy = PlainAnswer(503);
          // Best effort: a fresh socket's send buffer takes this at once.
          (void)send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          close(fd);
          continue;
        }
        Connection c;
        c.fd = fd;
        c.deadline = absl::Now() + options_.request_timeout;
        conns.push_back(std::move(c));
      }
    }
  }
  for (Connection& c : conns) close(c.fd);
}

}  // namespace graphopt
