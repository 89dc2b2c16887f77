#!/bin/bash
# End-to-end test of the real binaries: starts graphopt-server on a free loopback port,
# drives it with the graphopt CLI, compares remote and embedded results byte for byte, checks
# error reporting and exit codes, then stops the server with SIGTERM (it must exit 0) and
# checks that the CLI reports the now unreachable server.
set -euo pipefail

source "${TEST_SRCDIR:?}/graphopt/tests/server_test_lib.sh"
readonly MLP="${RUNFILES}/examples/mlp.pbtxt"
readonly BAD="${RUNFILES}/examples/bad_cycle.pbtxt"
readonly ONNX_MLP="${RUNFILES}/models/corpus/mlp/model.onnx"
readonly RESNET18="${RUNFILES}/models/corpus/resnet18/model.onnx"
# An ONNX model whose op (NoSuchOp, default domain) no descriptor describes.
readonly UNKNOWN_OP_MODEL="${TMP}/unknown_op.onnx"
/usr/bin/python3 - "${UNKNOWN_OP_MODEL}" <<'PY'
import sys
from onnx import TensorProto, helper, save
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
node = helper.make_node("NoSuchOp", ["x"], ["y"], name="mystery")
save(helper.make_model(helper.make_graph([node], "g", [x], [y])), sys.argv[1])
PY
require_binaries
start_server --threads 4
expect_grep "listening on ${ADDR} \(INSECURE.*threads=4" "${SERVER_LOG}" "no start-up log line"

# --- optimize: remote and embedded give identical bytes, binary and text. ----------------
run_expect 0 "${TMP}/remote.out" "${TMP}/remote.err" \
  "${CLI}" optimize "${MLP}" -o "${TMP}/remote.pb" --server "${ADDR}"
run_expect 0 "${TMP}/local.out" "${TMP}/local.err" \
  "${CLI}" optimize "${MLP}" -o "${TMP}/local.pb"
cmp -s "${TMP}/remote.pb" "${TMP}/local.pb" || fail "remote and embedded binary outputs differ"
[[ -s "${TMP}/local.pb" ]] || fail "empty output graph"
expect_grep "^dead_code_elimination " "${TMP}/remote.out" "no report row for DCE"
expect_grep "^total \(" "${TMP}/remote.out" "no total row"
expect_grep "wrote .*remote.pb \([0-9]+ nodes\)" "${TMP}/remote.out"
# The symbolic batch leaves every figure of the cost estimate unknown.
expect_grep "^cost: \? FLOP, \? B moved \(5 nodes; flops unknown for 5, bytes for 5\)$" \
  "${TMP}/remote.out"

# Bound, the matrix products (fc1 with its bias, a Gemm at -O2) get their flops; remote and embedded estimate alike.
for where in remote local; do
  server=(); [[ "${where}" == remote ]] && server=(--server "${ADDR}")
  run_expect 0 "${TMP}/cost_${where}.out" "${TMP}/cost_${where}.err" \
    "${CLI}" optimize "${MLP}" -o "${TMP}/cost_${where}.pb" --bind batch=8 --cost-top 2 \
    "${server[@]}"
  sed -n '/^cost: /,/^wrote /{/^wrote /!p}' "${TMP}/cost_${where}.out" >"${TMP}/cost_${where}.txt"
done
expect_grep "^cost: 896 FLOP, 2.2 KiB moved \(5 nodes; flops unknown for 3, bytes for 0\)$" \
  "${TMP}/cost_remote.txt"
expect_grep "^fc1 +Gemm +512 FLOP +544 B$" "${TMP}/cost_remote.txt"
cmp -s "${TMP}/cost_remote.txt" "${TMP}/cost_local.txt" || fail "remote and embedded costs differ"

run_expect 0 "${TMP}/q.out" "${TMP}/q.err" \
  "${CLI}" optimize "${MLP}" -o "${TMP}/remote.pbtxt" --server "${ADDR}" --quiet
[[ ! -s "${TMP}/q.out" ]] || fail "--quiet still printed: $(cat "${TMP}/q.out")"
run_expect 0 "${TMP}/q.out" "${TMP}/q.err" \
  "${CLI}" optimize "${MLP}" -o "${TMP}/local.pbtxt" --quiet
