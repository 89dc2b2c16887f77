#!/usr/bin/env bash
# ThreadSanitizer run of the multi-threaded service tests: the coordinator, the worker service
# and plan cache, the coordinator's gRPC service, the server's gRPC handlers and blobs shared
# between replicas (docs/fuzzing.md, "ThreadSanitizer"). Builds with clang under --config=tsan
# (its own output tree, bazel-out/k8-opt-tsan), runs the tests with fuzz/tsan/tsan.supp, and
# ends with "N passed, N failed" like scripts/test.sh. A data race fails the test that showed
# it (TSan's exit code 66); its report is in that test's log (bazel-testlogs of the tsan
# configuration).
#
#   scripts/tsan.sh [extra bazel test flags, e.g. --runs_per_test=5]
set -uo pipefail
cd "$(dirname "$0")/.."

TESTS=(
  //service:coordinator_test
  //worker:plan_cache_test
  //worker:worker_service_test
  //server:coordinator_service_test
  //tests:server_integration_test
  //tests:blob_replicas_test
  //util:metrics_test
  //util:http_endpoint_test
  //server:rpc_metrics_test
)

BAZEL_FLAGS=()
if [[ "${CI:-}" == "true" ]]; then BAZEL_FLAGS+=(--config=ci); fi

targets=$(mktemp)
bep=$(mktemp)
started=$(mktemp)  # logs older than this are an earlier run's
trap 'rm -f "$targets" "$bep" "$started"' EXIT
printf '%s\n' "${TESTS[@]}" >"$targets"

# ignore_noninstrumented_modules: what Debian's uninstrumented libraries (gRPC, protobuf, Abseil,
# OpenMP) do through intercepted calls (memcpy, malloc/free, sendmsg) is not recorded; they
# synchronize through atomics TSan cannot see. history_size: longer per-thread histories, so
# both stacks of a race are shown.
# OMP_NUM_THREADS=1: the runtime kernels' OpenMP threads (an uninstrumented libomp/libgomp)
# would show as races among themselves; the tests' own threads are what is checked here.
# KMP_DUPLICATE_LIB_OK: clang's -fopenmp brings libomp while Debian's oneDNN brings libgomp;
# libomp refuses to start beside another OpenMP runtime unless told to, and which one
# initializes first varies from run to run. Only under this configuration; the numbers the
# kernels compute are not what this run checks.
bazel test "${BAZEL_FLAGS[@]}" --config=tsan --keep_going --nocache_test_results \
  --build_event_json_file="$bep" \
  --test_env=TSAN_OPTIONS="suppressions=$PWD/fuzz/tsan/tsan.supp ignore_noninstrumented_modules=1 history_size=4 second_deadlock_stack=1" \
  --test_env=OMP_NUM_THREADS=1 --test_env=KMP_DUPLICATE_LIB_OK=TRUE \
  "${TESTS[@]}" "$@"
rc=$?
testlogs=$(bazel info "${BAZEL_FLAGS[@]}" --config=tsan bazel-testlogs 2>/dev/null)
# Names the races found, one line per report, before the count.
# With --runs_per_test the logs of this run are run_*_of_N/test.log; older runs' logs may lie
# beside them.
for t in "${TESTS[@]}"; do
  dir="$testlogs/$(sed 's|^//||; s|:|/|' <<<"$t")"
  for log in "$dir"/test.log "$dir"/run_*/test.log; do
    [[ -f "$log" && "$log" -nt "$started" ]] || continue
    n=$(grep -c '^WARNING: ThreadSanitizer' "$log")
    if (( n > 0 )); then echo "$t: $n ThreadSanitizer report(s) in $log"; fi
  done
done
python3 scripts/count_tests.py --bep="$bep" "$rc" "$testlogs" "$targets"
