"""Higher-order gradients: the gradient pass applied to its own output, through `graphopt grad`.

A small MLP x -> MatMul(W1) -> Add(b1) -> activation -> MatMul(W2) = y, loss sum(y), for each
activation (Tanh, Sigmoid, GELU written with Erf as torch's exact GELU, and x*x), built with
onnx.helper and checked against torch.autograd (float32, 1e-4 relative to the tensor's largest
magnitude):
  (a) double backward: d/dW1 <dL/dx, v>, graphopt: grad --loss y --wrt x, then
      grad --outputs x_grad --wrt W1 (seed input x_grad_gg = v); torch: create_graph=True;
  (b) Hessian-vector product H v = d/dx <dL/dx, v>: the second pass with --wrt x
      (seed x_grad_hvp = v); torch.autograd.functional.hvp;
  (c) the gradient of the gradient norm: ReduceSumSquare(x_grad) added to the first gradient
      graph with onnx.helper, then grad --loss gn --wrt W1,x.
And in float64 against finite differences (central, step 1e-6): the first gradient of x against
a numpy forward, and H v against (g(x + h v) - g(x - h v)) / 2h of graphopt's own gradient graph.

Usage: second_order_test.py --graphopt BIN --known_failures F --work_dir DIR
"""

import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradtest  # noqa: E402

ACTIVATIONS = ["tanh", "sigmoid", "gelu", "square"]
B, D, H, O = 3, 4, 5, 2
TOLERANCE = 1e-4
FD_FIRST_TOLERANCE = 1e-6
FD_SECOND_TOLERANCE = 1e-5


def weights(dtype):
    rng = np.random.RandomState(7)
    return {
        "x": rng.standard_normal((B, D)).astype(dtype),
        "W1": (rng.standard_normal((D, H)) * 0.7).astype(dtype),
        "b1": (rng.standard_normal((H,)) * 0.3).astype(dtype),
        "W2": (rng.standard_normal((H, O)) * 0.7).astype(dtype),
        "v": rng.standard_normal((B, D)).astype(dtype),
    }


def build_model(act, dtype, path):
    """The MLP as ONNX (opset 13), W1, b1, W2 as initializers."""
    w = weights(dtype)
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    inits = [numpy_helper.from_array(w[n], n) for n in ("W1", "b1", "W2")]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["z"])]
    if act == "tanh":
        nodes.append(helper.make_node("Tanh", ["z"], ["a"]))
    elif act == "sigmoid":
        nodes.append(helper.make_node("Sigmoid", ["z"], ["a"]))
    elif act == "square":
        nodes.append(helper.make_node("Mul", ["z", "z"], ["a"]))
    else:  # GELU: 0.5 z (1 + erf(z / sqrt 2))
        for name, value in (("half", 0.5), ("one", 1.0), ("rsqrt2", 1 / math.sqrt(2))):
            inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
        nodes += [helper.make_node("Mul", ["z", "rsqrt2"], ["zs"]),
                  helper.make_node("Erf", ["zs"], ["e"]),
                  helper.make_node("Add", ["e", "one"], ["e1"]),
                  helper.make_node("Mul", ["z", "half"], ["zh"]),
                  helper.make_node("Mul", ["zh", "e1"], ["a"])]
    nodes.append(helper.make_node("MatMul", ["a", "W2"], ["y"]))
    graph = helper.make_graph(nodes, f"mlp_{act}", [helper.make_tensor_value_info("x", elem, [B, D])],
                              [helper.make_tensor_value_info("y", elem, [B, O])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def add_gradient_norm(path, out_path):
    """gn = ReduceSumSquare(x_grad) as a new output of the first gradient graph."""
    model = onnx.load(path)
    model.graph.node.append(helper.make_node("ReduceSumSquare", ["x_grad"], ["gn"], keepdims=0))
    elem = model.graph.input[0].type.tensor_type.elem_type
    model.graph.output.append(helper.make_tensor_value_info("gn", elem, []))
    onnx.save(model, out_path)


def torch_forward(act, x, w):
    z = x @ w["W1"] + w["b1"]
    if act == "tanh":
        a = torch.tanh(z)
    elif act == "sigmoid":
        a = torch.sigmoid(z)
    elif act == "square":
        a = z * z
    else:
        a = torch.nn.functional.gelu(z)
    return (a @ w["W2"]).sum()


def numpy_forward(act, x, w):
    z = x @ w["W1"] + w["b1"]
    if act == "tanh":
        a = np.tanh(z)
    elif act == "sigmoid":
        a = 1 / (1 + np.exp(-z))
    elif act == "square":
        a = z * z
    else:
        a = 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))
    return float(np.sum(a @ w["W2"]))


