#!/bin/bash
# `graphopt grad` end to end: in-process and through a graphopt-server (same bytes), --wrt params
# and inputs, --loss and --outputs, -O0 to -O3 (the level's passes, fuse_ops and plan_memory
# included, run on the gradient graph, whose numbers `graphopt run` then checks against numpy),
# the Optimize RPC with the gradient pass and its options in an explicit pipeline (`optimize
# --passes gradient:...`), and the errors: a value the model lacks, an op without a gradient.
set -euo pipefail

source "${TEST_SRCDIR:?}/graphopt/tests/server_test_lib.sh"

# A two-layer ReLU MLP (MatMul, Add, Relu), and a model holding Det, which has no gradient.
/usr/bin/python3 - "${TMP}" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
tmp = sys.argv[1]
rng = np.random.RandomState(5)
w = {"W1": rng.standard_normal((8, 16)).astype(np.float32) * 0.4,
     "b1": rng.standard_normal((16,)).astype(np.float32) * 0.1,
     "W2": rng.standard_normal((16, 3)).astype(np.float32) * 0.4}
nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]),
         helper.make_node("Add", ["h", "b1"], ["z"]),
         helper.make_node("Relu", ["z"], ["a"]),
         helper.make_node("MatMul", ["a", "W2"], ["y"])]
graph = helper.make_graph(
    nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
    [numpy_helper.from_array(v, k) for k, v in w.items()])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), f"{tmp}/mlp.onnx")
det = helper.make_graph(
    [helper.make_node("Det", ["m"], ["d"], name="determinant")], "det",
    [helper.make_tensor_value_info("m", TensorProto.FLOAT, [3, 3])],
    [helper.make_tensor_value_info("d", TensorProto.FLOAT, [])])
save(helper.make_model(det, opset_imports=[helper.make_opsetid("", 13)]), f"{tmp}/det.onnx")
x = rng.standard_normal((4, 8)).astype(np.float32)
seed = rng.standard_normal((4, 3)).astype(np.float32)
np.save(f"{tmp}/x.npy", x)
np.save(f"{tmp}/y_grad.npy", seed)
# The reference: gradients of sum(y * seed).
z = x @ w["W1"] + w["b1"]
dz = (seed @ w["W2"].T) * (z > 0)
ref = {"W2_grad": np.maximum(z, 0).T @ seed, "W1_grad": x.T @ dz, "b1_grad": dz.sum(0),
       "x_grad": dz @ w["W1"].T}
np.savez(f"{tmp}/ref.npz", **ref)
PY

compare() {  # compare OUTDIR: the gradients written by `graphopt run -o OUTDIR` against numpy
  /usr/bin/python3 - "$1" "${TMP}/ref.npz" <<'PY' || fail "gradients of $1 differ from numpy"
import sys
import numpy as np
ref = np.load(sys.argv[2])
for name in ref.files:
    got, want = np.load(f"{sys.argv[1]}/{name}.npy"), ref[name]
    err = np.max(np.abs(got - want)) / np.max(np.abs(want))
    print(f"{name}: relative error {err:.1e}")
    if not err <= 1e-5:
        sys.exit(1)
PY
}

# --- In-process, every level: the table, the gradient outputs, the numbers. ---------------
for level in 0 1 2 3; do
  ext=onnx; [[ ${level} -eq 3 ]] && ext=pb  # a memory plan travels in graphopt's own format
  run_expect 0 "${TMP}/O${level}.out" "${TMP}/O${level}.err" \
    "${CLI}" grad "${TMP}/mlp.onnx" --outputs y --wrt params,inputs -O "${level}" \
    -o "${TMP}/grad_O${level}.${ext}"
  expect_grep "^gradient +- +- +yes" "${TMP}/O${level}.out" "-O${level}: no gradient pass row"
  expect_grep "^gradients: W1_grad, b1_grad, W2_grad, x_grad$" "${TMP}/O${level}.out"
  expect_grep "^differentiating .*mlp.onnx \(4 nodes\): outputs y with respect to 4 values" \
    "${TMP}/O${level}.err" "-O${level}: no progress line"
  run_expect 0 "${TMP}/run${level}.out" "${TMP}/run${level}.err" \
    "${CLI}" run "${TMP}/grad_O${level}.${ext}" --input "x=${TMP}/x.npy" \
    --input "y_grad=${TMP}/y_grad.npy" -o "${TMP}/run${level}"
  compare "${TMP}/run${level}"
