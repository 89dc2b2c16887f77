// Load generator for Coordinator.Run (bench/cluster_bench.sh): runs one corpus model from
// --concurrency client threads for --seconds, either through a graphopt-server's coordinator
// (--server) or on the runtime in this process (the baseline), and prints one JSON line:
//
//   {"mode", "concurrency", "requests", "seconds", "throughput_rps", "p50_ms", "p99_ms",
//    "mean_ms", "worker_p50_ms", "overhead_p50_ms", "request_bytes", "response_bytes"}
//
// worker_* is the execution as the worker timed it; overhead_p50_ms is the median of (round
// trip - worker execution) per request: the remote path's cost (transfers, two gRPC hops, the
// coordinator). Inputs are the model's test_data_set_0. With --server, weights of 64 KiB or more
// go to the server once as blobs (--weights=blobs, the default) or travel inline in every
// request (--weights=inline).
//
//   run_load MODEL_DIR [--server HOST:PORT] [--concurrency N] [--seconds S] [--threads T]

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "bench/corpus_model.h"
#include "client/blob_upload.h"
#include "client/weights.h"
#include "graph/proto_convert.h"
#include "grpcpp/grpcpp.h"
#include "proto/coordinator.grpc.pb.h"
#include "proto/optimizer.grpc.pb.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"
#include "util/mutex_mode.h"

ABSL_FLAG(std::string, server, "", "graphopt-server address; empty: run in this process");
ABSL_FLAG(int, concurrency, 1, "client threads, each with its own channel");
ABSL_FLAG(double, seconds, 5, "how long to send requests (after the warm-up)");
ABSL_FLAG(int, warmup, 3, "requests per thread before timing (plan loads happen here)");
ABSL_FLAG(int, threads, 1, "kernel threads (in-process mode)");
ABSL_FLAG(std::string, weights, "blobs", "with --server: blobs or inline");
ABSL_FLAG(bool, shed_ok, false,
          "with --server: count RESOURCE_EXHAUSTED answers (load shed by the server) as "
          "\"shed\" instead of failing; other errors still fail");

