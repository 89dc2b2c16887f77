#!/usr/bin/env bash
# ThreadSanitizer run of the multi-threaded service tests: the coordinator, the worker service
# and plan cache, the coordinator's gRPC service and the server's gRPC handlers
# (docs/fuzzing.md, "ThreadSanitizer"). Builds with clang under --config=tsan (its own output
# tree, bazel-out/k8-opt-tsan), runs the tests with fuzz/tsan/tsan.supp, and ends with
# "N passed, N failed" like scripts/test.sh. A data race fails the test that showed it (TSan's
# exit code 66); its report is in that test's log (bazel-testlogs of the tsan configuration).
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
)

BAZEL_FLAGS=()
if [[ "${CI:-}" == "true" ]]; then BAZEL_FLAGS+=(--config=ci); fi

targets=$(mktemp)
bep=$(mktemp)
trap 'rm -f "$targets" "$bep"' EXIT
printf '%s\n' "${TESTS[@]}" >"$targets"

# ignore_noninstrumented_modules: what Debian's uninstrumented libraries (gRPC, protobuf, Abseil,
# OpenMP) do through intercepted calls (memcpy, malloc/free, sendmsg) is not recorded; they
# synchronize through atomics TSan cannot see. history_size: longer per-thread histories, so
# both stacks of a race are shown.
# OMP_NUM_THREADS=1: the runtime kernels' OpenMP threads (an uninstrumented libomp/libgomp)
# would show as races among themselves; the tests' own threads are what is checked here.
bazel test "${BAZEL_FLAGS[@]}" --config=tsan --keep_going --nocache_test_results \
  --build_event_json_file="$bep" \
  --test_env=TSAN_OPTIONS="suppressions=$PWD/fuzz/tsan/tsan.supp ignore_noninstrumented_modules=1 history_size=4 second_deadlock_stack=1" \
  --test_env=OMP_NUM_THREADS=1 \
  "${TESTS[@]}" "$@"
rc=$?
testlogs=$(bazel info "${BAZEL_FLAGS[@]}" --config=tsan bazel-testlogs 2>/dev/null)
# Names the races found, one line per report, before the count.
for t in "${TESTS[@]}"; do
  log="$testlogs/$(sed 's|^//||; s|:|/|' <<<"$t")/test.log"
  [[ -f "$log" ]] || continue
  n=$(grep -c '^WARNING: ThreadSanitizer' "$log")
  if (( n > 0 )); then echo "$t: $n ThreadSanitizer report(s) in $log"; fi
done
python3 scripts/count_tests.py --bep="$bep" "$rc" "$testlogs" "$targets"