def torch_reference(act):
    w = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
         for k, v in weights(np.float32).items()}
    x, v = w["x"], w["v"].detach()
    loss = torch_forward(act, x, w)
    (gx,) = torch.autograd.grad(loss, x, create_graph=True)
    (double,) = torch.autograd.grad(gx, w["W1"], grad_outputs=v, retain_graph=True)
    _, hvp = torch.autograd.functional.hvp(lambda xx: torch_forward(act, xx, w), x.detach(), v)
    gn = (gx ** 2).sum()
    gn_w1, gn_x = torch.autograd.grad(gn, [w["W1"], x])
    return {"double": double, "hvp": hvp, "gn_W1": gn_w1, "gn_x": gn_x}


def check(name, got, want, tol):
    err = gradtest.relative_error(got, want.detach().numpy() if hasattr(want, "detach") else want)
    if err > tol:
        raise gradtest.GraphoptError(f"{name}: relative error {err:.2e} > {tol:g}")
    return err


def run_float32(act, g, work, results):
    model = os.path.join(work, f"{act}.onnx")
    build_model(act, np.float32, model)
    w = weights(np.float32)
    first = os.path.join(work, f"{act}_g1.onnx")
    cases = [f"second/{act}/double_backward", f"second/{act}/hvp", f"second/{act}/grad_norm"]
    try:
        # -O1: constant_fold (level 2) would fold expressions of the weights alone, such as
        # the backward graph's Transpose(W1), into new initializers, which a second
        # differentiation with respect to W1 could not see through.
        g.grad(model, first, wrt=["x"], loss=["y"], opt_level=1)
        ref = torch_reference(act)
    except gradtest.GraphoptError as e:
        for c in cases:
            results[c] = f"first gradient: {e}"
            print(f"{c}: FAIL: first gradient: {e}", flush=True)
        return
    steps = {
        cases[0]: lambda: _double(g, act, work, first, w, ref),
        cases[1]: lambda: _hvp(g, act, work, first, w, ref),
        cases[2]: lambda: _grad_norm(g, act, work, first, w, ref),
    }
    for case, step in steps.items():
        try:
            results[case] = None
            print(f"{case}: PASS: {step()}", flush=True)
        except gradtest.GraphoptError as e:
            results[case] = str(e)
            print(f"{case}: FAIL: {e}", flush=True)


def _double(g, act, work, first, w, ref):
    out = os.path.join(work, f"{act}_double.onnx")
    g.grad(first, out, wrt=["W1"], outputs=["x_grad"], suffix="_gg")
    got = g.run(out, {"x": w["x"], "x_grad_gg": w["v"]}, ["W1_gg"], tag=f"{act}_double")
    return f"relative error {check('d/dW1 <dL/dx, v>', got['W1_gg'], ref['double'], TOLERANCE):.1e}"


def _hvp(g, act, work, first, w, ref):
    out = os.path.join(work, f"{act}_hvp.onnx")
    g.grad(first, out, wrt=["x"], outputs=["x_grad"], suffix="_hvp")
    got = g.run(out, {"x": w["x"], "x_grad_hvp": w["v"]}, ["x_hvp"], tag=f"{act}_hvp")
    return f"relative error {check('H v', got['x_hvp'], ref['hvp'], TOLERANCE):.1e}"