namespace graphopt {
namespace {

using Clock = std::chrono::steady_clock;

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "run_load: %s\n", s.ToString().c_str());
  return 1;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Latencies and worker times of one thread.
struct Samples {
  std::vector<double> round_trip_ms;
  std::vector<double> worker_ms;
};

// What one call came to.
enum class Outcome { kOk, kFailed, kShed };

// Runs `once` from `concurrency` threads: `warmup` untimed calls each, then timed calls until
// `seconds` have passed. `once(thread, &worker_ms)` says how the call ended; shed calls are
// counted in `*shed`, not sampled.
// Sets `*elapsed_s` to the timed phase's wall time (the last calls end after `seconds`).
template <typename Once>
absl::StatusOr<std::vector<Samples>> Drive(int concurrency, int warmup, double seconds,
                                           double* elapsed_s, std::atomic<int64_t>* shed,
                                           Once once) {
  std::vector<Samples> samples(concurrency);
  std::atomic<bool> failed{false};
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < concurrency; ++t) {
      threads.emplace_back([&, t] {
        double worker_ms = 0;
        for (int i = 0; i < warmup; ++i) {
          if (once(t, &worker_ms) == Outcome::kFailed) failed = true;
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  if (failed) return absl::InternalError("a warm-up request failed");
  const Clock::time_point begin = Clock::now();
  const Clock::time_point end =
      begin + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t) {
    threads.emplace_back([&, t] {
      while (Clock::now() < end && !failed) {
        const Clock::time_point start = Clock::now();
        double worker_ms = 0;
        const Outcome outcome = once(t, &worker_ms);
        if (outcome == Outcome::kFailed) {
          failed = true;
          return;
        }
        if (outcome == Outcome::kShed) {
          shed->fetch_add(1);
          continue;
        }
        samples[t].round_trip_ms.push_back(Ms(Clock::now() - start));
        samples[t].worker_ms.push_back(worker_ms);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  *elapsed_s = Ms(Clock::now() - begin) / 1000;
  if (failed) return absl::InternalError("a request failed");
  return samples;
}

int Main(const std::string& dir) {
  absl::StatusOr<CorpusModel> model = LoadCorpusModel(dir);
  if (!model.ok()) return Fail(model.status());
  v1::Graph* graph = &model->graph;
  const std::vector<std::pair<std::string, runtime::Tensor>>& inputs = model->inputs;
  const std::string server = absl::GetFlag(FLAGS_server);
  const int concurrency = absl::GetFlag(FLAGS_concurrency);
  const int warmup = absl::GetFlag(FLAGS_warmup);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  int64_t request_bytes = 0, response_bytes = 0;
  absl::StatusOr<std::vector<Samples>> samples;
  double elapsed_s = 0;
  std::string mode;
  std::atomic<int64_t> shed{0};
  const bool shed_ok = absl::GetFlag(FLAGS_shed_ok);

  if (server.empty()) {
    mode = "in-process";
    absl::StatusOr<Graph> ir = GraphFromProto(std::move(*graph));
    if (!ir.ok()) return Fail(ir.status());
    runtime::KernelRegistry registry;
    if (absl::Status s = runtime::RegisterCpuKernels(registry); !s.ok()) return Fail(s);
    runtime::ExecutorOptions options;
    options.num_threads = absl::GetFlag(FLAGS_threads);
    absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
        runtime::Executor::Create(*std::move(ir), registry, options);
    if (!executor.ok()) return Fail(executor.status());
    samples = Drive(concurrency, warmup, seconds, &elapsed_s, &shed,
                    [&](int, double* worker_ms) {
                      const Clock::time_point start = Clock::now();
                      absl::StatusOr<runtime::RunResult> r = (*executor)->Run(inputs, {});
                      *worker_ms = Ms(Clock::now() - start);
                      if (r.ok()) return Outcome::kOk;
                      std::fprintf(stderr, "run_load: %s\n", r.status().ToString().c_str());
                      return Outcome::kFailed;
                    });
  } else {
    mode = absl::StrCat("remote, weights ", absl::GetFlag(FLAGS_weights));
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(1 << 30);
    args.SetMaxSendMessageSize(1 << 30);
    // One connection per client thread, as separate client processes would have.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    WeightStash stash;
    if (absl::GetFlag(FLAGS_weights) == "blobs") {
      stash.Externalize(graph);
      auto optimizer = v1::GraphOptimizer::NewStub(
          grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
      absl::StatusOr<UploadStats> uploaded = UploadBlobs(*optimizer, stash.Blobs(), {});
      if (!uploaded.ok()) return Fail(uploaded.status());
    }
    v1::RunRequest request;
    *request.mutable_graph() = std::move(*graph);
    for (const auto& [name, tensor] : inputs) {
      v1::NamedTensor* in = request.add_inputs();
      in->set_name(name);
      tensor.ToProto(in->mutable_tensor());
    }
    request_bytes = static_cast<int64_t>(request.ByteSizeLong());
    std::vector<std::unique_ptr<v1::Coordinator::Stub>> stubs;
    for (int t = 0; t < concurrency; ++t) {
      stubs.push_back(v1::Coordinator::NewStub(
          grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args)));
    }
    absl::Mutex mu;
    samples = Drive(concurrency, warmup, seconds, &elapsed_s, &shed, [&](int t, double* worker_ms) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
      v1::RunResponse response;
      grpc::Status s = stubs[t]->Run(&context, request, &response);
      if (!s.ok()) {
        if (shed_ok && s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
          // A well-behaved client waits as long as the server's retry hint says (at most 1 s).
          auto hint = context.GetServerTrailingMetadata().find("grpc-retry-pushback-ms");
          int ms = 0;
          if (hint != context.GetServerTrailingMetadata().end() &&
              absl::SimpleAtoi(absl::string_view(hint->second.data(), hint->second.size()),
                               &ms)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 1000)));
          }
          return Outcome::kShed;
        }
        std::fprintf(stderr, "run_load: Run: %s\n", s.error_message().c_str());
        return Outcome::kFailed;
      }
      *worker_ms = response.worker_run_micros() / 1000;
      absl::MutexLock lock(&mu);
      response_bytes = static_cast<int64_t>(response.ByteSizeLong());
      return Outcome::kOk;
    });
  }
  if (!samples.ok()) return Fail(samples.status());
  std::vector<double> round_trip, worker, overhead;
  for (const Samples& s : *samples) {
    round_trip.insert(round_trip.end(), s.round_trip_ms.begin(), s.round_trip_ms.end());
    worker.insert(worker.end(), s.worker_ms.begin(), s.worker_ms.end());
    for (size_t i = 0; i < s.round_trip_ms.size(); ++i) {
      overhead.push_back(s.round_trip_ms[i] - s.worker_ms[i]);
    }
  }
  double mean = 0;
  for (double v : round_trip) mean += v / static_cast<double>(round_trip.size());
  std::printf(
      "{\"mode\": \"%s\", \"concurrency\": %d, \"requests\": %zu, \"seconds\": %.1f, "
      "\"throughput_rps\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"mean_ms\": %.3f, "
      "\"worker_p50_ms\": %.3f, \"overhead_p50_ms\": %.3f, \"request_bytes\": %lld, "
      "\"response_bytes\": %lld, \"shed\": %lld}\n",
      mode.c_str(), concurrency, round_trip.size(), elapsed_s,
      static_cast<double>(round_trip.size()) / elapsed_s, Percentile(round_trip, 0.5),
      Percentile(round_trip, 0.99), mean, Percentile(worker, 0.5), Percentile(overhead, 0.5),
      static_cast<long long>(request_bytes), static_cast<long long>(response_bytes),
      static_cast<long long>(shed.load()));
  return 0;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) {
  graphopt::DisableMutexDeadlockDetection();  // as the server and workers do
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() != 2) {
    std::fprintf(stderr,
                 "usage: run_load MODEL_DIR [--server HOST:PORT] [--concurrency N] "
                 "[--seconds S] [--warmup W] [--threads T] [--weights blobs|inline]\n");
    return 2;
  }
  return graphopt::Main(rest[1]);
}
