#ifndef GRAPHOPT_SERVER_RPC_CALL_H_
#define GRAPHOPT_SERVER_RPC_CALL_H_

// What every handler of graphopt's gRPC services does around its own work, in one place:
// authenticate the caller, apply the tenant's quotas, admit the call into its class's bounded
// queue (or refuse it with RESOURCE_EXHAUSTED and a retry hint), give the work a stop token
// that fires when the client cancels or its deadline (capped by the server's) passes or the
// server shuts down, keep exceptions from escaping, convert the status, and log one line.
// Handlers use gRPC's callback API: no gRPC thread waits on a request's work, so health
// checks and cheap calls are answered however busy the server is.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "server/work_queue.h"
#include "service/quota.h"
#include "spdlog/logger.h"
#include "util/log_format.h"
#include "util/metrics.h"
#include "util/retry_hint.h"
#include "util/stop_token.h"

namespace graphopt {

// Who a call is made by, as the authenticator decided.
struct Caller {
  // The tenant whose ops, blobs and quotas the call uses.
  std::string tenant;
  // May act for any tenant and call cluster operations.
  bool admin = false;
  // How the caller was identified, for logs: "token 'ci'", "cert graphopt-worker",
  // "insecure header". Never a secret.
  std::string credential;
};

// What a method requires of its caller.
enum class Access {
  // A tenant credential (or an admin one acting for a tenant).
  kTenant,
  // An admin credential.
  kAdmin,
  // The cluster identity (mTLS certificate of a worker, for RegisterWorker).
  kClusterPeer,
};

// Decides who calls: UNAUTHENTICATED without a valid credential, PERMISSION_DENIED when the
// credential does not allow `access`. Called on gRPC's thread: must not block.
using CallAuthenticator =
    std::function<absl::StatusOr<Caller>(const grpc::CallbackServerContext&, Access)>;

// The header-based authenticator of a server started with --insecure and no tokens: the
// tenant named by the "graphopt-tenant" metadata (default "default"), every caller admin.
absl::StatusOr<Caller> InsecureHeaderAuthenticator(const grpc::CallbackServerContext& context,
                                                   Access access);

// Trailing metadata of a RESOURCE_EXHAUSTED answer that tells when to try again, in
// milliseconds: gRPC's own retry pushback key and graphopt's.
inline constexpr char kRetryPushbackKey[] = "grpc-retry-pushback-ms";
inline constexpr char kRetryAfterKey[] = "graphopt-retry-after-ms";
// Trailing metadata of an answer refused because a queue was full (nothing was done): the
// caller may send the call elsewhere at once.
inline constexpr char kBusyKey[] = "graphopt-busy";


// How one method is served.
struct MethodPolicy {
  // "Optimize": in logs and messages.
  const char* name = "";
  Access access = Access::kTenant;
  // The queue its work runs on; null: inline on gRPC's thread (only for work that never
  // blocks and is cheap: listings, lookups).
  WorkQueue* queue = nullptr;
  // Takes one of the tenant's concurrency slots (heavy calls); every call counts against the
  // tenant's rate.
  bool concurrent = true;
  // Logs successful calls at debug level only: for calls that recur every second or so
  // (probes, heartbeats). Failures are always logged.
  bool quiet = false;
};

// What the handlers of one server share. Thread-safe.
class RpcEnvironment {
 public:
  // `limiter` may be null (no tenant quotas). `max_call_time` caps every call's deadline
  // (InfiniteDuration: the client's deadline only).
  RpcEnvironment(CallAuthenticator authenticate, TenantLimiter* limiter,
                 std::shared_ptr<spdlog::logger> logger, absl::Duration max_call_time);
  RpcEnvironment(const RpcEnvironment&) = delete;
  RpcEnvironment& operator=(const RpcEnvironment&) = delete;

  // Cancels every call in progress (their stop tokens fire with `reason`) and every later one
  // at once: for the end of a shutdown's grace period.
  void CancelAll(const std::string& reason);

