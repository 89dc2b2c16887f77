"""Each ONNX activation and elementwise op that fuse_ops may put in a group, timed alone and after
a 3x3 convolution (where it is the group's epilogue), on graphopt's runtime at -O3 and on ONNX
Runtime with all optimizations, side by side in one run (bench/bursts.py: the two processes'
bursts interleaved, medians of the bursts' medians). Ratios are graphopt / ORT: below 1 means
graphopt is faster.

    bench/fusable_ops.sh [--threads 1] [--runs 40] [--burst 10] [--trials 1] [--ops a,b]
                         [--shape 1,64,56,56] [--markdown]

Ops that need positive operands (Log, Sqrt, Pow 0.5, Reciprocal) read |x| + 1, the extra Abs
and Add counted in both contenders.
"""
import argparse
import os
import statistics
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import bursts


def positive(x, out, nodes):
    """|x| + 1 into `out`, then the op's nodes."""
    return [helper.make_node("Abs", [x], [out + "_abs"]),
            helper.make_node("Add", [out + "_abs", "one"], [out])] + nodes


def op_nodes(op, x, y):
    """The op's nodes reading x and writing y (a name, a list of nodes)."""
    n = helper.make_node
    simple = {"Relu", "Sigmoid", "Tanh", "HardSwish", "Softplus", "Softsign", "Exp", "Abs", "Neg",
              "Erf", "Floor", "Ceil", "Sign"}
    if op in simple:
        return [n(op, [x], [y])]
    table = {
        "LeakyRelu": lambda: [n("LeakyRelu", [x], [y], alpha=0.1)],
        "HardSigmoid": lambda: [n("HardSigmoid", [x], [y], alpha=0.2, beta=0.5)],
        "Elu": lambda: [n("Elu", [x], [y], alpha=1.0)],
        "Selu": lambda: [n("Selu", [x], [y])],
        "Celu": lambda: [n("Celu", [x], [y], alpha=1.0)],
        "ThresholdedRelu": lambda: [n("ThresholdedRelu", [x], [y], alpha=0.1)],
        "Clip": lambda: [n("Clip", [x, "zero", "six"], [y])],
        "SiLU": lambda: [n("Sigmoid", [x], [y + "_s"]), n("Mul", [x, y + "_s"], [y])],
        "Mish": lambda: [n("Softplus", [x], [y + "_p"]), n("Tanh", [y + "_p"], [y + "_t"]),
                         n("Mul", [x, y + "_t"], [y])],
        "Gelu": lambda: [n("Div", [x, "sqrt2"], [y + "_d"]), n("Erf", [y + "_d"], [y + "_e"]),
                         n("Add", [y + "_e", "one"], [y + "_a"]), n("Mul", [x, y + "_a"], [y + "_m"]),
                         n("Mul", [y + "_m", "half"], [y])],
        "Log": lambda: positive(x, y + "_in", [n("Log", [y + "_in"], [y])]),
        "Sqrt": lambda: positive(x, y + "_in", [n("Sqrt", [y + "_in"], [y])]),
        "Reciprocal": lambda: positive(x, y + "_in", [n("Reciprocal", [y + "_in"], [y])]),
        "Pow0.5": lambda: positive(x, y + "_in", [n("Pow", [y + "_in", "half"], [y])]),
        "Pow2": lambda: [n("Pow", [x, "two"], [y])],
        "Pow3": lambda: [n("Pow", [x, "three"], [y])],
        "PRelu": lambda: [n("PRelu", [x, "per_channel"], [y])],
        "AddChannel": lambda: [n("Add", [x, "per_channel"], [y])],
        "SubChannel": lambda: [n("Sub", [x, "per_channel"], [y])],
        "MulChannel": lambda: [n("Mul", [x, "per_channel"], [y])],
        "DivChannel": lambda: [n("Div", [x, "per_channel"], [y])],
        "DivScalar": lambda: [n("Div", [x, "three"], [y])],
        "Max": lambda: [n("Max", [x, "half"], [y])],
        "Where": lambda: [n("Greater", [x, "zero"], [y + "_c"]),
                          n("Mul", [x, "half"], [y + "_h"]),
                          n("Where", [y + "_c", x, y + "_h"], [y])],
    }
    return table[op]()


