#!/usr/bin/env bash
# graphopt's runtime against ONNX Runtime on the real-model corpus (see runtime_vs_ort.py).
# Usage: bench/runtime_vs_ort.sh [--trials N] [--runs R] [--burst B] [--models a,b] [--threads 1,2]
#                                [--opt_level L]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_python_deps.sh >/dev/null
if ! log=$(bazel build -c opt //bench:run_model_bench //models:corpus 2>&1); then
  echo "$log" >&2
  exit 1
fi
exec /usr/bin/python3 bench/runtime_vs_ort.py "$@"
