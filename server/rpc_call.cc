#include "server/rpc_call.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <new>
#include <stdexcept>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/grpc_status.h"
#include "service/tenant.h"

namespace graphopt {
namespace {

std::string AccessName(Access access) {
  switch (access) {
    case Access::kTenant:
      return "a tenant";
    case Access::kAdmin:
      return "an admin";
    case Access::kClusterPeer:
      return "the cluster";
  }
  return "?";
}

// The quota a RESOURCE_EXHAUSTED message names ("... quota max_concurrent=4 reached"): every
// quota refusal says "quota KEY=" (service/quota.h), whichever component refused.
std::string QuotaNamed(absl::string_view message) {
  const size_t at = message.find("quota ");
  if (at == absl::string_view::npos) return "";
  absl::string_view key = message.substr(at + 6);
  const size_t eq = key.find('=');
  if (eq == absl::string_view::npos || eq == 0 || eq > 32) return "";
  key = key.substr(0, eq);
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return "";
  }
  return std::string(key);
}

// The client's trace id when it sent a valid one, else a fresh one.
std::string TraceIdOf(const grpc::CallbackServerContext& context) {
  auto [begin, end] = context.client_metadata().equal_range(kTraceIdMetadataKey);
  if (begin != end) {
    const absl::string_view given(begin->second.data(), begin->second.size());
    if (IsValidTraceId(given)) return std::string(given);
  }
  return NewTraceId();
}

}  // namespace

void RpcEnvironment::EnableMetrics(MetricsRegistry* registry) {
  metrics_.requests = registry->AddCounter(
      {"graphopt_rpc_requests_total", "RPCs answered, by method and gRPC status code.",
       {"method", "code"}});
  metrics_.duration = registry->AddHistogram(
      {"graphopt_rpc_duration_seconds",
       "Time from a call's arrival to its answer (queueing included), by method and gRPC "
       "status code.",
       {"method", "code"}},
      LatencyBuckets());
  metrics_.in_flight = registry->AddGauge(
      {"graphopt_rpc_in_flight", "Calls received and not yet answered, by method.", {"method"}});
  metrics_.quota_rejections = registry->AddCounter(
      {"graphopt_quota_rejections_total",
       "Calls refused for a tenant's quota, by tenant and quota (max_concurrent, "
       "requests_per_s, blob_bytes, op_store_bytes, max_ops).",
       {"tenant", "reason"},
       /*max_series=*/200,
       /*overflow_label=*/"tenant"});
}

absl::StatusOr<Caller> InsecureHeaderAuthenticator(const grpc::CallbackServerContext& context,
                                                   Access /*access*/) {
  Caller caller;
  caller.admin = true;
  caller.credential = "insecure";
  auto [begin, end] = context.client_metadata().equal_range(kTenantMetadataKey);
  if (begin == end) {
    caller.tenant = kDefaultTenant;
    return caller;
  }
  if (std::next(begin) != end) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata \"", kTenantMetadataKey, "\" is given more than once"));
  }
  caller.tenant.assign(begin->second.data(), begin->second.size());
  if (absl::Status s = ValidateTenantName(caller.tenant); !s.ok()) return s;
  return caller;
}

RpcEnvironment::RpcEnvironment(CallAuthenticator authenticate, TenantLimiter* limiter,
                               std::shared_ptr<spdlog::logger> logger,
                               absl::Duration max_call_time)
    : authenticate_(std::move(authenticate)),
      limiter_(limiter),
      logger_(std::move(logger)),
      max_call_time_(max_call_time) {}

void RpcEnvironment::CancelAll(const std::string& reason) { live_->CancelAll(reason); }

void RpcEnvironment::LiveCalls::CancelAll(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (cancel_reason_.empty()) cancel_reason_ = reason;
  for (StopToken* token : live_) token->Cancel(reason);
}

bool RpcEnvironment::LiveCalls::Track(StopToken* token) {
  absl::MutexLock lock(&mu_);
  if (!cancel_reason_.empty()) {
    token->Cancel(cancel_reason_);
    return false;
  }
  live_.insert(token);
  return true;
}

void RpcEnvironment::LiveCalls::Untrack(StopToken* token) {
  absl::MutexLock lock(&mu_);
  live_.erase(token);
}

void CallState::AddTrailer(const std::string& key, const std::string& value) {
  context_->AddTrailingMetadata(key, value);
}

