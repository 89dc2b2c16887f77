#!/bin/bash
# Custom ops end to end, through the real binaries: a resnet18 whose Relus are a body-only op
# (com.example::Swish) and whose first MaxPool is a rule-only op (com.example::Downsample) is
# refused until the ops are registered over RPC with `graphopt ops register`; then it is
# shape-inferred, inlined and optimized in the registering tenant only; request-local ops work
# for one request; bad descriptors are refused with their position; registrations survive a
# server restart; unregistering takes the op away.
set -euo pipefail

readonly RUNFILES="${TEST_SRCDIR:?}/graphopt"
readonly SERVER="${RUNFILES}/server/graphopt-server"
readonly CLI="${RUNFILES}/client/graphopt"
readonly OPS="${RUNFILES}/examples/custom_ops.pbtxt"
readonly RESNET18="${RUNFILES}/models/corpus/resnet18/model.onnx"
readonly TMP="${TEST_TMPDIR:?}"
readonly STORE="${TMP}/op_store"
export PYTHONDONTWRITEBYTECODE=1

server_pid=""
cleanup() { if [[ -n "${server_pid}" ]]; then kill -KILL "${server_pid}" 2>/dev/null || true; fi; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [[ -f "${TMP}/server.log" ]] && tail -20 "${TMP}/server.log" >&2; exit 1; }

start_server() {
  rm -f "${TMP}/port"
  "${SERVER}" --insecure --listen 127.0.0.1:0 --port_file "${TMP}/port" --op_store_dir "${STORE}" \
    >>"${TMP}/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    [[ -s "${TMP}/port" ]] && break
    kill -0 "${server_pid}" 2>/dev/null || fail "server died"
    sleep 0.1
  done
  addr="127.0.0.1:$(cat "${TMP}/port")"
}
stop_server() { kill -TERM "${server_pid}"; wait "${server_pid}" || fail "server exit"; server_pid=""; }

# run_expect CODE OUT CMD...: CMD must exit with CODE; stdout+stderr in OUT.
run_expect() {
  local expected="$1" out="$2" rc=0
  shift 2
  "$@" >"${out}" 2>&1 || rc=$?
  [[ "${rc}" -eq "${expected}" ]] || { cat "${out}" >&2; fail "exit ${rc}, expected ${expected}: $*"; }
}
expect_grep() { grep -Eq -- "$1" "$2" || { cat "$2" >&2; fail "'$1' not in $2"; }; }

/usr/bin/python3 "${RUNFILES}/tests/make_custom_model.py" "${RESNET18}" "${TMP}/custom.onnx"
start_server

# Unknown before registration.
run_expect 1 "${TMP}/unknown.out" "${CLI}" optimize "${TMP}/custom.onnx" -o "${TMP}/x.onnx" \
  --server "${addr}" --tenant acme
expect_grep "^error: INVALID_ARGUMENT: node .*\(com.example::(Swish|Downsample)\): unknown op" \
  "${TMP}/unknown.out"

# Register over RPC from the CLI.
run_expect 0 "${TMP}/register.out" "${CLI}" ops register "${OPS}" --server "${addr}" --tenant acme
expect_grep "^registered com.example::Swish v1$" "${TMP}/register.out"
expect_grep "^registered com.example::Downsample v1$" "${TMP}/register.out"
run_expect 0 "${TMP}/again.out" "${CLI}" ops register "${OPS}" --server "${addr}" --tenant acme
expect_grep "^unchanged com.example::Swish v1$" "${TMP}/again.out"
run_expect 0 "${TMP}/list.out" "${CLI}" ops list --registered --server "${addr}" --tenant acme
expect_grep "^com.example +Downsample " "${TMP}/list.out"
run_expect 0 "${TMP}/list_other.out" "${CLI}" ops list --registered --server "${addr}" --tenant other
expect_grep "tenant 'other' has no registered ops" "${TMP}/list_other.out"
run_expect 0 "${TMP}/show.out" "${CLI}" ops show Downsample --domain com.example \
  --server "${addr}" --tenant acme
expect_grep "cdiv" "${TMP}/show.out"

# Shape-inferred, inlined and optimized inside the real model.
run_expect 0 "${TMP}/opt.out" "${CLI}" optimize "${TMP}/custom.onnx" -o "${TMP}/opt.onnx" -O1 \
  --server "${addr}" --tenant acme
expect_grep "^inline_functions .* yes .*inlined 17 nodes \(com.example::Swish: 17\)" "${TMP}/opt.out"
expect_grep "^infer_shape .*: [0-9]+ static, 0 symbolic, 0 partially known, 0 of unknown rank" \
  "${TMP}/opt.out"
