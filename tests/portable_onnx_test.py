"""graphopt's portable ONNX output runs in ONNX Runtime and agrees with graphopt.

For every corpus model (ONNX backend-test layout: model.onnx, test_data_set_0/input_*.pb):

  (a) `graphopt optimize -O3` writes the portable form (the default): it passes
      onnx.checker.check_model(full_check=True), every graphopt-domain node calls a model-local
      function, and ONNX Runtime's outputs on it are within 1e-4 of graphopt's outputs on the
      native form (`--native-ops`, run by `graphopt run`), relative to each output's largest
      magnitude;
  (b) graphopt reads its own portable file back (functions inlined) and its outputs on it are
      within 1e-4 of its outputs on the native form.

For every model named by --grad (a convolutional one): `graphopt grad --wrt params -O2` written
portable runs in ONNX Runtime within 1e-4 of `graphopt run` on the same gradient graph written
in graphopt's own format (its backward ops native), relative to each gradient's largest magnitude.

Prints one row per check and exits 1 when any failed.

    python portable_onnx_test.py --graphopt PATH --work_dir DIR [--grad NAME ...] MODEL_DIR...
"""

import argparse
import glob
import os
import subprocess
import sys
from typing import Dict, List, Sequence, Tuple

import numpy as np
import onnx
import onnx.checker
import onnx.numpy_helper
import onnxruntime as ort

# Relative to each output's largest magnitude (graphopt's fused kernels and ONNX Runtime's
# kernels sum in different orders).
TOLERANCE = 1e-4
TIMEOUT_S = 600


def load_tensors(directory: str, prefix: str) -> List[np.ndarray]:
    arrays = []
    while True:
        path = os.path.join(directory, f"{prefix}_{len(arrays)}.pb")
        if not os.path.exists(path):
            return arrays
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        arrays.append(onnx.numpy_helper.to_array(tensor))


