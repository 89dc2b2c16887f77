#!/usr/bin/env bash
# README command (a): installs what is missing, builds, starts a local optimizer server,
# optimizes the bundled example graph and an ONNX model exported from torch through it with the
# CLI, prints the pass reports and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh
BAZEL_FLAGS=()
if [[ "${CI:-}" == "true" ]]; then BAZEL_FLAGS+=(--config=ci); fi
bazel build "${BAZEL_FLAGS[@]}" //server:graphopt-server //client:graphopt //models:mlp

bin=.bazel/bin
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    echo
onnx_model=.bazel/bin/models/corpus/mlp/model.onnx
echo "\$ graphopt inspect $onnx_model   (an MLP exported from torch at build time)"
"$bin/client/graphopt" inspect "$onnx_model"
echo
echo "\$ graphopt optimize $onnx_model -o out/mlp.opt.onnx -O1 --server $addr"
"$bin/client/graphopt" optimize "$onnx_model" -o out/mlp.opt.onnx -O1 --server "$addr"

kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  bazel shutdown >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$bin/server/graphopt-server" --listen=127.0.0.1:0 --port_file="$work/port" \
  >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  [[ -s "$work/port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log"; exit 1; }
  sleep 0.1
done
[[ -s "$work/port" ]] || { echo "server did not start"; cat "$work/server.log"; exit 1; }
addr="127.0.0.1:$(cat "$work/port")"
echo "graphopt-server listening on $addr"
echo

mkdir -p out
echo "\$ graphopt optimize examples/mlp.pbtxt -o out/mlp.opt.pbtxt -O1 --server $addr"
"$bin/client/graphopt" optimize examples/mlp.pbtxt -o out/mlp.opt.pbtxt -O1 --server "$addr"
echo
echo "nodes of the optimized graph (out/mlp.opt.pbtxt):"
grep -E '^\s*op_type:' out/mlp.opt.pbtxt | sed 's/^\s*/  /'

echo
onnx_model=.bazel/bin/models/corpus/mlp/model.onnx
echo "\$ graphopt inspect $onnx_model   (an MLP exported from torch at build time)"
"$bin/client/graphopt" inspect "$onnx_model"
echo
echo "\$ graphopt optimize $onnx_model -o out/mlp.opt.onnx -O1 --server $addr"
"$bin/client/graphopt" optimize "$onnx_model" -o out/mlp.opt.onnx -O1 --server "$addr"

kill -TERM "$server_pid"
wait "$server_pid"
echo
echo "server stopped (exit $?)"
server_pid=""
