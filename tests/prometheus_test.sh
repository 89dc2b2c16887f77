#!/bin/bash
# Debian's prometheus scrapes a graphopt-server and a graphopt-worker (--metrics_listen); a
# Run's trace id appears in both JSON logs. See prometheus_test.py.
set -euo pipefail
readonly RUNFILES="${TEST_SRCDIR:?}/graphopt"
model=""
for m in "$@"; do
  [[ "${m}" == */model.onnx ]] && model="${RUNFILES}/${m}"
done
exec /usr/bin/python3 "${RUNFILES}/tests/prometheus_test.py" \
  "${RUNFILES}/client/graphopt" "${RUNFILES}/server/graphopt-server" \
  "${RUNFILES}/worker/graphopt-worker" "${TEST_TMPDIR:?}" "${model:?no model.onnx given}"
