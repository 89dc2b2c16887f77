#!/usr/bin/env bash
# The zoo against onnx-simplifier and ONNX Runtime: node counts, latency, peak RSS and first run
# (see zoo_bench.py). Builds what it needs, then runs under the venv's interpreter (onnxruntime).
# onnxsim is not among the venv's pinned packages: when the venv lacks it, version 0.4.36 (the
# last that works with Debian's onnx 1.12) and rich, which it imports, go into .bench_pylib/
# (from PyPI, once).
# Usage: bench/zoo_bench.sh [--models a,b] [--threads 1,2] [--trials N] [--runs R] [--burst B]
#                           [--no_latency] [--write_onnxsim FILE] [--json FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_python_deps.sh >/dev/null
if ! .venv/bin/python -c "import onnxsim" 2>/dev/null &&
   ! PYTHONPATH=.bench_pylib .venv/bin/python -c "import onnxsim" 2>/dev/null; then
  .venv/bin/python -m pip install -q --target .bench_pylib --no-deps onnxsim==0.4.36 \
    rich==13.3.1 markdown-it-py==2.2.0 mdurl==0.1.2 pygments==2.15.1
fi
if ! log=$(bazel build -c opt //client:graphopt //bench:run_model_bench //models:zoo 2>&1); then
  echo "$log" >&2
  exit 1
fi
exec .venv/bin/python bench/zoo_bench.py --python .venv/bin/python --onnxsim_path .bench_pylib "$@"