cmp -s "${TMP}/remote.pbtxt" "${TMP}/local.pbtxt" || fail "text outputs differ"
expect_grep 'op_type: "Softmax"' "${TMP}/local.pbtxt"
if grep -q '"dead_relu"' "${TMP}/local.pbtxt"; then fail "dead branch survived"; fi

# The binary output reads back (and -O 0 leaves it alone).
run_expect 0 "${TMP}/again.out" "${TMP}/again.err" \
  "${CLI}" optimize "${TMP}/local.pb" -o "${TMP}/again.pb" -O 0 --quiet
cmp -s "${TMP}/local.pb" "${TMP}/again.pb" || fail "-O 0 changed an optimized graph"

# Explicit passes, a dim binding, per-pass verification and a JSON report.
run_expect 0 "${TMP}/p.out" "${TMP}/p.err" \
  "${CLI}" optimize "${MLP}" -o "${TMP}/p.pbtxt" --server "${ADDR}" \
  --passes dead_code_elimination --bind batch=8 --verify-each-pass \
  --report-json "${TMP}/report.json"
expect_grep '"name": "dead_code_elimination"' "${TMP}/report.json"
expect_grep 'size: 8' "${TMP}/p.pbtxt" "binding batch=8 not applied"
if grep -q 'symbol: "batch"' "${TMP}/p.pbtxt"; then fail "symbol batch left after binding"; fi

# --- passes and ops. ---------------------------------------------------------------------
run_expect 0 "${TMP}/passes_remote.out" "${TMP}/e" "${CLI}" passes --server "${ADDR}"
run_expect 0 "${TMP}/passes_local.out" "${TMP}/e" "${CLI}" passes
expect_grep "^common_subexpression_elimination " "${TMP}/passes_remote.out"
cmp -s "${TMP}/passes_remote.out" "${TMP}/passes_local.out" || fail "pass lists differ"

run_expect 0 "${TMP}/ops.out" "${TMP}/e" "${CLI}" ops --server "${ADDR}"
expect_grep "^\(default\) +MatMul " "${TMP}/ops.out"
expect_grep "^\(default\) +Softmax .*axis:int" "${TMP}/ops.out"
run_expect 0 "${TMP}/relu.out" "${TMP}/e" "${CLI}" ops --server "${ADDR}" Relu
expect_grep '^name: "Relu"' "${TMP}/relu.out"
run_expect 1 "${TMP}/o" "${TMP}/noop.err" "${CLI}" ops --server "${ADDR}" NoSuchOp
expect_grep "^error: NOT_FOUND: .*NoSuchOp" "${TMP}/noop.err"

# --- errors: exit 1 with the code and the node's name; the server keeps serving. ----------
run_expect 1 "${TMP}/o" "${TMP}/bad_remote.err" \
  "${CLI}" optimize "${BAD}" -o "${TMP}/bad.pb" --server "${ADDR}"
expect_grep "^error: INVALID_ARGUMENT: .*'cycle_[ab]'" "${TMP}/bad_remote.err"
run_expect 1 "${TMP}/o" "${TMP}/bad_local.err" "${CLI}" optimize "${BAD}" -o "${TMP}/bad.pb"
cmp -s "${TMP}/bad_remote.err" "${TMP}/bad_local.err" || fail "remote/embedded errors differ"
[[ ! -e "${TMP}/bad.pb" ]] || fail "an output was written for a bad graph"

run_expect 1 "${TMP}/o" "${TMP}/np.err" \
  "${CLI}" optimize "${MLP}" -o "${TMP}/x.pb" --server "${ADDR}" --passes no_such_pass
expect_grep "^error: NOT_FOUND: .*no_such_pass" "${TMP}/np.err"

run_expect 1 "${TMP}/o" "${TMP}/missing.err" \
  "${CLI}" optimize "${TMP}/does_not_exist.pb" -o "${TMP}/x.pb"
expect_grep "^error: NOT_FOUND: .*does_not_exist.pb" "${TMP}/missing.err"