def graph_inputs(model: onnx.ModelProto) -> List[onnx.ValueInfoProto]:
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def run(command: Sequence[str]) -> None:
    proc = subprocess.run(list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=TIMEOUT_S, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` exited {proc.returncode}:\n"
                           f"{proc.stdout.decode(errors='replace').strip()}")


def npy_name(value: str) -> str:
    """client/run_model.cc's NpyFileName."""
    out = "".join(c if c.isalnum() and c.isascii() or c in "-_." else "_" for c in value)
    if not out or out[0] == ".":
        out = "_" + out
    return out + ".npy"


def run_graphopt(graphopt: str, model_path: str, inputs: Dict[str, np.ndarray],
                 outputs: Sequence[str], work_dir: str) -> List[np.ndarray]:
    """`graphopt run` with .npy inputs; returns the named outputs."""
    os.makedirs(work_dir, exist_ok=True)
    command = [graphopt, "run", model_path, "-o", os.path.join(work_dir, "out")]
    for i, (name, value) in enumerate(inputs.items()):
        path = os.path.join(work_dir, f"input_{i}.npy")
        np.save(path, value)
        command += ["--input", f"{name}={path}"]
    run(command)
    return [np.load(os.path.join(work_dir, "out", npy_name(o))) for o in outputs]


def run_ort(model_path: str, inputs: Dict[str, np.ndarray]) -> List[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def compare(label: str, actual: Sequence[np.ndarray], expected: Sequence[np.ndarray],
            names: Sequence[str], errors: List[str]) -> float:
    """Worst error relative to each expected output's largest magnitude."""
    if len(actual) != len(expected):
        errors.append(f"{label}: {len(actual)} outputs, expected {len(expected)}")
        return float("inf")
    worst = 0.0
    for name, a, e in zip(names, actual, expected):
        if a.shape != e.shape:
            errors.append(f"{label}: output '{name}' has shape {a.shape}, expected {e.shape}")
            worst = float("inf")
            continue
        scale = float(np.abs(e.astype(np.float64)).max(initial=0.0))
        diff = float(np.abs(a.astype(np.float64) - e.astype(np.float64)).max(initial=0.0))
        rel = diff / scale if scale > 0 else diff
        worst = max(worst, rel)
        if not rel <= TOLERANCE:  # also catches NaN
            errors.append(f"{label}: output '{name}' differs by {diff:.3g}, {rel:.3g} of its "
                          f"largest magnitude {scale:.3g} (tolerance {TOLERANCE:g})")
    return worst


def check_portable(model: onnx.ModelProto, errors: List[str]) -> int:
    """Checker, and every graphopt node calls a function; returns the function count."""
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # ValidationError, InferenceError, ...
        errors.append(f"portable output is not valid ONNX: {type(e).__name__}: {e}")
    functions = {(f.domain, f.name) for f in model.functions}
    for node in model.graph.node:
        if node.domain == "graphopt" and (node.domain, node.op_type) not in functions:
            errors.append(f"node '{node.name}' calls graphopt::{node.op_type}, no function")
    return len(model.functions)


def check_optimized(graphopt: str, model_dir: str, work_dir: str) -> Tuple[str, List[str]]:
    name = os.path.basename(os.path.normpath(model_dir))
    errors: List[str] = []
    model_path = os.path.join(model_dir, "model.onnx")
    original = onnx.load(model_path)
    values = load_tensors(os.path.join(model_dir, "test_data_set_0"), "input")
    inputs = {i.name: v for i, v in zip(graph_inputs(original), values)}
    outputs = [o.name for o in original.graph.output]
    portable = os.path.join(work_dir, f"{name}.O3.onnx")
    native = os.path.join(work_dir, f"{name}.O3.native.onnx")
    try:
        run([graphopt, "optimize", model_path, "-o", portable, "-O3", "-q"])
        run([graphopt, "optimize", model_path, "-o", native, "-O3", "-q", "--native-ops"])
        native_model = onnx.load(native)
        if not any(n.domain == "graphopt" for n in native_model.graph.node):
            errors.append("--native-ops wrote no graphopt node: nothing portable to check")
        functions = check_portable(onnx.load(portable), errors)
        expected = run_graphopt(graphopt, native, inputs, outputs,
                                os.path.join(work_dir, f"{name}.native"))
        ort_worst = compare("ONNX Runtime on portable vs graphopt on native",
                            run_ort(portable, inputs), expected, outputs, errors)
        back = run_graphopt(graphopt, portable, inputs, outputs,
                            os.path.join(work_dir, f"{name}.portable"))
        back_worst = compare("graphopt on portable vs graphopt on native", back, expected,
                             outputs, errors)
        row = (f"{name:<22} -O3   {functions:>4} functions  ORT {ort_worst:.2g}  "
               f"re-imported {back_worst:.2g}")
    except Exception as e:  # subprocess, ORT and onnx errors alike
        errors.append(f"{type(e).__name__}: {e}")
        row = f"{name:<22} -O3"
    return row, errors


def check_grad(graphopt: str, model_dir: str, work_dir: str) -> Tuple[str, List[str]]:
    name = os.path.basename(os.path.normpath(model_dir))
    errors: List[str] = []
    model_path = os.path.join(model_dir, "model.onnx")
    portable = os.path.join(work_dir, f"{name}.grad.onnx")
    native = os.path.join(work_dir, f"{name}.grad.pb")
    try:
        run([graphopt, "grad", model_path, "-o", portable, "--wrt", "params", "-O2", "-q"])
        run([graphopt, "grad", model_path, "-o", native, "--wrt", "params", "-O2", "-q"])
        model = onnx.load(portable)
        functions = check_portable(model, errors)
        if functions == 0:
            errors.append("the gradient graph has no graphopt op: nothing portable to check")
        rng = np.random.default_rng(0)
        values = load_tensors(os.path.join(model_dir, "test_data_set_0"), "input")
        inputs = {}
        for i, info in enumerate(graph_inputs(model)):
            if i < len(values):
                inputs[info.name] = values[i]
            else:  # the seeds of the output gradients
                dims = [d.dim_value for d in info.type.tensor_type.shape.dim]
                inputs[info.name] = rng.standard_normal(dims).astype(np.float32)
        outputs = [o.name for o in model.graph.output]
        expected = run_graphopt(graphopt, native, inputs, outputs,
                                os.path.join(work_dir, f"{name}.grad.native"))
        worst = compare("ONNX Runtime on portable gradients vs graphopt on native",
                        run_ort(portable, inputs), expected, outputs, errors)
        row = f"{name:<22} grad  {functions:>4} functions  ORT {worst:.2g}"
    except Exception as e:
        errors.append(f"{type(e).__name__}: {e}")
        row = f"{name:<22} grad"
    return row, errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphopt", required=True)
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--grad", action="append", default=[],
                        help="corpus model whose gradient graph is checked too")
    parser.add_argument("paths", nargs="+", help="model directories or files inside them")
    args = parser.parse_args()
    os.makedirs(args.work_dir, exist_ok=True)
    dirs = sorted({os.path.dirname(p) if os.path.isfile(p) else p for p in args.paths})
    dirs = sorted({d if os.path.exists(os.path.join(d, "model.onnx")) else os.path.dirname(d)
                   for d in dirs})
    dirs = [d for d in dirs if os.path.exists(os.path.join(d, "model.onnx"))]
    if not dirs:
        print("FAIL: no model directories given", file=sys.stderr)
        return 1
    failed = 0
    checks = [(check_optimized, d) for d in dirs]
    for wanted in args.grad:
        match = [d for d in dirs if os.path.basename(os.path.normpath(d)) == wanted]
        if not match:
            print(f"FAIL: --grad {wanted}: no such corpus model", file=sys.stderr)
            return 1
        checks.append((check_grad, match[0]))
    for check, model_dir in checks:
        row, errors = check(args.graphopt, model_dir, args.work_dir)
        print(f"{row}  {'FAIL' if errors else 'ok'}", flush=True)
        for e in errors:
            print(f"    {e}")
        failed += bool(errors)
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
