#ifndef GRAPHOPT_SERVICE_REQUEST_LOG_H_
#define GRAPHOPT_SERVICE_REQUEST_LOG_H_

// Request-id deduplication for Run: a request sent again with the same id (a client's retry after a
// lost answer) gets the first one's answer instead of executing twice. The log records, per tenant
// and id, who runs it and, once answered, the answer. InMemoryRequestLog serves one server;
// etcd/etcd_request_log.h shares the records between replicas.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "proto/coordinator.pb.h"
#include "util/stop_token.h"

namespace graphopt {

// What the log knows of an id when a request with it arrives.
struct RequestClaim {
  enum class Kind {
    // Nobody had it: the caller runs the request, then calls Complete or Abandon.
    kFirst,
    // Answered already: `answer` is the answer to give (an error when it cannot be replayed).
    kDone,
    // Another request with this id runs now (here or on another replica): Wait for it.
    kRunning,
    // The id was used for a request with another fingerprint.
    kMismatch,
  };
  Kind kind = Kind::kFirst;
  absl::StatusOr<v1::RunResponse> answer = absl::UnknownError("no answer");
  // kRunning: the log's handle on the running request, for Wait.
  std::shared_ptr<void> running;
};

class RequestLog {
 public:
  virtual ~RequestLog() = default;

  // Looks the id up and, when nobody has it, claims it for the caller. `fingerprint` stands for
  // what was asked (graph, inputs, options). An error (UNAVAILABLE: the shared store cannot be
  // reached) means the log cannot tell, and the request must not run.
  virtual absl::StatusOr<RequestClaim> Claim(const std::string& tenant, const std::string& id,
                                             const std::string& fingerprint) = 0;
  // The claimed request succeeded: later requests with the id get `response`.
  virtual void Complete(const std::string& tenant, const std::string& id,
                        const v1::RunResponse& response) = 0;
  // The claimed request failed with `why`: the id may be used again (a retry runs).
  virtual void Abandon(const std::string& tenant, const std::string& id,
                       const absl::Status& why) = 0;
  // After `running` (kRunning): waits until the running request ends. Returns kDone (its answer),
  // or kFirst when the id became free and the caller has claimed it (the first one failed or its
  // replica died), or kMismatch; `stop`'s status when it stops the wait first.
  virtual absl::StatusOr<RequestClaim> Wait(const RequestClaim& running, const std::string& tenant,
                                            const std::string& id, const std::string& fingerprint,
                                            const StopToken& stop) = 0;
};

// One process's log: answers kept by count and bytes (oldest forgotten first), failures forgotten
// at once. A request waiting for one that fails gets that failure (it was the same request).
class InMemoryRequestLog final : public RequestLog {
 public:
  InMemoryRequestLog(int max_entries, int64_t max_bytes);
  ~InMemoryRequestLog() override;

  absl::StatusOr<RequestClaim> Claim(const std::string& tenant, const std::string& id,
                                     const std::string& fingerprint) override;
  void Complete(const std::string& tenant, const std::string& id,
                const v1::RunResponse& response) override;
  void Abandon(const std::string& tenant, const std::string& id, const absl::Status& why) override;
  absl::StatusOr<RequestClaim> Wait(const RequestClaim& running, const std::string& tenant,
                                    const std::string& id, const std::string& fingerprint,
                                    const StopToken& stop) override;

 private:
  struct Entry;
  void Finish(const std::string& tenant, const std::string& id,
              absl::StatusOr<v1::RunResponse> result);

  const int max_entries_;
  const int64_t max_bytes_;
  absl::Mutex mu_;
  // By tenant and id; running and answered.
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  // Keys of answered entries, oldest first, and their answers' bytes.
  std::deque<std::string> completed_ ABSL_GUARDED_BY(mu_);
  int64_t completed_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_REQUEST_LOG_H_