# Usage errors exit 2.
run_expect 2 "${TMP}/o" "${TMP}/e" "${CLI}" optimize "${MLP}" -o "${TMP}/x.pb" --passes a -O 1
run_expect 2 "${TMP}/o" "${TMP}/e" "${CLI}" optimize "${MLP}"
run_expect 2 "${TMP}/o" "${TMP}/e" "${CLI}" optimize "${MLP}" -o "${TMP}/x.pb" --bind batch
run_expect 2 "${TMP}/o" "${TMP}/e" "${CLI}" optimize "${MLP}" -o "${TMP}/x.pb" --passes ','
run_expect 2 "${TMP}/o" "${TMP}/e" "${CLI}" frobnicate
run_expect 2 "${TMP}/o" "${TMP}/e" "${CLI}"

run_expect 0 "${TMP}/v.out" "${TMP}/e" "${CLI}" --version
expect_grep "^graphopt [0-9]+\.[0-9]+\.[0-9]+" "${TMP}/v.out"
run_expect 0 "${TMP}/v2.out" "${TMP}/e" "${CLI}" version
cmp -s "${TMP}/v.out" "${TMP}/v2.out" || fail "version and --version differ"
run_expect 0 "${TMP}/help.out" "${TMP}/e" "${CLI}" optimize --help
expect_grep "name\[:key=value" "${TMP}/help.out" "--passes syntax not documented"

# --- ONNX models: in and out by file extension, inspect, weights sent ahead as blobs. ------
run_expect 0 "${TMP}/inspect.out" "${TMP}/e" "${CLI}" inspect "${RESNET18}"
expect_grep "^model: .*resnet18/model.onnx \(ONNX\)" "${TMP}/inspect.out"
expect_grep "producer: pytorch" "${TMP}/inspect.out"
expect_grep "^parameters: 11,[0-9]{3},[0-9]{3} \(4[0-9]\.[0-9] MiB\)" "${TMP}/inspect.out"
expect_grep "^  Conv +20$" "${TMP}/inspect.out" "resnet18 should have 20 Conv nodes"

run_expect 0 "${TMP}/onnx_local.out" "${TMP}/e" \
  "${CLI}" optimize "${ONNX_MLP}" -o "${TMP}/mlp_local.onnx" -O1
run_expect 0 "${TMP}/onnx_remote.out" "${TMP}/e" \
  "${CLI}" optimize "${ONNX_MLP}" -o "${TMP}/mlp_remote.onnx" -O1 --server "${ADDR}" \
  --upload-weights never
cmp -s "${TMP}/mlp_local.onnx" "${TMP}/mlp_remote.onnx" || fail "remote and embedded ONNX differ"
expect_grep "wrote .*mlp_remote.onnx \([0-9]+ nodes\)" "${TMP}/onnx_remote.out"
# The same request with the weights sent ahead gives the same bytes; the second time nothing
# is sent, the server already holds every blob.
run_expect 0 "${TMP}/blob1.out" "${TMP}/blob1.err" \
  "${CLI}" optimize "${ONNX_MLP}" -o "${TMP}/mlp_blob.onnx" -O1 --server "${ADDR}" \
  --upload-weights always
cmp -s "${TMP}/mlp_local.onnx" "${TMP}/mlp_blob.onnx" || fail "blob upload changed the result"
expect_grep "^weights: [1-9][0-9]* blobs .*: [1-9][0-9]* sent .*, 0 already on the server" \
  "${TMP}/blob1.out"
run_expect 0 "${TMP}/blob2.out" "${TMP}/e" \
  "${CLI}" optimize "${ONNX_MLP}" -o "${TMP}/mlp_blob2.onnx" -O1 --server "${ADDR}" \
  --upload-weights always
expect_grep "^weights: [1-9][0-9]* blobs .*: 0 sent \(0\.0 MiB\)" "${TMP}/blob2.out"
cmp -s "${TMP}/mlp_local.onnx" "${TMP}/mlp_blob2.onnx" || fail "second blob run differs"
# A 45 MB model goes with its weights ahead by default (auto), and comes back whole.
run_expect 0 "${TMP}/r18.out" "${TMP}/e" \
  "${CLI}" optimize "${RESNET18}" -o "${TMP}/r18_remote.onnx" -O1 --server "${ADDR}"
expect_grep "^weights: " "${TMP}/r18.out"
run_expect 0 "${TMP}/o" "${TMP}/e" "${CLI}" optimize "${RESNET18}" -o "${TMP}/r18_local.onnx" -O1
cmp -s "${TMP}/r18_local.onnx" "${TMP}/r18_remote.onnx" || fail "resnet18 remote/embedded differ"