absl::Status UnparsableRequest(absl::string_view type_name) {
  return absl::InvalidArgumentError(absl::StrCat(
      "the request is not a valid ", type_name, ": its protobuf encoding does not parse"));
}

std::string StatusText(const absl::Status& status) {
  if (status.ok()) return "OK";
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

absl::Status RunGuarded(const char* what, const std::function<absl::Status()>& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": out of memory (an allocation failed)"));
  } catch (const std::length_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": a size beyond what can be allocated (", e.what(), ")"));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": unexpected exception: ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(what, ": unexpected exception of unknown type"));
  }
}

void RecordCall(const RpcEnvironment& env, const char* method, const std::string& tenant,
                const absl::Status& status, absl::Duration elapsed) {
  const RpcEnvironment::Metrics& m = env.metrics();
  if (m.requests == nullptr) return;
  const std::string code = absl::StatusCodeToString(status.code());
  m.requests->WithLabels({method, code})->Increment();
  m.duration->WithLabels({method, code})->Observe(absl::ToDoubleSeconds(elapsed));
  if (status.code() == absl::StatusCode::kResourceExhausted && !tenant.empty()) {
    const std::string quota = QuotaNamed(status.message());
    if (!quota.empty()) m.quota_rejections->WithLabels({tenant, quota})->Increment();
  }
}

void AddAnswerTrailers(const RpcEnvironment& env, grpc::CallbackServerContext* context,
                       const absl::Status& status) {
  for (const auto& [key, value] : env.answer_trailers()) context->AddTrailingMetadata(key, value);
  if (absl::optional<absl::Duration> after = RetryAfter(status)) AddRetryHint(context, *after);
}

void AddRetryHint(grpc::CallbackServerContext* context, absl::Duration retry_after) {
  const std::string ms = absl::StrCat(std::max<int64_t>(1, absl::ToInt64Milliseconds(retry_after)));
  context->AddTrailingMetadata(kRetryPushbackKey, ms);
  context->AddTrailingMetadata(kRetryAfterKey, ms);
}

absl::Status AdmitCall(RpcEnvironment& env, grpc::CallbackServerContext* context,
                       const MethodPolicy& policy, CallState& state,
                       TenantLimiter::Admission& admission, absl::Duration* retry_after) {
  state.context_ = context;
  absl::Status authenticated = RunGuarded(policy.name, [&]() -> absl::Status {
    absl::StatusOr<Caller> c = env.authenticator()(*context, policy.access);
    if (!c.ok()) return c.status();
    state.caller_ = *std::move(c);
    return absl::OkStatus();
  });
  if (!authenticated.ok()) return authenticated;
  if (policy.access == Access::kAdmin && !state.caller_.admin) {
    return absl::PermissionDeniedError(
        absl::StrCat(policy.name, " needs ", AccessName(Access::kAdmin), " credential; ",
                     state.caller_.credential, " is for tenant '", state.caller_.tenant, "'"));
  }
  if (env.limiter() != nullptr && policy.access != Access::kClusterPeer) {
    absl::StatusOr<TenantLimiter::Admission> admitted =
        env.limiter()->Admit(state.caller_.tenant, policy.concurrent, retry_after);
    if (!admitted.ok()) return admitted.status();
    admission = *std::move(admitted);
  }
  absl::Time deadline = absl::FromChrono(context->deadline());
  if (env.max_call_time() != absl::InfiniteDuration()) {
    deadline = std::min(deadline, absl::Now() + env.max_call_time());
  }
  state.stop_.TightenDeadline(deadline);
  return absl::OkStatus();
}

