#!/bin/bash
# Runs portable_onnx_test.py (the corpus at -O3 and two gradient graphs, written as portable
# ONNX, run in ONNX Runtime against graphopt) under the Python that has ONNX Runtime:
# $GRAPHOPT_PYTHON (bazel test --test_env=GRAPHOPT_PYTHON="$PWD/.venv/bin/python").
#
# Usage (from the sh_test): portable_onnx_test.sh GRAPHOPT_BINARY CORPUS_FILE...
set -euo pipefail

if [[ -z "${GRAPHOPT_PYTHON:-}" || ! -x "${GRAPHOPT_PYTHON}" ]]; then
  cat >&2 <<'MSG'
FAIL: GRAPHOPT_PYTHON is not set to a Python with onnx and onnxruntime:
  scripts/install_python_deps.sh
  bazel test --test_env=GRAPHOPT_PYTHON="$PWD/.venv/bin/python" //tests:portable_onnx_test
MSG
  exit 1
fi

readonly RUNFILES="${TEST_SRCDIR:?not run by bazel test}/${TEST_WORKSPACE:-graphopt}"
readonly GRAPHOPT="${1:?usage: $0 GRAPHOPT_BINARY CORPUS_FILE...}"
shift

export PYTHONDONTWRITEBYTECODE=1
exec "${GRAPHOPT_PYTHON}" -u "${RUNFILES}/tests/portable_onnx_test.py" --graphopt "${GRAPHOPT}" \
  --work_dir "${TEST_TMPDIR:?}/portable" --grad resnet18 --grad mobilenet_v2 "$@"