# ONNX in, graphopt text out, and back to ONNX: the same model.
run_expect 0 "${TMP}/o" "${TMP}/e" "${CLI}" optimize "${ONNX_MLP}" -o "${TMP}/mlp.pbtxt" -O0
expect_grep 'producer_name: "pytorch"' "${TMP}/mlp.pbtxt"
run_expect 0 "${TMP}/o" "${TMP}/e" "${CLI}" optimize "${TMP}/mlp.pbtxt" -o "${TMP}/mlp_back.onnx" -O1
cmp -s "${TMP}/mlp_local.onnx" "${TMP}/mlp_back.onnx" || fail "ONNX -> text -> ONNX differs"

# An op graphopt does not know: INVALID_ARGUMENT naming the node's op; a file that is not
# ONNX: INVALID_ARGUMENT; a blob the server lacks: FAILED_PRECONDITION naming the tensor.
run_expect 1 "${TMP}/o" "${TMP}/unknown.err" \
  "${CLI}" optimize "${UNKNOWN_OP_MODEL}" -o "${TMP}/x.onnx" --server "${ADDR}"
expect_grep "^error: INVALID_ARGUMENT: .*mystery.*NoSuchOp" "${TMP}/unknown.err"
printf 'not a model' >"${TMP}/garbage.onnx"
run_expect 1 "${TMP}/o" "${TMP}/garbage.err" \
  "${CLI}" optimize "${TMP}/garbage.onnx" -o "${TMP}/x.onnx" --server "${ADDR}"
expect_grep "^error: INVALID_ARGUMENT: onnx_model: .*do not parse as onnx.ModelProto" \
  "${TMP}/garbage.err"
sed 's/raw_data: ".*"/blob: "sha256:0000000000000000000000000000000000000000000000000000000000000000"/' \
  "${TMP}/mlp.pbtxt" >"${TMP}/missing_blob.pbtxt"
run_expect 1 "${TMP}/o" "${TMP}/missing_blob.err" \
  "${CLI}" optimize "${TMP}/missing_blob.pbtxt" -o "${TMP}/x.pbtxt" --server "${ADDR}" \
  --upload-weights never
expect_grep "^error: FAILED_PRECONDITION: initializer '.*' refers to blob sha256:0+, which tenant 'default' does not hold" \
  "${TMP}/missing_blob.err"

# The server is still healthy after all of the above.
run_expect 0 "${TMP}/o" "${TMP}/e" \
  "${CLI}" optimize "${MLP}" -o "${TMP}/final.pb" --server "${ADDR}" --quiet
cmp -s "${TMP}/final.pb" "${TMP}/local.pb" || fail "server answers changed over time"

# --- SIGTERM: the server exits 0 (within 15 s). -------------------------------------------
kill -TERM "${server_pid}"
for _ in $(seq 1 150); do
  kill -0 "${server_pid}" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "${server_pid}" 2>/dev/null; then fail "server still running 15 s after SIGTERM"; fi
rc=0
wait "${server_pid}" || rc=$?
server_pid=""
[[ "${rc}" -eq 0 ]] || fail "server exited with ${rc} after SIGTERM"
expect_grep "received SIGTERM" "${SERVER_LOG}"
expect_grep "stopped" "${SERVER_LOG}"

# With the server gone its address is unreachable: exit 1 and an error naming the server.
run_expect 1 "${TMP}/o" "${TMP}/unreachable.err" \
  "${CLI}" optimize "${MLP}" -o "${TMP}/x.pb" --server "${ADDR}" --timeout 10
expect_grep "^error: (UNAVAILABLE|DEADLINE_EXCEEDED): server ${ADDR}: " "${TMP}/unreachable.err"

# Without --threads, the optimize threads are the CPUs the process may use: one under taskset.
rm -f "${PORT_FILE}"
taskset -c 0 "${SERVER}" --insecure --listen 127.0.0.1:0 --port_file "${PORT_FILE}" \
  >"${SERVER_LOG}" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  [[ -s "${PORT_FILE}" ]] && break
  kill -0 "${server_pid}" 2>/dev/null || fail "the pinned server exited during start-up"
  sleep 0.1
done
expect_grep "listening on .*threads=1," "${SERVER_LOG}" \
  "a server pinned to one CPU runs more than one optimize thread"
stop_server

echo "PASS"