  // Trailing metadata sent with every answer (a worker's "graphopt-origin: worker").
  void set_answer_trailers(std::vector<std::pair<std::string, std::string>> trailers) {
    answer_trailers_ = std::move(trailers);
  }
  const std::vector<std::pair<std::string, std::string>>& answer_trailers() const {
    return answer_trailers_;
  }

  // Records every call from then on in `registry` (which must outlive the environment):
  // graphopt_rpc_requests_total, graphopt_rpc_duration_seconds and graphopt_rpc_in_flight by
  // method (and gRPC status code), graphopt_quota_rejections_total by tenant and quota.
  // Call before serving.
  void EnableMetrics(MetricsRegistry* registry);

  // The families EnableMetrics made; all null without metrics.
  struct Metrics {
    CounterFamily* requests = nullptr;
    HistogramFamily* duration = nullptr;
    GaugeFamily* in_flight = nullptr;
    CounterFamily* quota_rejections = nullptr;
  };
  const Metrics& metrics() const { return metrics_; }

  const CallAuthenticator& authenticator() const { return authenticate_; }
  TenantLimiter* limiter() const { return limiter_; }
  spdlog::logger& logger() const { return *logger_; }
  absl::Duration max_call_time() const { return max_call_time_; }

  // The calls in progress, for CancelAll. Shared with the calls themselves: gRPC may finish
  // with a call (its OnDone) after the services and this environment are gone.
  class LiveCalls {
   public:
    // Registers a live call's token so that CancelAll reaches it; false after CancelAll (the
    // token is then cancelled already).
    bool Track(StopToken* token);
    void Untrack(StopToken* token);
    void CancelAll(const std::string& reason);

   private:
    absl::Mutex mu_;
    absl::flat_hash_set<StopToken*> live_ ABSL_GUARDED_BY(mu_);
    std::string cancel_reason_ ABSL_GUARDED_BY(mu_);
  };
  const std::shared_ptr<LiveCalls>& live_calls() const { return live_; }

 private:
  const CallAuthenticator authenticate_;
  TenantLimiter* const limiter_;
  const std::shared_ptr<spdlog::logger> logger_;
  const absl::Duration max_call_time_;
  std::vector<std::pair<std::string, std::string>> answer_trailers_;
  Metrics metrics_;
  const std::shared_ptr<LiveCalls> live_ = std::make_shared<LiveCalls>();
};

// One call's state, as the work sees it.
class CallState {
 public:
  const Caller& caller() const { return caller_; }
  const std::string& tenant() const { return caller_.tenant; }
  // Fires when the client cancels, the deadline passes or the server shuts down.
  StopToken& stop() { return stop_; }
  // The call's deadline: the client's, capped by the server's max_call_time.
  absl::Time deadline() const { return stop_.deadline(); }
  const grpc::CallbackServerContext& context() const { return *context_; }
  // Extra "key=value ..." for the call's log line.
  std::string& log_fields() { return log_fields_; }
  // Trailing metadata to send with the answer.
  void AddTrailer(const std::string& key, const std::string& value);
  // The call's trace id: the client's "graphopt-trace-id" metadata when valid, else a fresh
  // one. Installed (with the request id) as the thread's log context while the call's work
  // runs and while its line is logged (util/log_format.h).
  const std::string& trace_id() const { return log_context_.trace_id; }
  // Names the request in the call's log lines from now on (cut to 128 bytes).
  void set_request_id(absl::string_view id) {
    log_context_.request_id = std::string(id.substr(0, 128));
  }

