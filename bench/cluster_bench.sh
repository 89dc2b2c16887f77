#!/usr/bin/env bash
# Coordinator.Run under load on loopback: throughput and p50/p99 latency for the MLP and
# resnet18 with 1, 2 and 3 graphopt-worker processes, against in-process execution (see
# cluster_bench.py). Run by hand; not a test.
# Usage: bench/cluster_bench.sh [--trials N] [--seconds S] [--models mlp,resnet18] [--workers 1,2,3]
#                               [--clients 1,4]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! log=$(bazel build -c opt //bench:run_load //server:graphopt-server \
    //worker:graphopt-worker //client:graphopt //models:mlp //models:resnet18 2>&1); then
  echo "$log" >&2
  exit 1
fi
exec /usr/bin/python3 bench/cluster_bench.py "$@"
