#!/bin/bash
# One server and three workers as separate processes on loopback: the real-model corpus through
# the coordinator from concurrent clients, a worker SIGKILLed mid-request, a repeated request id,
# a worker that rejoins, a worker stalled with SIGSTOP. See cluster_test.py.
set -euo pipefail
readonly RUNFILES="${TEST_SRCDIR:?}/graphopt"
models=()
for m in "$@"; do
  [[ "${m}" == */model.onnx ]] && models+=("${RUNFILES}/${m}")
done
exec /usr/bin/python3 "${RUNFILES}/tests/cluster_test.py" \
  "${RUNFILES}/client/graphopt" "${RUNFILES}/server/graphopt-server" \
  "${RUNFILES}/worker/graphopt-worker" "${TEST_TMPDIR:?}" "${models[@]}"
