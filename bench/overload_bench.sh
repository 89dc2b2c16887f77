#!/usr/bin/env bash
# Admission control under a closed-loop overload: Coordinator.Run throughput with 4x as many
# clients as the workers have execution slots, against the saturation throughput (as many
# clients as slots), in one run (see overload_bench.py). Run by hand; not a test.
# Usage: bench/overload_bench.sh [--trials N] [--seconds S] [--model mlp] [--workers W]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! log=$(bazel build -c opt //bench:run_load //server:graphopt-server \
    //worker:graphopt-worker //client:graphopt //models:mlp //models:resnet18 2>&1); then
  echo "$log" >&2
  exit 1
fi
exec /usr/bin/python3 bench/overload_bench.py "$@"
