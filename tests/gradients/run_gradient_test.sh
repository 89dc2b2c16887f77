#!/bin/bash
# Runs one Python gradient test of this folder under Debian's /usr/bin/python3 (python3-torch,
# python3-onnx, numpy) with the graphopt CLI and the work folder Bazel gives the test.
#
# Usage (from the sh_test): run_gradient_test.sh SCRIPT.py [ARGS...]
set -euo pipefail

readonly RUNFILES="${TEST_SRCDIR:?not run by bazel test}/${TEST_WORKSPACE:-graphopt}"
readonly SCRIPT="${RUNFILES}/tests/gradients/${1:?usage: $0 SCRIPT.py [ARGS...]}"
shift
# The runfiles tree is not ours to write .pyc files into; torch gets the test's two cores.
export PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=2 HOME="${TEST_TMPDIR:?}"
exec /usr/bin/python3 -u "${SCRIPT}" --graphopt "${RUNFILES}/client/graphopt" \
  --work_dir "${TEST_TMPDIR}/work" "$@"
