#!/bin/bash
# Two server replicas and workers sharing a real etcd: worker membership by lease, a request id
# run once across replicas, and no Run with a request id while etcd is gone. See
# etcd_replicas_test.py.
set -euo pipefail
readonly RUNFILES="${TEST_SRCDIR:?}/graphopt"
model=""
for m in "$@"; do
  [[ "${m}" == */model.onnx ]] && model="${RUNFILES}/${m}"
done
exec /usr/bin/python3 "${RUNFILES}/tests/etcd_replicas_test.py" \
  "${RUNFILES}/client/graphopt" "${RUNFILES}/server/graphopt-server" \
  "${RUNFILES}/worker/graphopt-worker" "${TEST_TMPDIR:?}" "${model:?no model.onnx given}"
