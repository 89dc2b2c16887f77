#!/usr/bin/env bash
# A long run of one fuzz target (docs/fuzzing.md):
#   fuzz/run_long.sh [--keep_going] TARGET SECONDS CORPUS_DIR [ARTIFACTS_DIR]
# e.g. fuzz/run_long.sh graph_pipeline_fuzzer 3600 /var/tmp/fuzz/graph
# Builds the target under --config=fuzz and runs it through its smoke test's script with the
# same seeds, dictionary and limits (-max_len, -timeout, -rss_limit_mb=2048), without a run
# count, for SECONDS. CORPUS_DIR keeps the inputs found (a later run starts from them);
# ARTIFACTS_DIR (default CORPUS_DIR-artifacts) gets crash-*, timeout-* and oom-* inputs.
# Without --keep_going the run stops at the first one; with it (libFuzzer's fork mode) it goes
# on for SECONDS and collects them all.
# Ends with the line "TARGET: N inputs in Ss (E execs/s), cov: C ft: F, ... crashes: K, exit: R"
# and exits with the fuzzer's status (0: no crash, timeout or out-of-memory input found).
set -uo pipefail
cd "$(dirname "$0")/.."

extra=()
if [[ "${1:-}" == "--keep_going" ]]; then
  extra+=(--keep_going)
  shift
fi
if (( $# < 3 )); then
  echo "usage: fuzz/run_long.sh [--keep_going] TARGET SECONDS CORPUS_DIR [ARTIFACTS_DIR]" >&2
  echo "targets: graph_pipeline_fuzzer onnx_import_fuzzer rule_fuzzer op_descriptor_fuzzer" >&2
  exit 2
fi
target=$1
seconds=$2
corpus=$(realpath -m "$3")
artifacts=$(realpath -m "${4:-$3-artifacts}")
mkdir -p "$corpus" "$artifacts"

# Bazel empties its execroot's _tmp at the start of every command, where `bazel run` would put
# the run's scratch (seeds, the fuzzer's log): a second run_long.sh, or any bazel command in
# this workspace, would delete them under a running fuzzer. So the run is written out as a
# script and started outside Bazel, its scratch in a folder of its own.
script=$(mktemp "${TMPDIR:-/tmp}/fuzz-run.XXXXXX")
scratch=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-long.XXXXXX")
trap 'rm -rf "$script" "$scratch"' EXIT
bazel run --config=fuzz --script_path="$script" "//fuzz:${target}_smoke" -- \
  --runs=-1 "--max_total_time=$seconds" "--corpus=$corpus" "--artifacts=$artifacts" \
  "${extra[@]}" || exit $?
sed -i "s|TEST_TMPDIR=[^ ]*|TEST_TMPDIR=$scratch|" "$script"
bash "$script"
