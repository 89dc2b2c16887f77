#!/usr/bin/env bash
# graphopt's optimization time against ONNX Runtime's session creation (see optimize_vs_ort.py).
# Usage: bench/optimize_vs_ort.sh [--models a,b] [--opt_level 3] [--trials N] [--runs R]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_python_deps.sh >/dev/null
if ! log=$(bazel build -c opt //bench:optimize_time //models:corpus 2>&1); then
  echo "$log" >&2
  exit 1
fi
exec /usr/bin/python3 bench/optimize_vs_ort.py "$@"
