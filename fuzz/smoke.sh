#!/usr/bin/env bash
# Runs one libFuzzer target: makes its seed corpus (make_seeds), replays it, then mutates for
# a fixed budget. Fails when the fuzzer reports a crash, a sanitizer error, a timeout or an
# out-of-memory input; the input is saved in the artifacts folder (the test's undeclared
# outputs under Bazel).
#
# As a test (fuzz/fuzz.bzl passes the arguments):
#   smoke.sh --fuzzer=BIN --seed_tool=BIN --seed_mode=MODE [--dict=FILE] [--max_len=N]
#            [--timeout=S] [--runs=N] [--max_total_time=S] [--replay=FILE]... SEED_INPUT...
# --replay names an input that once crashed the target (fuzz/regressions/TARGET/): each is run
# alone first and must pass.
# Longer runs (fuzz/run_long.sh) add, after the test's own arguments:
#   --runs=-1 --max_total_time=SECONDS --corpus=DIR [--artifacts=DIR] [--keep_going]
# --keep_going runs libFuzzer in fork mode (-fork=1) and goes on after a crash, timeout or
# out-of-memory input (each saved in the artifacts folder); the run still fails if there was one.
# --corpus keeps the inputs found (and reads those of earlier runs); without it they go to a
# temporary folder. Flags may come in any order; a later one overrides an earlier one.
set -uo pipefail

fuzzer="" seed_tool="" seed_mode="" dict="" corpus="" artifacts="" keep_going=0
max_len=65536 timeout=10 runs=2000 max_total_time=60 rss_limit_mb=2048
inputs=()
replays=()
for arg in "$@"; do
  case "$arg" in
    --fuzzer=*) fuzzer=${arg#*=} ;;
    --seed_tool=*) seed_tool=${arg#*=} ;;
    --seed_mode=*) seed_mode=${arg#*=} ;;
    --dict=*) dict=${arg#*=} ;;
    --max_len=*) max_len=${arg#*=} ;;
    --timeout=*) timeout=${arg#*=} ;;
    --runs=*) runs=${arg#*=} ;;
    --max_total_time=*) max_total_time=${arg#*=} ;;
    --rss_limit_mb=*) rss_limit_mb=${arg#*=} ;;
    --corpus=*) corpus=${arg#*=} ;;
    --artifacts=*) artifacts=${arg#*=} ;;
    --replay=*) replays+=("${arg#*=}") ;;
    --keep_going) keep_going=1 ;;
    --*) echo "smoke.sh: unknown flag $arg" >&2; exit 2 ;;
    *) inputs+=("$arg") ;;
  esac
done
if [[ -z "$fuzzer" || -z "$seed_tool" || -z "$seed_mode" ]]; then
  echo "smoke.sh: --fuzzer, --seed_tool and --seed_mode are required" >&2
  exit 2
fi
name=$(basename "$fuzzer")

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
seeds=$work/seeds
if [[ -z "$corpus" ]]; then corpus=$work/corpus; fi
if [[ -z "$artifacts" ]]; then artifacts=${TEST_UNDECLARED_OUTPUTS_DIR:-$work/artifacts}; fi
mkdir -p "$corpus" "$artifacts"

"$seed_tool" "--max_bytes=$max_len" "$seed_mode" "$seeds" "${inputs[@]}" || {
  echo "smoke.sh: $name: make_seeds failed" >&2
  exit 1
}

flags=(
  "-max_len=$max_len" "-timeout=$timeout" "-rss_limit_mb=$rss_limit_mb"
  "-malloc_limit_mb=$rss_limit_mb" "-max_total_time=$max_total_time" "-runs=$runs"
  "-artifact_prefix=$artifacts/" "-print_final_stats=1" "-print_pcs=0"
)
if [[ -n "$dict" ]]; then flags+=("-dict=$dict"); fi
if (( keep_going )); then
  flags+=("-fork=1" "-ignore_crashes=1" "-ignore_timeouts=1" "-ignore_ooms=1")
fi
# A fixed seed under the test makes a smoke run repeatable; longer runs take a random one.
if [[ "$runs" != "-1" ]]; then flags+=("-seed=1"); fi

# Symbolized stacks; UBSan's reports with their stacks (the build makes them fatal).
symbolizer=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_stack_use_after_return=1${symbolizer:+:external_symbolizer_path=$symbolizer}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:print_stacktrace=1${symbolizer:+:external_symbolizer_path=$symbolizer}"

log=$work/fuzz.log
if (( ${#replays[@]} > 0 )); then
  if ! "$fuzzer" "-timeout=$timeout" "-rss_limit_mb=$rss_limit_mb" \
      "-malloc_limit_mb=$rss_limit_mb" "${replays[@]}" >"$log" 2>&1; then
    echo "---- $name: a saved regression input fails again; the log:"
    tail -n 80 "$log"
    exit 1
  fi
  echo "$name: ${#replays[@]} regression input(s) pass"
fi

start=$(date +%s)
touch "$work/started"  # crashes counted are those written by this run
"$fuzzer" "${flags[@]}" "$corpus" "$seeds" >"$log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - start ))

# The last status line ("#N DONE cov: C ft: F corp: ...", in fork mode "#N: cov: C ft: F ...")
# and the final stats (fork mode prints none: the count and rate come from the status line).
status=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$status")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$status")
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
if [[ -z "$execs" ]]; then
  execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$status")
  if [[ -n "$execs" ]] && (( elapsed > 0 )); then speed=$(( execs / elapsed )); fi
fi
crashes=$(find "$artifacts" -maxdepth 1 -type f -newer "$work/started" \( -name 'crash-*' \
  -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
seed_count=$(find "$seeds" -type f | wc -l)
corpus_count=$(find "$corpus" -type f | wc -l)

if (( rc == 0 && crashes > 0 )); then rc=1; fi
if (( rc != 0 )); then
  echo "---- $name: fuzzer exited $rc; its log:"
  tail -n 80 "$log"
else
  tail -n 12 "$log"
fi
echo "$name: ${execs:-?} inputs in ${elapsed}s (${speed:-?} execs/s), cov: ${cov:-?} ft: ${ft:-?}," \
  "seeds: $seed_count, corpus: $corpus_count, peak RSS: ${rss:-?} MB, crashes: $crashes, exit: $rc"
exit "$rc"
