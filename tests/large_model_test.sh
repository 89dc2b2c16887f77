#!/bin/bash
# A 150 MiB ONNX model (weights inline in the file) through a real graphopt-server, twice:
# inline in the Optimize request, and with its weights sent ahead as a content-addressed blob.
# Both results must equal the embedded optimizer's byte for byte. Prints the time and the
# server's peak memory of each path, and checks that the blob path holds the weights about once
# (peak under 1.5x the model plus the idle server).
set -euo pipefail

readonly RUNFILES="${TEST_SRCDIR:?}/graphopt"
readonly SERVER="${RUNFILES}/server/graphopt-server"
readonly CLI="${RUNFILES}/client/graphopt"
readonly MAKE_MODEL="${RUNFILES}/tests/make_large_onnx.py"
readonly TMP="${TEST_TMPDIR:?}"
readonly SIZE_MB=150

server_pid=""
cleanup() {
  if [[ -n "${server_pid}" ]]; then kill -KILL "${server_pid}" 2>/dev/null || true; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

start_server() {
  rm -f "${TMP}/port"
  "${SERVER}" --insecure --listen 127.0.0.1:0 --port_file "${TMP}/port" >"${TMP}/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    [[ -s "${TMP}/port" ]] && break
    kill -0 "${server_pid}" 2>/dev/null || { cat "${TMP}/server.log"; fail "server died"; }
    sleep 0.1
  done
  addr="127.0.0.1:$(cat "${TMP}/port")"
}
stop_server() {
  kill -TERM "${server_pid}"
  wait "${server_pid}" || fail "server exited non-zero"
  server_pid=""
}
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }

PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "${MAKE_MODEL}" "${TMP}/large.onnx" "${SIZE_MB}"
model_bytes=$(stat -c %s "${TMP}/large.onnx")
echo "model: $((model_bytes / 1048576)) MiB"

"${CLI}" optimize "${TMP}/large.onnx" -o "${TMP}/embedded.onnx" -O1 --quiet

for mode in never always; do
  start_server
  idle_kib=$(kib "${server_pid}" VmRSS)
  start_ns=$(date +%s%N)
  "${CLI}" optimize "${TMP}/large.onnx" -o "${TMP}/${mode}.onnx" -O1 --server "${addr}" \
    --upload-weights "${mode}" >"${TMP}/${mode}.out" 2>&1 || { cat "${TMP}/${mode}.out"; fail "optimize failed"; }
  ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
  peak_kib=$(kib "${server_pid}" VmHWM)
  extra_mib=$(( (peak_kib - idle_kib) / 1024 ))
  stop_server
  cmp -s "${TMP}/embedded.onnx" "${TMP}/${mode}.onnx" || fail "--upload-weights ${mode}: result differs"
  grep -q "wrote .* (2 nodes)" "${TMP}/${mode}.out" || { cat "${TMP}/${mode}.out"; fail "Identity not removed"; }
  label=$([[ "${mode}" == never ]] && echo "inline request " || echo "weights as blob")
  awk -v l="${label}" -v ms="${ms}" -v mib="${extra_mib}" -v b="${model_bytes}" 'BEGIN {
    printf "%s: %5.2f s, server peak %4d MiB above idle (%.2fx the model)\n", l, ms / 1000,
      mib, mib * 1048576 / b }'
  if [[ "${mode}" == always ]]; then
    grep -q "^weights: 1 blobs" "${TMP}/${mode}.out" || { cat "${TMP}/${mode}.out"; fail "no blob upload"; }
    limit_mib=$(( model_bytes * 3 / 2 / 1048576 ))
    (( extra_mib < limit_mib )) || fail "blob path peak ${extra_mib} MiB >= ${limit_mib} MiB"
  fi
done
echo "PASS"
