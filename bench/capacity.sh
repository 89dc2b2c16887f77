#!/usr/bin/env bash
# Capacity planning: Optimize requests/s per server core and Run requests/s per worker core on
# this machine (bench/capacity.py). Run by hand; not a test.
# Usage: bench/capacity.sh [--trials N] [--seconds S] [--models mlp,resnet18,...]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! log=$(bazel build -c opt //bench:run_load //server:graphopt-server //worker:graphopt-worker \
    //tests:wire_py //models:mlp //models:resnet18 //models:transformer_encoder 2>&1); then
  echo "$log" >&2
  exit 1
fi
exec /usr/bin/python3 bench/capacity.py "$@"
