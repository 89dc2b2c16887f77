#!/usr/bin/env bash
# Memory planning on the real-model corpus: planned arena against the liveness lower bound, and
# peak RSS / latency with and without the plan (see memory_plan_bench.py).
# Usage: bench/memory_plan_bench.sh [--level L] [--trials N] [--runs R] [--threads T] [--models a,b]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! log=$(bazel build -c opt //bench:run_model_bench //models:corpus 2>&1); then
  echo "$log" >&2
  exit 1
fi
exec /usr/bin/python3 bench/memory_plan_bench.py "$@"