done
expect_grep "^fuse_ops " "${TMP}/O3.out" "-O3 did not run fuse_ops"
expect_grep "^plan_memory " "${TMP}/O3.out" "-O3 did not run plan_memory"
expect_grep "^constant_fold " "${TMP}/O2.out" "-O2 did not run constant_fold"

# --loss seeds with ones; --wrt inputs is x alone; --stop-gradient cuts the path through W2.
run_expect 0 "${TMP}/loss.out" "${TMP}/loss.err" \
  "${CLI}" grad "${TMP}/mlp.onnx" --loss y --wrt inputs -o "${TMP}/loss.onnx"
expect_grep "^gradients: x_grad$" "${TMP}/loss.out"
run_expect 0 "${TMP}/stop.out" "${TMP}/stop.err" \
  "${CLI}" grad "${TMP}/mlp.onnx" --loss y --wrt W1 --stop-gradient a -o "${TMP}/stop.onnx"
expect_grep "zero gradient \(the loss does not depend on it\): 'W1'" "${TMP}/stop.out"

# --- Errors name what is wrong. ---------------------------------------------------------
run_expect 1 "${TMP}/e1.out" "${TMP}/e1.err" \
  "${CLI}" grad "${TMP}/mlp.onnx" --loss y --wrt W1,nope -o "${TMP}/e.onnx"
expect_grep "^error: INVALID_ARGUMENT: --wrt: the model has no value 'nope'$" "${TMP}/e1.err"
run_expect 1 "${TMP}/e2.out" "${TMP}/e2.err" \
  "${CLI}" grad "${TMP}/mlp.onnx" --loss lost --wrt W1 -o "${TMP}/e.onnx"
expect_grep "--loss: the model has no value 'lost'" "${TMP}/e2.err"
run_expect 1 "${TMP}/e3.out" "${TMP}/e3.err" \
  "${CLI}" grad "${TMP}/det.onnx" --loss d --wrt m -o "${TMP}/e.onnx"
expect_grep "node 'determinant' \(Det\).*no gradient definition for op 'Det'" "${TMP}/e3.err"
run_expect 2 "${TMP}/e4.out" "${TMP}/e4.err" "${CLI}" grad "${TMP}/mlp.onnx" -o "${TMP}/e.onnx"
expect_grep "wrt" "${TMP}/e4.err"
[[ -e "${TMP}/e.onnx" ]] && fail "a failed grad wrote its output"

# --- Through a server: the same bytes as in-process. ------------------------------------
start_server --threads 2
for level in 2 3; do
  ext=onnx; [[ ${level} -eq 3 ]] && ext=pb
  run_expect 0 "${TMP}/remote${level}.out" "${TMP}/remote${level}.err" \
    "${CLI}" grad "${TMP}/mlp.onnx" --outputs y --wrt params,inputs -O "${level}" \
    -o "${TMP}/remote_O${level}.${ext}" --server "${ADDR}"
  cmp -s "${TMP}/remote_O${level}.${ext}" "${TMP}/grad_O${level}.${ext}" ||
    fail "-O${level}: the server's gradient graph differs from the in-process one"
done
run_expect 1 "${TMP}/re.out" "${TMP}/re.err" \
  "${CLI}" grad "${TMP}/det.onnx" --loss d --wrt m -o "${TMP}/e.onnx" --server "${ADDR}"
expect_grep "no gradient definition for op 'Det'" "${TMP}/re.err"

# The Optimize RPC with the gradient pass and its options in the pipeline.
run_expect 0 "${TMP}/rpc.out" "${TMP}/rpc.err" \
  "${CLI}" optimize "${TMP}/mlp.onnx" --passes 'gradient:wrt=W1;outputs=y,dead_code_elimination' \
  -o "${TMP}/rpc.onnx" --server "${ADDR}"
expect_grep "^gradient +- +- +yes" "${TMP}/rpc.out"
run_expect 0 "${TMP}/rpcrun.out" "${TMP}/rpcrun.err" \
  "${CLI}" run "${TMP}/rpc.onnx" --input "x=${TMP}/x.npy" --input "y_grad=${TMP}/y_grad.npy" \
  -o "${TMP}/rpcrun"
cmp -s "${TMP}/rpcrun/W1_grad.npy" "${TMP}/run1/W1_grad.npy" ||
  /usr/bin/python3 -c "
import numpy as np, sys
a, b = np.load('${TMP}/rpcrun/W1_grad.npy'), np.load('${TMP}/run1/W1_grad.npy')
sys.exit(0 if np.allclose(a, b, rtol=1e-6, atol=0) else 1)" ||
  fail "the Optimize RPC's W1_grad differs from graphopt grad's"

stop_server
echo "PASS"