// One unary call from admission to Finish; deletes itself when gRPC is done with it.
class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  UnaryCall(RpcEnvironment& env, grpc::CallbackServerContext* context, const MethodPolicy& policy,
            UnaryBody body)
      : env_(env),
        live_calls_(env.live_calls()),
        policy_(policy),
        body_(std::move(body)),
        start_(absl::Now()) {
    state_.context_ = context;
    state_.log_context_.trace_id = TraceIdOf(*context);
    tracked_ = live_calls_->Track(&state_.stop_);
    if (env_.metrics().in_flight != nullptr) {
      in_flight_ = env_.metrics().in_flight->WithLabels({policy_.name});
      in_flight_->Add(1);
    }
  }

  void Start() {
    if (!tracked_) {
      Complete(absl::UnavailableError("the server is shutting down"));
      return;
    }
    absl::Duration retry_after = absl::ZeroDuration();
    absl::Status admitted =
        AdmitCall(env_, state_.context_, policy_, state_, admission_, &retry_after);
    if (!admitted.ok()) {
      if (admitted.code() == absl::StatusCode::kResourceExhausted) {
        AddRetryHint(state_.context_, retry_after);
      }
      Complete(admitted);
      return;
    }
    if (policy_.queue == nullptr) {
      Work();
      return;
    }
    if (!policy_.queue->TrySubmit([this] { Work(); })) {
      const WorkQueue::Stats stats = policy_.queue->stats();
      const absl::Duration retry = policy_.queue->RetryAfter();
      AddRetryHint(state_.context_, retry);
      state_.context_->AddTrailingMetadata(kBusyKey, "1");
      Complete(absl::ResourceExhaustedError(absl::StrCat(
          "server busy: the ", policy_.queue->name(), " queue is full (", stats.running,
          " running, ", stats.queued, " waiting, at most ", stats.capacity,
          "); retry after ", absl::ToInt64Milliseconds(retry), " ms")));
    }
  }

  void OnCancel() override { state_.stop_.Cancel("the client cancelled the call"); }

  // May run after the service and its environment are gone (gRPC's own threads finish calls
  // after the server stopped): touches nothing but the shared registry.
  void OnDone() override {
    live_calls_->Untrack(&state_.stop_);
    delete this;
  }

 private:
  void Work() {
    ScopedLogContext log_context(&state_.log_context_);
    queued_ = absl::Now() - start_;
    absl::Status status = state_.stop_.Check(
        policy_.queue == nullptr ? "admission" : absl::StrCat("the ", policy_.queue->name(), " queue"));
    if (status.ok()) status = RunGuarded(policy_.name, [this] { return body_(state_); });
    body_ = nullptr;  // what the body captured goes now, not when gRPC is done with the call
    Complete(status);
  }

  void Complete(const absl::Status& status) {
    ScopedLogContext log_context(&state_.log_context_);
    admission_.Release();
    const absl::Duration elapsed = absl::Now() - start_;
    const double ms = absl::ToDoubleMilliseconds(elapsed);
    Record(status, elapsed);
    const std::string who =
        state_.caller_.tenant.empty()
            ? std::string("(unauthenticated)")
            : absl::StrCat(state_.caller_.tenant, " credential=", state_.caller_.credential);
    if (status.ok()) {
      env_.logger().log(policy_.quiet ? spdlog::level::debug : spdlog::level::info,
                        "{} peer={} tenant={} queue_ms={:.1f} duration_ms={:.1f} {} status=OK "
                        "trace_id={}",
                        policy_.name, state_.context_->peer(), who,
                        absl::ToDoubleMilliseconds(queued_), ms, state_.log_fields_,
                        state_.log_context_.trace_id);
    } else {
      env_.logger().warn(
          "{} peer={} tenant={} queue_ms={:.1f} duration_ms={:.1f} {} status={} trace_id={}",
          policy_.name, state_.context_->peer(), who, absl::ToDoubleMilliseconds(queued_), ms,
          state_.log_fields_, StatusText(status), state_.log_context_.trace_id);
    }
    AddAnswerTrailers(env_, state_.context_, status);
    Finish(ToGrpcStatus(status));
  }

  // Counts the answer. Runs before Finish: the environment may be gone once gRPC is done.
  void Record(const absl::Status& status, absl::Duration elapsed) {
    RecordCall(env_, policy_.name, state_.caller_.tenant, status, elapsed);
    if (in_flight_ != nullptr) in_flight_->Add(-1);
    in_flight_ = nullptr;
  }

  RpcEnvironment& env_;
  const std::shared_ptr<RpcEnvironment::LiveCalls> live_calls_;
  const MethodPolicy& policy_;
  UnaryBody body_;
  const absl::Time start_;
  absl::Duration queued_ = absl::ZeroDuration();
  CallState state_;
  TenantLimiter::Admission admission_;
  bool tracked_ = false;
  Gauge* in_flight_ = nullptr;
};

grpc::ServerUnaryReactor* ServeUnary(RpcEnvironment& env, grpc::CallbackServerContext* context,
                                     const MethodPolicy& policy, UnaryBody body) {
  auto* call = new UnaryCall(env, context, policy, std::move(body));
  call->Start();
  return call;
}

}  // namespace graphopt
