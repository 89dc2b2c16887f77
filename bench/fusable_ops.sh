#!/usr/bin/env bash
# Each fusable ONNX op alone and after a convolution, graphopt -O3 against ONNX Runtime (see
# fusable_ops.py). Usage: bench/fusable_ops.sh [--threads N] [--runs R] [--ops a,b] [--markdown]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_python_deps.sh >/dev/null
if ! log=$(bazel build -c opt //bench:run_model_bench 2>&1); then
  echo "$log" >&2
  exit 1
fi
exec .venv/bin/python bench/fusable_ops.py "$@"
