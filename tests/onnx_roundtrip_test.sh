#!/bin/bash
# Runs onnx_roundtrip_test.py (the model corpus through `graphopt optimize -O2`, checked with
# onnx and ONNX Runtime) under the Python that has ONNX Runtime: $GRAPHOPT_PYTHON, the venv made
# by scripts/install_python_deps.sh. scripts/test.sh passes it with
# --test_env=GRAPHOPT_PYTHON="$PWD/.venv/bin/python".
#
# Usage (from the sh_test): onnx_roundtrip_test.sh GRAPHOPT_BINARY CORPUS_FILE...
set -euo pipefail

if [[ -z "${GRAPHOPT_PYTHON:-}" ]]; then
  cat >&2 <<'MSG'
FAIL: GRAPHOPT_PYTHON is not set. This test needs a Python with onnx and onnxruntime:
  scripts/install_python_deps.sh
  bazel test --test_env=GRAPHOPT_PYTHON="$PWD/.venv/bin/python" //tests:onnx_roundtrip_test
MSG
  exit 1
fi
if [[ ! -x "${GRAPHOPT_PYTHON}" ]]; then
  echo "FAIL: GRAPHOPT_PYTHON=${GRAPHOPT_PYTHON} is not an executable" \
    "(run scripts/install_python_deps.sh)" >&2
  exit 1
fi

readonly RUNFILES="${TEST_SRCDIR:?not run by bazel test}/${TEST_WORKSPACE:-graphopt}"
readonly TEST_PY="${RUNFILES}/tests/onnx_roundtrip_test.py"
readonly GRAPHOPT="${1:?usage: $0 GRAPHOPT_BINARY CORPUS_FILE...}"
shift

# The runfiles tree is not ours to write .pyc files into.
export PYTHONDONTWRITEBYTECODE=1
exec "${GRAPHOPT_PYTHON}" -u "${TEST_PY}" --graphopt "${GRAPHOPT}" \
  --work_dir "${TEST_TMPDIR:?}/optimized" "$@"
