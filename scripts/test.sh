#!/usr/bin/env bash
# README command (b): installs what is missing, builds everything and runs the whole test suite.
# Ends with the line "N passed, N failed" and exits non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh || { echo "0 passed, 1 failed"; exit 1; }
scripts/install_python_deps.sh || { echo "0 passed, 1 failed"; exit 1; }

BAZEL_FLAGS=()
if [[ "${CI:-}" == "true" ]]; then BAZEL_FLAGS+=(--config=ci); fi

targets=$(mktemp)
fuzz_targets=$(mktemp)
bep=$(mktemp)
fuzz_bep=$(mktemp)
trap 'rm -f "$targets" "$fuzz_targets" "$bep" "$fuzz_bep"; bazel shutdown >/dev/null 2>&1' EXIT

bazel test "${BAZEL_FLAGS[@]}" --keep_going --test_env=GRAPHOPT_PYTHON="$PWD/.venv/bin/python" \
  --build_event_json_file="$bep" //... "$@"
rc=$?

# Every test target of this run (cached results included) is counted from its test.xml.
bazel query 'tests(//...) except attr(tags, manual, //...)' \
  --output=label >"$targets" 2>/dev/null
testlogs=$(bazel info "${BAZEL_FLAGS[@]}" bazel-testlogs 2>/dev/null)

# The fuzz targets' smoke runs (fuzz/, docs/fuzzing.md): built with clang, ASan and UBSan in an
# output tree of their own (--config=fuzz), each target counted as one test.
bazel test "${BAZEL_FLAGS[@]}" --config=fuzz --keep_going --build_event_json_file="$fuzz_bep" \
  //fuzz:smoke
fuzz_rc=$?
bazel query 'tests(//fuzz:smoke)' --output=label >"$fuzz_targets" 2>/dev/null
fuzz_testlogs=$(bazel info "${BAZEL_FLAGS[@]}" --config=fuzz bazel-testlogs 2>/dev/null)

python3 scripts/count_tests.py --bep="$bep" --bep="$fuzz_bep" "$rc" "$testlogs" "$targets" \
  "$fuzz_rc" "$fuzz_testlogs" "$fuzz_targets"
