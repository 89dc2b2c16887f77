"""ONNX's training ops composed as in the ONNX operator docs: a Gradient node
(ai.onnx.preview.training) feeds Momentum, Adam and Adagrad nodes of the same domain, which
update the weight with it. Run by `graphopt run -O1` (level 1 and up expand Gradient nodes);
every output checked against numpy (the docs' reference formulas, the gradient by hand).

Loss: L = u (A X - B)^2 w with u, w vectors of ones, so L is one element and dL/dX =
2 A^T (A X - B). Checked at update counts T = 0 (Momentum's first step uses beta 1, Adam's
learning rate is not bias-corrected) and T = 3.

Usage: onnx_training_test.py --graphopt BIN --work_dir DIR
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradtest  # noqa: E402

TRAINING = "ai.onnx.preview.training"
MOMENTUM = dict(alpha=0.9, beta=0.1, norm_coefficient=0.01, mode="standard")
ADAM = dict(alpha=0.85, beta=0.95, epsilon=1e-3, norm_coefficient=0.02, norm_coefficient_post=0.01)
ADAGRAD = dict(decay_factor=0.1, epsilon=1e-5, norm_coefficient=0.001)


def build(path):
    f = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("R", f, []),
              helper.make_tensor_value_info("T", TensorProto.INT64, []),
              helper.make_tensor_value_info("X", f, [3, 2]),
              helper.make_tensor_value_info("A", f, [4, 3]),
              helper.make_tensor_value_info("B", f, [4, 2]),
              helper.make_tensor_value_info("V", f, [3, 2]),
              helper.make_tensor_value_info("H", f, [3, 2])]
    inits = [numpy_helper.from_array(np.ones((1, 4), np.float32), "u"),
             numpy_helper.from_array(np.ones((2, 1), np.float32), "w")]
    nodes = [
        helper.make_node("MatMul", ["A", "X"], ["AX"]),
        helper.make_node("Sub", ["AX", "B"], ["D"]),
        helper.make_node("Mul", ["D", "D"], ["D2"]),
        helper.make_node("MatMul", ["u", "D2"], ["uD2"]),
        helper.make_node("MatMul", ["uD2", "w"], ["L"]),
        helper.make_node("Gradient", ["X", "A", "B"], ["G"], domain=TRAINING,
                         xs=["X"], zs=["A", "B"], y="L"),
        helper.make_node("Momentum", ["R", "T", "X", "G", "V"], ["X_mom", "V_mom"],
                         domain=TRAINING, **MOMENTUM),
        helper.make_node("Adam", ["R", "T", "X", "G", "V", "H"], ["X_adam", "V_adam", "H_adam"],
                         domain=TRAINING, **ADAM),
        helper.make_node("Adagrad", ["R", "T", "X", "G", "H"], ["X_ada", "H_ada"],
                         domain=TRAINING, **ADAGRAD),
    ]
    outputs = [helper.make_tensor_value_info(n, f, [3, 2])
               for n in ("G", "X_mom", "V_mom", "X_adam", "V_adam", "H_adam", "X_ada", "H_ada")]
    outputs.insert(0, helper.make_tensor_value_info("L", f, [1, 1]))
    graph = helper.make_graph(nodes, "gradient_and_optimizers", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid(TRAINING, 1)])
    onnx.save(model, path)


def reference(r, t, x, a, b, v, h):
    """The ONNX docs' reference implementations (float64)."""
    g = 2 * a.T @ (a @ x - b)
    out = {"L": np.array([[np.sum((a @ x - b) ** 2)]]), "G": g}
    m = MOMENTUM
    g_reg = m["norm_coefficient"] * x + g
    beta = m["beta"] if t > 0 else 1.0
    out["V_mom"] = m["alpha"] * v + beta * g_reg
    out["X_mom"] = x - r * out["V_mom"]
    p = ADAM
    g_reg = p["norm_coefficient"] * x + g
    out["V_adam"] = p["alpha"] * v + (1 - p["alpha"]) * g_reg
    out["H_adam"] = p["beta"] * h + (1 - p["beta"]) * g_reg * g_reg
    r_adj = r * np.sqrt(1 - p["beta"] ** t) / (1 - p["alpha"] ** t) if t > 0 else r
    x_new = x - r_adj * out["V_adam"] / (np.sqrt(out["H_adam"]) + p["epsilon"])
    out["X_adam"] = (1 - p["norm_coefficient_post"]) * x_new
    q = ADAGRAD
    r_ada = r / (1 + t * q["decay_factor"])
    g_reg = q["norm_coefficient"] * x + g
    out["H_ada"] = h + g_reg * g_reg
    out["X_ada"] = x - r_ada * g_reg / (np.sqrt(out["H_ada"]) + q["epsilon"])
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graphopt", required=True)
    parser.add_argument("--work_dir", required=True)
    args = parser.parse_args()
    g = gradtest.Graphopt(args.graphopt, args.work_dir)
    model = os.path.join(args.work_dir, "training.onnx")
    build(model)
    rng = np.random.RandomState(3)
    feeds = {"R": np.array(0.1, np.float32),
             "X": rng.standard_normal((3, 2)).astype(np.float32),
             "A": rng.standard_normal((4, 3)).astype(np.float32),
             "B": rng.standard_normal((4, 2)).astype(np.float32),
             "V": rng.standard_normal((3, 2)).astype(np.float32) * 0.1,
             "H": rng.uniform(0.1, 1.0, (3, 2)).astype(np.float32)}
    names = ["L", "G", "X_mom", "V_mom", "X_adam", "V_adam", "H_adam", "X_ada", "H_ada"]
    failures = 0
    for t in (0, 3):
        feeds["T"] = np.array(t, np.int64)
        try:
            got = g.run(model, feeds, names, tag=f"t{t}", opt_level=1)
        except gradtest.GraphoptError as e:
            print(f"FAIL: T={t}: {e}")
            return 1
        want = reference(*(feeds[n].astype(np.float64) if n != "T" else t
                           for n in ("R", "T", "X", "A", "B", "V", "H")))
        for name in names:
            err = gradtest.relative_error(got[name], want[name])
            ok = err <= 1e-5
            failures += not ok
            print(f"T={t} {name:7s} relative error {err:.1e} {'ok' if ok else 'FAIL'}")
    print("PASS" if failures == 0 else f"FAIL: {failures} outputs differ from numpy")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
