// Runs the ONNX backend test cases of libonnx-testdata (or any folder in that layout, such as
// the real-model corpus of models/) through graphopt's runtime and compares
// every output with the reference (rtol 1e-3, atol 1e-5, NaN equal to NaN, as ONNX Runtime's
// backend tests do). Each case runs in a child process, so a crash or a hang is reported for that
// case and the run goes on. Models holding ONNX training Gradient nodes run as the gradient pass
// expands them.
//
// Prints one line per case that does not pass, then the counts per suite and in all. With
// --known_failures FILE, exits non-zero when the set of cases that do not pass differs from the
// file's (a regression, or a newly passing case left on the list), naming each difference.
// --write_known_failures FILE writes the current set in that format.

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/op_registry.h"
#include "graph/proto_convert.h"
#include "onnx/onnx_pb.h"
#include "onnx_io/onnx_import.h"
#include "onnx_io/onnx_values.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/gradient_pass.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

ABSL_FLAG(std::string, data_dir, "/usr/share/libonnx-testdata/data",
          "libonnx-testdata's data folder");
ABSL_FLAG(std::string, suites, "node,pytorch-converted,pytorch-operator,simple",
          "comma-separated suites (sub-folders of --data_dir)");
ABSL_FLAG(std::string, filter, "", "run only cases whose name contains this");
ABSL_FLAG(int, jobs, 2, "cases run at once (one child process each)");
ABSL_FLAG(int, threads, 1, "kernel threads per case");
ABSL_FLAG(double, timeout_s, 60, "a case still running after this long fails as a timeout");
ABSL_FLAG(std::string, known_failures, "",
          "file listing the cases expected not to pass; differences fail the run");
ABSL_FLAG(std::string, write_known_failures, "", "write the cases that did not pass here");
ABSL_FLAG(bool, verbose, false, "also print passing cases");
ABSL_FLAG(double, rtol, 1e-3, "relative tolerance of float comparisons");
ABSL_FLAG(double, atol, 1e-5, "absolute tolerance of float comparisons");

namespace graphopt {
namespace {

namespace fs = std::filesystem;
using runtime::Tensor;

enum class Outcome { kPass, kFail, kUnsupported, kCrash, kTimeout };

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "fail";
    case Outcome::kUnsupported: return "unsupported";
    case Outcome::kCrash: return "crash";
    case Outcome::kTimeout: return "timeout";
  }
  return "?";
}

struct CaseResult {
  Outcome outcome = Outcome::kFail;
  std::string detail;
};

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A test data file: a TensorProto, or for a sequence or optional value (`kind`, the model's
// declared kind) a SequenceProto or OptionalProto.
absl::StatusOr<std::pair<std::string, Tensor>> ReadValue(const fs::path& path, v1::ValueKind kind) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  std::string name;
  absl::StatusOr<Tensor> t = ValueFromOnnxBytes(*bytes, kind, path.filename().string(), &name);
  if (!t.ok()) return t.status();
  return std::make_pair(std::move(name), *std::move(t));
}

std::vector<fs::path> Sorted(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (absl::StartsWith(e.path().filename().string(), prefix)) out.push_back(e.path());
  }
  // input_0.pb, input_1.pb, ..., input_10.pb: by number.
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    auto num = [&](const fs::path& p) {
      std::string s = p.stem().string().substr(prefix.size());
      return s.empty() ? 0 : std::atoi(s.c_str());
    };
    return num(a) < num(b);
  });
  return out;
}

std::string CompareTensors(const Tensor& got, const Tensor& want, double rtol, double atol);

// Compares one output; returns an empty string when equal within tolerance. Sequences and
// optionals compare item by item.
std::string Compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.kind() != want.kind()) {
    return absl::StrCat(got.DebugString(), " != expected ", want.DebugString());
  }
  if (got.is_tensor()) return CompareTensors(got, want, rtol, atol);
  if (got.items().size() != want.items().size()) {
    return absl::StrCat(got.DebugString(), " != expected ", want.DebugString());
  }
  for (size_t i = 0; i < got.items().size(); ++i) {
    std::string diff = Compare(got.items()[i], want.items()[i], rtol, atol);
    if (!diff.empty()) return absl::StrCat("item ", i, ": ", diff);
  }
  return "";
}