 private:
  friend class UnaryCall;
  friend absl::Status AdmitCall(RpcEnvironment& env, grpc::CallbackServerContext* context,
                                const MethodPolicy& policy, CallState& state,
                                TenantLimiter::Admission& admission,
                                absl::Duration* retry_after);
  grpc::CallbackServerContext* context_ = nullptr;
  Caller caller_;
  StopToken stop_;
  std::string log_fields_;
  LogContext log_context_;
};

// The work of a unary method: fills the response and returns the status.
using UnaryBody = std::function<absl::Status(CallState&)>;

// Serves one unary call as described at the top of this file; the reactor to return from a
// CallbackService method. `body` runs at most once, on the policy's queue (or inline), and
// owns nothing of the call after it returns.
grpc::ServerUnaryReactor* ServeUnary(RpcEnvironment& env, grpc::CallbackServerContext* context,
                                     const MethodPolicy& policy, UnaryBody body);

// INVALID_ARGUMENT for a request whose bytes do not parse as `type_name`.
absl::Status UnparsableRequest(absl::string_view type_name);

// ServeUnary for a method registered raw (the service's WithRawCallbackMethod_*): the request
// is parsed by the work itself, after admission and on the method's queue, so that a refused
// call costs no parse, a large request does not hold one of gRPC's threads, and bytes that do
// not parse get INVALID_ARGUMENT naming the message type (gRPC 1.51's callback handlers answer
// a failed parse with an empty UNIMPLEMENTED). `body` gets the parsed request, which it may
// move from, and fills the response, serialized into `out` when it returns OK.
template <typename Request, typename Response>
grpc::ServerUnaryReactor* ServeRaw(
    RpcEnvironment& env, grpc::CallbackServerContext* context, const MethodPolicy& policy,
    const grpc::ByteBuffer* in, grpc::ByteBuffer* out,
    std::function<absl::Status(CallState&, Request&, Response&)> body) {
  return ServeUnary(env, context, policy, [in, out, body = std::move(body)](CallState& call) {
    Request request;
    // gRPC owns the buffer until the call is finished and does not read it again; parsing
    // consumes it.
    grpc::Status parsed = grpc::SerializationTraits<Request>::Deserialize(
        const_cast<grpc::ByteBuffer*>(in), &request);
    if (!parsed.ok()) return UnparsableRequest(Request::descriptor()->full_name());
    Response response;
    absl::Status status = body(call, request, response);
    if (!status.ok()) return status;
    bool own_buffer = false;
    grpc::Status serialized =
        grpc::SerializationTraits<Response>::Serialize(response, out, &own_buffer);
    if (!serialized.ok()) {
      return absl::InternalError(
          absl::StrCat("cannot serialize the answer: ", serialized.error_message()));
    }
    return absl::OkStatus();
  });
}

// The steps of ServeUnary before the work is queued, for handlers that are not unary
// (PutBlobs): authentication, the tenant's quotas, the deadline. On success `state` holds the
// caller and the stop token, and `admission` the tenant's slot (release it when the call ends).
absl::Status AdmitCall(RpcEnvironment& env, grpc::CallbackServerContext* context,
                       const MethodPolicy& policy, CallState& state,
                       TenantLimiter::Admission& admission, absl::Duration* retry_after);

// RESOURCE_EXHAUSTED's retry hint as trailing metadata.
void AddRetryHint(grpc::CallbackServerContext* context, absl::Duration retry_after);

// Finishes the answer's trailers: the environment's, and the retry hint of a
// RESOURCE_EXHAUSTED status that carries one (SetRetryAfter). Every handler calls it once,
// just before Finish.
void AddAnswerTrailers(const RpcEnvironment& env, grpc::CallbackServerContext* context,
                       const absl::Status& status);

// Counts one answered call in the environment's metrics (when enabled): requests, duration and,
// for a quota refusal, the tenant's rejection. ServeUnary does it for every unary call; other
// handlers (PutBlobs) call it once, before Finish.
void RecordCall(const RpcEnvironment& env, const char* method, const std::string& tenant,
                const absl::Status& status, absl::Duration elapsed);

// The converted status of a failed call, for logs: "INVALID_ARGUMENT: node 'n3': ...".
std::string StatusText(const absl::Status& status);

// Runs `fn`, turning any C++ exception that escapes it into a status naming `what`:
// RESOURCE_EXHAUSTED for std::bad_alloc and std::length_error, INTERNAL otherwise. The
// libraries are written not to throw; this keeps a bug from taking the process down.
absl::Status RunGuarded(const char* what, const std::function<absl::Status()>& fn);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_RPC_CALL_H_
