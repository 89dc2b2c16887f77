#!/usr/bin/env bash
# A repeated Optimize answered from graphopt-server's result cache against the pipeline
# (see optimize_cache.py). Usage: bench/optimize_cache.sh [--model resnet50] [--opt_level 2]
# [--trials 7]
set -euo pipefail
cd "$(dirname "$0")/.."
model=resnet50
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) model="$2"; args+=("$1" "$2"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if ! log=$(bazel build -c opt //server:graphopt-server "//models:${model}" 2>&1); then
  echo "$log" >&2
  exit 1
fi
client/python/generate.sh >/dev/null
PYTHONPATH="$PWD/client/python" exec /usr/bin/python3 bench/optimize_cache.py \
  --server .bazel/bin/server/graphopt-server \
  --model_file ".bazel/bin/models/corpus/${model}/model.onnx" "${args[@]}"