/usr/bin/python3 - "${TMP}/opt.onnx" <<'PY'
import sys
import onnx
m = onnx.load(sys.argv[1])
ops = [n.op_type for n in m.graph.node]
assert "Swish" not in ops and "Relu" not in ops, ops
assert ops.count("Sigmoid") == 17 and ops.count("Mul") == 17, ops
down = [n for n in m.graph.node if n.op_type == "Downsample"]
assert len(down) == 1 and down[0].domain == "com.example", down
shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in m.graph.value_info}
assert shapes[down[0].output[0]] == [1, 64, 56, 56], shapes[down[0].output[0]]
out = m.graph.output[0].type.tensor_type.shape
assert [d.dim_value for d in out.dim] == [1, 1000], out
print("optimized model: Swish inlined 17x, Downsample output", shapes[down[0].output[0]])
PY

# Another tenant does not see acme's ops; request-local ops serve one request only.
run_expect 1 "${TMP}/other.out" "${CLI}" optimize "${TMP}/custom.onnx" -o "${TMP}/x.onnx" \
  --server "${addr}" --tenant other
expect_grep "unknown op 'com.example::" "${TMP}/other.out"
run_expect 0 "${TMP}/local.out" "${CLI}" optimize "${TMP}/custom.onnx" -o "${TMP}/local.onnx" -O1 \
  --server "${addr}" --tenant other --ops "${OPS}"
cmp -s "${TMP}/opt.onnx" "${TMP}/local.onnx" || fail "request-local ops gave another result"
run_expect 0 "${TMP}/list_other2.out" "${CLI}" ops list --registered --server "${addr}" --tenant other
expect_grep "tenant 'other' has no registered ops" "${TMP}/list_other2.out"

# Bad descriptors: refused with the descriptor, the rule and the position; nothing stored.
bad() {  # bad NAME TEXT PATTERN
  printf '%s\n' "$2" >"${TMP}/$1.pbtxt"
  run_expect 1 "${TMP}/$1.out" "${CLI}" ops register "${TMP}/$1.pbtxt" --server "${addr}" \
    --tenant acme
  expect_grep "$3" "${TMP}/$1.out"
}
readonly IO='inputs { name: "X" type_constraint: "T" } outputs { name: "Y" type_constraint: "T" } type_constraints { name: "T" allowed: DT_FLOAT32 }'
bad syntax "ops { name: \"A\" domain: \"com.example\" ${IO} shape_rule { expr: \"let x = shape(X);\\noutput[0] = x +;\" } }" \
  "^error: INVALID_ARGUMENT: ops\[0\]: op com.example::A: shape_rule 2:"
bad unknown_input "ops { name: \"A\" domain: \"com.example\" ${IO} shape_rule { expr: \"output[0] = shape(W);\" } }" \
  "shape_rule 1:[0-9]+: unknown input 'W'"
bad builtin "ops { name: \"Relu\" domain: \"\" ${IO} shape_rule { builtin: \"Relu\" } }" \
  "op Relu: domain '' is the builtin ONNX ops' domain"
bad no_rule "ops { name: \"A\" domain: \"com.example\" ${IO} }" "shape_rule is required"
bad recursive "ops { name: \"R\" domain: \"com.example\" ${IO} body { inputs { name: \"x\" } outputs { name: \"y\" } nodes { op_type: \"R\" domain: \"com.example\" inputs: \"x\" outputs: \"y\" } } }" \
  "body is recursive: com.example::R -> com.example::R"
bad changed "ops { name: \"Swish\" domain: \"com.example\" version: 1 ${IO} shape_rule { builtin: \"Relu\" } }" \
  "op com.example::Swish: differs from the registered v1; a redefinition must raise version"
run_expect 0 "${TMP}/still.out" "${CLI}" ops list --registered --server "${addr}" --tenant acme
[[ $(grep -c "^com.example " "${TMP}/still.out") -eq 2 ]] || { cat "${TMP}/still.out"; fail "store changed"; }

# A restart keeps the registrations.
stop_server
start_server
run_expect 0 "${TMP}/after.out" "${CLI}" optimize "${TMP}/custom.onnx" -o "${TMP}/after.onnx" -O1 \
  --server "${addr}" --tenant acme
cmp -s "${TMP}/opt.onnx" "${TMP}/after.onnx" || fail "result changed across a restart"

# Unregistering takes the op away.
run_expect 0 "${TMP}/unreg.out" "${CLI}" ops unregister com.example::Swish --server "${addr}" \
  --tenant acme
run_expect 1 "${TMP}/gone.out" "${CLI}" optimize "${TMP}/custom.onnx" -o "${TMP}/x.onnx" \
  --server "${addr}" --tenant acme
expect_grep "unknown op 'com.example::Swish'" "${TMP}/gone.out"
stop_server
echo "PASS"
