#!/usr/bin/env bash
# README command (a): installs what is missing, builds, makes a local CA and tokens, starts a
# local optimizer server (TLS, bearer tokens) and one graphopt-worker registered with it (mTLS),
# optimizes the bundled example graph and an ONNX model (an MLP exported from torch) through the
# server with the CLI, prints the pass reports, runs the optimized model through the service on
# the worker (Coordinator.Run), lists the workers, and stops both processes. Nothing runs in
# plaintext; docs/security.md explains the credentials.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh
BAZEL_FLAGS=()
if [[ "${CI:-}" == "true" ]]; then BAZEL_FLAGS+=(--config=ci); fi
bazel build "${BAZEL_FLAGS[@]}" //server:graphopt-server //worker:graphopt-worker \
  //client:graphopt //models:mlp

bin=.bazel/bin
graphopt="$bin/client/graphopt"
work=$(mktemp -d)
server_pid=""
worker_pid=""
# Stops a process started here with SIGTERM (a graceful stop) and waits for it.
stop() {
  if [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop "$worker_pid"
  stop "$server_pid"
  rm -rf "$work"
}
trap cleanup EXIT

# Waits for a port file written by a process started here; prints the port.
wait_port() {
  local file=$1 pid=$2 log=$3
  for _ in $(seq 1 100); do
    [[ -s "$file" ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  [[ -s "$file" ]] || { echo "no port in $file after 10 s" >&2; cat "$log" >&2; exit 1; }
  cat "$file"
}

# Credentials: a throwaway cluster CA with server and worker certificates, one tenant token and
# one admin token. The tokens file keeps only their SHA-256 hashes.
certs="$work/certs"
scripts/make_dev_certs.sh "$certs" >/dev/null
# The value after "<key>: " in `graphopt token new`'s output.
field() { sed -n "s/^$1: //p"; }
tenant_out=$("$graphopt" token new --tenant demo --label demo-user)
admin_out=$("$graphopt" token new --admin --label demo-admin)
{
  echo "$tenant_out" | field "tokens file line"
  echo "$admin_out" | field "tokens file line"
} >"$work/tokens"
export GRAPHOPT_TOKEN
GRAPHOPT_TOKEN=$(echo "$tenant_out" | field token)
admin_token=$(echo "$admin_out" | field token)
tls=(--tls-ca "$certs/ca.pem")
echo "made a local CA, server and worker certificates, and tokens for tenant 'demo' and an admin"

"$bin/server/graphopt-server" --listen=127.0.0.1:0 --port_file="$work/server.port" \
  --tls_cert="$certs/server.pem" --tls_key="$certs/server.key" --tls_ca="$certs/ca.pem" \
  --tokens_file="$work/tokens" >"$work/server.log" 2>&1 &
server_pid=$!
addr="127.0.0.1:$(wait_port "$work/server.port" "$server_pid" "$work/server.log")"
echo "graphopt-server listening on $addr (TLS; clients need a token)"

"$bin/worker/graphopt-worker" --listen=127.0.0.1:0 --port_file="$work/worker.port" \
  --tls_cert="$certs/worker.pem" --tls_key="$certs/worker.key" --tls_ca="$certs/ca.pem" \
  --worker_id=demo-worker --register_with="$addr" >"$work/worker.log" 2>&1 &
worker_pid=$!
worker_addr="127.0.0.1:$(wait_port "$work/worker.port" "$worker_pid" "$work/worker.log")"
echo "graphopt-worker demo-worker listening on $worker_addr (mTLS), registering with $addr"
# The coordinator probes new workers within half a second.
for _ in $(seq 1 100); do
  "$graphopt" workers --server "$addr" "${tls[@]}" --token "$admin_token" |
    grep -q "^$worker_addr .* up " && break
  sleep 0.1
done
echo

echo "\$ graphopt passes --server $addr --tls-ca ca.pem   (without a token)"
if GRAPHOPT_TOKEN= "$graphopt" passes --server "$addr" "${tls[@]}" >/dev/null 2>"$work/refused"; then
  echo "the server answered a call without a token" >&2
  exit 1
fi
cat "$work/refused"
echo

mkdir -p out
echo "# from here on GRAPHOPT_TOKEN holds tenant demo's token"
echo "\$ graphopt optimize examples/mlp.pbtxt -o out/mlp.opt.pbtxt -O1 --server $addr --tls-ca ca.pem"
"$graphopt" optimize examples/mlp.pbtxt -o out/mlp.opt.pbtxt -O1 --server "$addr" "${tls[@]}"
echo
echo "nodes of the optimized graph (out/mlp.opt.pbtxt):"
grep -E '^\s*op_type:' out/mlp.opt.pbtxt | sed 's/^\s*/  /'

echo
onnx_model=.bazel/bin/models/corpus/mlp/model.onnx
echo "\$ graphopt inspect $onnx_model   (an MLP exported from torch at build time)"
"$graphopt" inspect "$onnx_model"
echo
echo "\$ graphopt optimize $onnx_model -o out/mlp.opt.onnx -O1 --server $addr --tls-ca ca.pem"
"$graphopt" optimize "$onnx_model" -o out/mlp.opt.onnx -O1 --server "$addr" "${tls[@]}"

echo
echo "\$ graphopt workers --server $addr --tls-ca ca.pem --token ADMIN_TOKEN"
"$graphopt" workers --server "$addr" "${tls[@]}" --token "$admin_token"
echo
echo "\$ graphopt run out/mlp.opt.onnx --server $addr --tls-ca ca.pem -o out/run.remote   (on the worker)"
"$graphopt" run out/mlp.opt.onnx --server "$addr" "${tls[@]}" -o out/run.remote
echo
echo "\$ graphopt run out/mlp.opt.onnx -o out/run.local   (in this process, for comparison)"
"$graphopt" run out/mlp.opt.onnx -o out/run.local
for f in out/run.remote/*.npy; do
  cmp -s "$f" "out/run.local/$(basename "$f")" ||
    { echo "outputs differ: $f" >&2; exit 1; }
done
echo "the worker's outputs are byte-identical to the in-process run"
sleep 1  # the coordinator's next probe collects the worker's counts
echo
echo "\$ graphopt workers --server $addr --tls-ca ca.pem --token ADMIN_TOKEN"
"$graphopt" workers --server "$addr" "${tls[@]}" --token "$admin_token"

stop "$worker_pid"
worker_pid=""
stop "$server_pid"
server_pid=""
echo
echo "worker and server stopped"
