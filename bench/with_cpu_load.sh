#!/usr/bin/env bash
# Runs a command while N busy-loop processes compete for the CPUs: a reproducible stand-in for
# a loaded host or noisy neighbours (bench/contention_bench.py). The loops run at the command's
# own priority and are ended (by their process ids) when the command returns.
# Usage: bench/with_cpu_load.sh N COMMAND [ARGS...]
set -euo pipefail
n="$1"
shift
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
for ((i = 0; i < n; i++)); do
  bash -c 'while :; do :; done' &
  pids+=($!)
done
"$@"
