#!/usr/bin/env bash
# The 1.1-billion-parameter Llama-style decoder against ONNX Runtime (bench/llm_bench.py): exports
# it once (models/export_llm.py --size 1b: ~3 minutes, 9 GiB of memory, 4.4 GB on disk) into
# $GRAPHOPT_LLM_DIR (default ~/.cache/graphopt-models/llm_1b), builds what it needs, then runs.
# Needs ~13 GiB of free memory while both contenders hold the model.
# Usage: bench/llm_bench.sh [--threads 1,2] [--runs R] [--burst B] [--scenarios decode,prefill]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_python_deps.sh >/dev/null
readonly LLM_DIR="${GRAPHOPT_LLM_DIR:-${HOME}/.cache/graphopt-models/llm_1b}"
if [[ ! -s "${LLM_DIR}/model.onnx.data" ]]; then
  echo "exporting the 1.1B decoder into ${LLM_DIR} (once) ..."
  OMP_NUM_THREADS=2 /usr/bin/python3 models/export_llm.py --size 1b --out "${LLM_DIR}"
fi
if ! log=$(bazel build -c opt //bench:run_model_bench 2>&1); then
  echo "$log" >&2
  exit 1
fi
exec .venv/bin/python bench/llm_bench.py --model_dir "${LLM_DIR}" --python .venv/bin/python "$@"