def _grad_norm(g, act, work, first, w, ref):
    with_norm = os.path.join(work, f"{act}_gn_model.onnx")
    add_gradient_norm(first, with_norm)
    out = os.path.join(work, f"{act}_gn.onnx")
    g.grad(with_norm, out, wrt=["W1", "x"], loss=["gn"], suffix="_gn")
    got = g.run(out, {"x": w["x"]}, ["W1_gn", "x_gn"], tag=f"{act}_gn")
    e1 = check("d|g|^2/dW1", got["W1_gn"], ref["gn_W1"], TOLERANCE)
    e2 = check("d|g|^2/dx", got["x_gn"], ref["gn_x"], TOLERANCE)
    return f"relative errors {e1:.1e} (W1), {e2:.1e} (x)"


def run_float64(act, g, work, results):
    """First and second order in float64 against central finite differences."""
    model = os.path.join(work, f"{act}_f64.onnx")
    build_model(act, np.float64, model)
    w = weights(np.float64)
    first = os.path.join(work, f"{act}_f64_g1.onnx")
    hvp = os.path.join(work, f"{act}_f64_hvp.onnx")
    case1, case2 = f"fd64/{act}/first", f"fd64/{act}/hvp"
    try:
        g.grad(model, first, wrt=["x"], loss=["y"])
        gx = g.run(first, {"x": w["x"]}, ["x_grad"], tag=f"{act}_f64_g1")["x_grad"]
        step = 1e-6
        fd = np.zeros_like(w["x"])
        for i in np.ndindex(*w["x"].shape):
            xp, xm = w["x"].copy(), w["x"].copy()
            xp[i] += step
            xm[i] -= step
            fd[i] = (numpy_forward(act, xp, w) - numpy_forward(act, xm, w)) / (2 * step)
        err = check("dL/dx", gx, fd, FD_FIRST_TOLERANCE)
        results[case1] = None
        print(f"{case1}: PASS: relative error {err:.1e}", flush=True)
    except gradtest.GraphoptError as e:
        results[case1] = str(e)
        results[case2] = f"first gradient: {e}"
        print(f"{case1}: FAIL: {e}", flush=True)
        return
    try:
        g.grad(first, hvp, wrt=["x"], outputs=["x_grad"], suffix="_hvp")
        hv = g.run(hvp, {"x": w["x"], "x_grad_hvp": w["v"]}, ["x_hvp"], tag=f"{act}_f64_hvp")["x_hvp"]
        step = 1e-5
        plus = g.run(first, {"x": w["x"] + step * w["v"]}, ["x_grad"], tag=f"{act}_f64_p")["x_grad"]
        minus = g.run(first, {"x": w["x"] - step * w["v"]}, ["x_grad"], tag=f"{act}_f64_m")["x_grad"]
        err = check("H v", hv, (plus - minus) / (2 * step), FD_SECOND_TOLERANCE)
        results[case2] = None
        print(f"{case2}: PASS: relative error {err:.1e}", flush=True)
    except gradtest.GraphoptError as e:
        results[case2] = str(e)
        print(f"{case2}: FAIL: {e}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graphopt", required=True)
    parser.add_argument("--known_failures", required=True)
    parser.add_argument("--work_dir", required=True)
    args = parser.parse_args()
    g = gradtest.Graphopt(args.graphopt, args.work_dir)
    results = {}
    for act in ACTIVATIONS:
        run_float32(act, g, args.work_dir, results)
        run_float64(act, g, args.work_dir, results)
    passed = sorted(c for c, f in results.items() if f is None)
    print(f"{len(passed)} of {len(results)} second-order and finite-difference cases pass")
    problems = gradtest.check_against_known(results, args.known_failures)
    for p in problems:
        print("PROBLEM: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