std::string CompareTensors(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype()) {
    return absl::StrCat("dtype ", got.DebugString(), " != expected ", want.DebugString());
  }
  if (got.shape() != want.shape()) {
    return absl::StrCat("shape ", got.DebugString(), " != expected ", want.DebugString());
  }
  const int64_t n = want.num_elements();
  if (want.dtype() == v1::DT_STRING) {
    for (int64_t i = 0; i < n; ++i) {
      if (got.strings()[i] != want.strings()[i]) {
        return absl::StrCat("element ", i, ": '", got.strings()[i], "' != '", want.strings()[i], "'");
      }
    }
    return "";
  }
  const bool floating = IsFloatingPoint(want.dtype());
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < n; ++i) {
    if (floating) {
      const double g = got.ElementAsDouble(i), w = want.ElementAsDouble(i);
      if (std::isnan(w) && std::isnan(g)) continue;
      if (std::isinf(w) || std::isinf(g)) {
        if (g == w) continue;
      } else if (std::fabs(g - w) <= atol + rtol * std::fabs(w)) {
        continue;
      }
      if (bad++ == 0) first = absl::StrCat("element ", i, ": ", g, " != expected ", w);
    } else if (got.ElementAsInt64(i) != want.ElementAsInt64(i)) {
      if (bad++ == 0) {
        first = absl::StrCat("element ", i, ": ", got.ElementAsInt64(i), " != expected ",
                             want.ElementAsInt64(i));
      }
    }
  }
  if (bad == 0) return "";
  return absl::StrCat(bad, " of ", n, " elements differ; first ", first);
}

CaseResult FromStatus(const absl::Status& s, absl::string_view stage) {
  CaseResult r;
  r.outcome = s.code() == absl::StatusCode::kUnimplemented ? Outcome::kUnsupported : Outcome::kFail;
  r.detail = absl::StrCat(stage, ": ", s.ToString());
  return r;
}

// ONNX's backend test data (1.12) stores bfloat16 tensors as uint16 (numpy has no bfloat16): the
// same 16 bits. A uint16 tensor standing for a bfloat16 value is read back as bfloat16.
Tensor AsBFloat16IfStoredAsUint16(Tensor t, v1::DataType want) {
  if (want != v1::DT_BFLOAT16 || t.dtype() != v1::DT_UINT16) return t;
  absl::StatusOr<Tensor> b = Tensor::Allocate(v1::DT_BFLOAT16, t.shape());
  if (!b.ok()) return t;
  std::memcpy(b->raw_data(), t.raw_data(), t.byte_size());
  return *std::move(b);
}

// What the cases need besides kernels: a model holding ONNX training Gradient nodes is run as
// the gradient pass expands it (the runtime has no kernel for an unexpanded Gradient).
struct Registries {
  runtime::KernelRegistry kernels;
  OpRegistry ops;
  PassRegistry passes;
};

// Runs one case in this process.
CaseResult RunCase(const fs::path& dir, const Registries& registries) {
  const runtime::KernelRegistry& registry = registries.kernels;
  absl::StatusOr<std::string> bytes = ReadFile(dir / "model.onnx");
  if (!bytes.ok()) return FromStatus(bytes.status(), "read");
  absl::StatusOr<v1::Graph> proto = GraphFromOnnxBytes(*std::move(bytes));
  if (!proto.ok()) return FromStatus(proto.status(), "import");
  absl::StatusOr<Graph> graph = GraphFromProto(*std::move(proto));
  if (!graph.ok()) return FromStatus(graph.status(), "import");
  if (graph->num_live_nodes_of_op(kOnnxTrainingDomain, "Gradient") > 0) {
    absl::StatusOr<PipelineResult> expanded =
        RunPipeline(*graph, {{"gradient", {}}}, registries.passes, registries.ops);
    if (!expanded.ok()) return FromStatus(expanded.status(), "gradient");
  }
  std::vector<std::string> input_names;
  std::vector<v1::DataType> input_dtypes;
  std::vector<v1::ValueKind> input_kinds, output_kinds;
  for (ValueId v : graph->inputs()) {
    input_names.push_back(graph->value(v).name);
    input_dtypes.push_back(graph->value(v).type.dtype);
    input_kinds.push_back(graph->value(v).type.kind);
  }
  for (ValueId v : graph->outputs()) output_kinds.push_back(graph->value(v).type.kind);
  runtime::ExecutorOptions options;
  options.num_threads = absl::GetFlag(FLAGS_threads);
  absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::Create(*std::move(graph), registry, options);
  if (!executor.ok()) return FromStatus(executor.status(), "plan");
  int sets = 0;
  for (const fs::path& set : Sorted(dir, "test_data_set_")) {
    std::vector<std::pair<std::string, Tensor>> inputs;
    for (const fs::path& p : Sorted(set, "input_")) {
      const size_t i = inputs.size();
      absl::StatusOr<std::pair<std::string, Tensor>> t =
          ReadValue(p, i < input_kinds.size() ? input_kinds[i] : v1::VALUE_TENSOR);
      if (!t.ok()) return FromStatus(t.status(), "inputs");
      if (t->first.empty() && i < input_names.size()) t->first = input_names[i];
      for (size_t k = 0; k < input_names.size(); ++k) {
        if (input_names[k] == t->first) {
          t->second = AsBFloat16IfStoredAsUint16(std::move(t->second), input_dtypes[k]);
        }
      }
      inputs.push_back(*std::move(t));
    }
    absl::StatusOr<runtime::RunResult> result = (*executor)->Run(inputs);
    if (!result.ok()) return FromStatus(result.status(), set.filename().string());
    std::vector<fs::path> outputs = Sorted(set, "output_");
    if (outputs.size() != result->outputs.size()) {
      return {Outcome::kFail, absl::StrCat(result->outputs.size(), " outputs, ", outputs.size(),
                                           " expected")};
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      absl::StatusOr<std::pair<std::string, Tensor>> want =
          ReadValue(outputs[i], i < output_kinds.size() ? output_kinds[i] : v1::VALUE_TENSOR);
      if (!want.ok()) return FromStatus(want.status(), "outputs");
      want->second =
          AsBFloat16IfStoredAsUint16(std::move(want->second), result->outputs[i].dtype());
      std::string diff = Compare(result->outputs[i], want->second,
                                 absl::GetFlag(FLAGS_rtol), absl::GetFlag(FLAGS_atol));
      if (!diff.empty()) {
        return {Outcome::kFail, absl::StrCat(set.filename().string(), " output ", i, ": ", diff)};
      }
    }
    ++sets;
  }
  if (sets == 0) return {Outcome::kFail, "no test_data_set_*"};
  return {Outcome::kPass, ""};
}