OPS = ["Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "SiLU", "HardSigmoid", "HardSwish", "Elu",
       "Selu", "Celu", "Softplus", "Softsign", "Mish", "Gelu", "ThresholdedRelu", "PRelu", "Exp",
       "Log", "Sqrt", "Reciprocal", "Abs", "Neg", "Erf", "Pow2", "Pow3", "Pow0.5", "AddChannel",
       "SubChannel", "MulChannel", "DivChannel", "DivScalar", "Max", "Where"]


def make_model(directory, op, shape, conv, seed):
    """DIR/model.onnx (x -> [Conv 3x3 ->] op -> y) and DIR/test_data_set_0/input_0.pb."""
    rng = np.random.default_rng(seed)
    c = shape[1]
    consts = {
        "zero": np.array(0, np.float32), "one": np.array(1, np.float32),
        "half": np.array(0.5, np.float32), "two": np.array(2, np.float32),
        "three": np.array(3, np.float32), "six": np.array(6, np.float32),
        "sqrt2": np.array(np.sqrt(2), np.float32),
        "per_channel": rng.uniform(0.5, 1.5, (c, 1, 1)).astype(np.float32),
    }
    nodes = []
    x = "x"
    if conv:
        consts["w"] = (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
        consts["b"] = (0.1 * rng.standard_normal(c)).astype(np.float32)
        nodes.append(helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]))
        x = "c"
    nodes += op_nodes(op, x, "y")
    used = {i for nd in nodes for i in nd.input}
    inits = [numpy_helper.from_array(v, k) for k, v in sorted(consts.items()) if k in used]
    graph = helper.make_graph(
        nodes, f"{op}_{'conv' if conv else 'alone'}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    os.makedirs(os.path.join(directory, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(directory, "model.onnx"))
    x = rng.standard_normal(shape).astype(np.float32)
    with open(os.path.join(directory, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--bench", default=".bazel/bin/bench/run_model_bench")
    p.add_argument("--python", default=".venv/bin/python")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--shape", default="1,64,56,56")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--burst", type=int, default=10)
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--gap_ms", type=float, default=60)
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = p.parse_args()
    shape = [int(d) for d in args.shape.split(",")]
    ort_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_run.py")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, op in enumerate(args.ops.split(",")):
            row = {"op": op}
            for conv in (False, True):
                d = os.path.join(tmp, f"{op}_{int(conv)}")
                make_model(d, op, shape, conv, seed=i)
                common = ["--threads", str(args.threads), "--runs", str(args.runs)]
                contenders = [("go", [args.bench, d, "--opt_level", "3"] + common),
                              ("ort", [args.python, ort_script, d, "--opt", "all"] + common)]
                ratios, go, ort = [], [], []
                for trial in range(args.trials):
                    r = bursts.interleaved_trial(
                        contenders, args.runs, args.burst, args.gap_ms / 1000,
                        lambda t: [0, 1] if (trial + t) % 2 == 0 else [1, 0])
                    ratios += [g / o for g, o in zip(r["go"][2], r["ort"][2])]
                    go.append(r["go"][0])
                    ort.append(r["ort"][0])
                key = "conv" if conv else "alone"
                row[key] = (statistics.median(go), statistics.median(ort),
                            statistics.median(ratios))
            rows.append(row)
            print(f"  measured {op}", file=sys.stderr, flush=True)
    print(f"\nshape {args.shape}, {args.threads} thread(s), graphopt -O3 vs ONNX Runtime (all "
          f"optimizations); {args.trials} trial(s) x {args.runs} runs in bursts of {args.burst}; "
          "ratio = median over bursts of graphopt / ORT\n")
    if args.markdown:
        print("| op | alone: graphopt ms | ORT ms | ratio | after Conv 3x3: graphopt ms | ORT ms "
              "| ratio |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            a, c = r["alone"], r["conv"]
            print(f"| {r['op']} | {a[0]:.3f} | {a[1]:.3f} | {a[2]:.2f}x | {c[0]:.3f} | {c[1]:.3f} "
                  f"| {c[2]:.2f}x |")
    else:
        print(f"{'op':<16} {'alone go':>9} {'ORT':>8} {'ratio':>6}   {'conv go':>8} {'ORT':>8} "
              f"{'ratio':>6}")
        for r in rows:
            a, c = r["alone"], r["conv"]
            print(f"{r['op']:<16} {a[0]:>9.3f} {a[1]:>8.3f} {a[2]:>5.2f}x   {c[0]:>8.3f} "
                  f"{c[1]:>8.3f} {c[2]:>5.2f}x")
    worst = max(max(r["alone"][2], r["conv"][2]) for r in rows)
    print(f"\nworst ratio {worst:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
