#!/bin/bash
# Weights across real graphopt-server processes: one etcd (Debian's etcd-server), two replicas
# A and B. The CLI uploads a model's weights through A; the same model through B sends nothing
# (B fetches the blob from A by digest) and gives the same result. Then A is killed (its
# records outlive it until its lease expires): a second model, uploaded through A before,
# costs one re-upload through B and still gives the embedded optimizer's result. Without the
# etcd binary the test is skipped (a JUnit <skipped/> in $XML_OUTPUT_FILE).
set -euo pipefail

readonly RUNFILES="${TEST_SRCDIR:?}/graphopt"
readonly SERVER="${RUNFILES}/server/graphopt-server"
readonly CLI="${RUNFILES}/client/graphopt"
readonly MAKE_MODEL="${RUNFILES}/tests/make_large_onnx.py"
readonly TMP="${TEST_TMPDIR:?}"
readonly ETCD="${GRAPHOPT_ETCD:-/usr/bin/etcd}"

if [[ ! -x "${ETCD}" ]]; then
  echo "SKIPPED: no etcd binary at ${ETCD} (install etcd-server)"
  if [[ -n "${XML_OUTPUT_FILE:-}" ]]; then
    cat >"${XML_OUTPUT_FILE}" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="1" failures="0" errors="0" skipped="1">
  <testsuite name="blob_replicas_server_test" tests="1" failures="0" errors="0" skipped="1">
    <testcase name="blob_replicas_server_test" classname="tests"><skipped message="no etcd binary"/></testcase>
  </testsuite>
</testsuites>
XML
  fi
  exit 0
fi

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "${pid}" 2>/dev/null || true; done
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "${TMP}"/*.log; do echo "== ${f}"; tail -n 20 "${f}"; done >&2
  exit 1
}
free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

client_port=$(free_port)
peer_port=$(free_port)
"${ETCD}" --name blobtest --data-dir "${TMP}/etcd" \
  --listen-client-urls "http://127.0.0.1:${client_port}" \
  --advertise-client-urls "http://127.0.0.1:${client_port}" \
  --listen-peer-urls "http://127.0.0.1:${peer_port}" \
  --initial-advertise-peer-urls "http://127.0.0.1:${peer_port}" \
  --initial-cluster "blobtest=http://127.0.0.1:${peer_port}" >"${TMP}/etcd.log" 2>&1 &
pids+=($!)
readonly ENDPOINTS="127.0.0.1:${client_port}"

# start_replica NAME: starts a replica; its address in ${addr[NAME]}, pid in ${pid[NAME]}.
declare -A addr pid
start_replica() {
  local name=$1
  rm -f "${TMP}/${name}.port"
  "${SERVER}" --insecure --listen 127.0.0.1:0 --port_file "${TMP}/${name}.port" --op_store_dir= \
    --etcd_endpoints "${ENDPOINTS}" --etcd_prefix /blobtest/ >"${TMP}/${name}.log" 2>&1 &
  pid[${name}]=$!
  pids+=($!)
  for _ in $(seq 1 300); do
    [[ -s "${TMP}/${name}.port" ]] && break
    kill -0 "${pid[${name}]}" 2>/dev/null || fail "replica ${name} died"
    sleep 0.1
  done
  [[ -s "${TMP}/${name}.port" ]] || fail "replica ${name} did not start"
  addr[${name}]="127.0.0.1:$(cat "${TMP}/${name}.port")"
}

# optimize MODEL SERVER OUT: through a server, weights sent ahead as blobs; prints the CLI's
# "weights:" line.
optimize() {
  "${CLI}" optimize "$1" -o "$3" -O1 --server "$2" --upload-weights always >"$3.out" 2>&1 ||
    { cat "$3.out"; fail "optimize $1 through $2 failed"; }
  grep "^weights:" "$3.out" || true
}

PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "${MAKE_MODEL}" "${TMP}/m1.onnx" 8
PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "${MAKE_MODEL}" "${TMP}/m2.onnx" 9
"${CLI}" optimize "${TMP}/m1.onnx" -o "${TMP}/m1.embedded.onnx" -O1 --quiet
"${CLI}" optimize "${TMP}/m2.onnx" -o "${TMP}/m2.embedded.onnx" -O1 --quiet

start_replica a
start_replica b

echo "-- m1 through A, then through B"
optimize "${TMP}/m1.onnx" "${addr[a]}" "${TMP}/m1.a.onnx" | tee "${TMP}/m1.a.weights"
grep -q ": 1 sent" "${TMP}/m1.a.weights" || fail "A did not take the upload"
start_ns=$(date +%s%N)
optimize "${TMP}/m1.onnx" "${addr[b]}" "${TMP}/m1.b.onnx" | tee "${TMP}/m1.b.weights"
echo "through B, blob fetched from A: $(( ($(date +%s%N) - start_ns) / 1000000 )) ms (whole CLI run)"
grep -q ": 0 sent" "${TMP}/m1.b.weights" || fail "B asked for an upload of a blob A holds"
grep -q "blob fetch: tenant default blob sha256:.* from ${addr[a]}" "${TMP}/b.log" ||
  fail "B did not fetch from A"
cmp -s "${TMP}/m1.embedded.onnx" "${TMP}/m1.b.onnx" || fail "m1 through B differs"

echo "-- m2 through A; A killed; m2 through B"
optimize "${TMP}/m2.onnx" "${addr[a]}" "${TMP}/m2.a.onnx" >/dev/null
kill -KILL "${pid[a]}"
optimize "${TMP}/m2.onnx" "${addr[b]}" "${TMP}/m2.b.onnx" | tee "${TMP}/m2.b.weights"
grep -q ": 1 sent" "${TMP}/m2.b.weights" || fail "B did not ask for a re-upload with A gone"
cmp -s "${TMP}/m2.embedded.onnx" "${TMP}/m2.b.onnx" || fail "m2 through B differs"

kill -TERM "${pid[b]}"
wait "${pid[b]}" || fail "replica b exited non-zero"
echo "PASS"