struct Child {
  pid_t pid;
  int fd;
  size_t index;
  std::string buffer;
  std::chrono::steady_clock::time_point start;
};

int Main() {
  const fs::path data_dir = absl::GetFlag(FLAGS_data_dir);
  std::vector<std::pair<std::string, fs::path>> cases;  // (suite/name, dir)
  for (absl::string_view suite : absl::StrSplit(absl::GetFlag(FLAGS_suites), ',', absl::SkipEmpty())) {
    const fs::path dir = data_dir / std::string(suite);
    if (!fs::is_directory(dir)) {
      std::fprintf(stderr, "no suite folder %s\n", dir.c_str());
      return 2;
    }
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) {
      std::string name = absl::StrCat(suite, "/", d.filename().string());
      if (name.find(absl::GetFlag(FLAGS_filter)) == std::string::npos) continue;
      cases.emplace_back(name, d);
    }
  }

  // The registry is built before forking; children only read it. Kernels never ran here, so no
  // OpenMP thread pool exists at fork time.
  Registries registry;
  absl::Status reg = runtime::RegisterCpuKernels(registry.kernels);
  if (reg.ok()) reg = RegisterBuiltinOps(&registry.ops);
  if (reg.ok()) reg = RegisterBuiltinPasses(&registry.passes);
  if (!reg.ok()) {
    std::fprintf(stderr, "kernel registration failed: %s\n", reg.ToString().c_str());
    return 2;
  }

  std::vector<CaseResult> results(cases.size());
  std::vector<Child> running;
  size_t next = 0;
  const int jobs = std::max(1, absl::GetFlag(FLAGS_jobs));
  const auto timeout = std::chrono::duration<double>(absl::GetFlag(FLAGS_timeout_s));
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && static_cast<int>(running.size()) < jobs) {
      int fds[2];
      if (pipe(fds) != 0) {
        std::perror("pipe");
        return 2;
      }
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        CaseResult r = RunCase(cases[next].second, registry);
        std::string msg = absl::StrCat(static_cast<int>(r.outcome), " ", r.detail);
        size_t off = 0;
        while (off < msg.size()) {
          ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
          if (w <= 0) break;
          off += static_cast<size_t>(w);
        }
        _exit(0);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], next, "", std::chrono::steady_clock::now()});
      ++next;
    }
    std::vector<pollfd> pfds;
    for (const Child& c : running) pfds.push_back({c.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 100);
    for (size_t i = 0; i < running.size();) {
      Child& c = running[i];
      bool done = false;
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        ssize_t n = read(c.fd, buf, sizeof(buf));
        if (n > 0) {
          c.buffer.append(buf, static_cast<size_t>(n));
        } else {
          done = true;
        }
      }
      const bool timed_out = !done && std::chrono::steady_clock::now() - c.start > timeout;
      if (timed_out) kill(c.pid, SIGKILL);
      if (done || timed_out) {
        int status = 0;
        waitpid(c.pid, &status, 0);
        close(c.fd);
        CaseResult& r = results[c.index];
        if (timed_out) {
          r = {Outcome::kTimeout, absl::StrCat("still running after ", absl::GetFlag(FLAGS_timeout_s), " s")};
        } else if (WIFSIGNALED(status)) {
          r = {Outcome::kCrash, absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                                             strsignal(WTERMSIG(status)), ")")};
        } else if (c.buffer.empty()) {
          r = {Outcome::kCrash, absl::StrCat("exited with ", WEXITSTATUS(status), " and no result")};
        } else {
          r.outcome = static_cast<Outcome>(c.buffer[0] - '0');
          r.detail = c.buffer.size() > 2 ? c.buffer.substr(2) : "";
        }
        pfds.erase(pfds.begin() + i);
        running.erase(running.begin() + i);
        continue;
      }
      ++i;
    }
  }

  // Report.
  std::map<std::string, std::map<Outcome, int>> counts;
  std::map<Outcome, int> total;
  std::set<std::string> not_passing;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string& name = cases[i].first;
    const CaseResult& r = results[i];
    const std::string suite = name.substr(0, name.find('/'));
    counts[suite][r.outcome]++;
    total[r.outcome]++;
    if (r.outcome != Outcome::kPass) {
      not_passing.insert(name);
      std::string detail = r.detail.substr(0, 300);
      std::replace(detail.begin(), detail.end(), '\n', ' ');
      std::printf("%-11s %s: %s\n", OutcomeName(r.outcome), name.c_str(), detail.c_str());
    } else if (absl::GetFlag(FLAGS_verbose)) {
      std::printf("pass        %s\n", name.c_str());
    }
  }
  std::printf("\n");
  auto line = [](const std::string& what, std::map<Outcome, int>& c) {
    int n = 0;
    for (auto& [o, k] : c) n += k;
    std::printf("conformance %-18s %4d/%4d passed, %d failed, %d unsupported, %d crashed, %d timed out\n",
                what.c_str(), c[Outcome::kPass], n, c[Outcome::kFail], c[Outcome::kUnsupported],
                c[Outcome::kCrash], c[Outcome::kTimeout]);
  };
  for (auto& [suite, c] : counts) line(suite, c);
  line("all", total);

  if (!absl::GetFlag(FLAGS_write_known_failures).empty()) {
    std::ofstream out(absl::GetFlag(FLAGS_write_known_failures));
    out << "# Cases of libonnx-testdata that graphopt's runtime does not pass, with why.\n"
           "# tests/conformance/conformance_test.sh fails when this list and a run differ.\n"
           "# Regenerate: onnx_conformance --write_known_failures=FILE\n";
    for (size_t i = 0; i < cases.size(); ++i) {
      if (results[i].outcome == Outcome::kPass) continue;
      std::string detail = results[i].detail.substr(0, 160);
      std::replace(detail.begin(), detail.end(), '\n', ' ');
      out << cases[i].first << "  # " << OutcomeName(results[i].outcome) << ": " << detail << "\n";
    }
  }

  int rc = (total[Outcome::kCrash] > 0) ? 1 : 0;
  if (total[Outcome::kCrash] > 0) std::printf("FAILED: %d cases crashed\n", total[Outcome::kCrash]);
  const std::string known_file = absl::GetFlag(FLAGS_known_failures);
  if (!known_file.empty()) {
    absl::StatusOr<std::string> text = ReadFile(known_file);
    if (!text.ok()) {
      std::printf("FAILED: %s\n", text.status().ToString().c_str());
      return 1;
    }
    std::set<std::string> known;
    for (absl::string_view l : absl::StrSplit(*text, '\n')) {
      l = absl::StripAsciiWhitespace(l.substr(0, l.find('#')));
      if (!l.empty()) known.insert(std::string(l));
    }
    std::set<std::string> ran;
    for (const auto& c : cases) ran.insert(c.first);
    for (const std::string& n : not_passing) {
      if (!known.count(n)) {
        std::printf("REGRESSION: %s does not pass and is not a known failure\n", n.c_str());
        rc = 1;
      }
    }
    for (const std::string& n : known) {
      if (ran.count(n) && !not_passing.count(n)) {
        std::printf("NOW PASSING: %s passes: remove it from %s\n", n.c_str(), known_file.c_str());
        rc = 1;
      }
    }
    if (rc == 0) std::printf("known failures: %zu listed, run agrees\n", known.size());
  }
  return rc;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return graphopt::Main();
}
