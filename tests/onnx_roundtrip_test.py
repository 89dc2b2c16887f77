"""Round-trips the model corpus (//models:corpus) through `graphopt optimize -O2`.

For every model folder (ONNX backend-test layout: model.onnx, test_data_set_0/{input,output}_*.pb):

  (a) corpus sanity: ONNX Runtime (CPU, no graph optimizations) on the original model with the
      saved inputs matches torch's saved reference outputs (rtol 1e-4, atol 1e-5);
  (b) round trip: `graphopt optimize model.onnx -o OUT.onnx -O2` (embedded mode, the default
      level) succeeds, OUT passes onnx.checker.check_model(full_check=True), keeps the graph's
      inputs and outputs, and ONNX Runtime's outputs on OUT equal its outputs on the original
      (rtol 1e-5, atol 1e-5).

Prints one table row per model and exits 1 when any check failed.

Needs onnx, numpy and onnxruntime: tests/onnx_roundtrip_test.sh runs it with $GRAPHOPT_PYTHON
(the venv that scripts/install_python_deps.sh makes).

    python onnx_roundtrip_test.py --graphopt PATH/TO/graphopt --work_dir DIR MODEL_DIR...
"""

import argparse
import dataclasses
import glob
import os
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence

import numpy as np
import onnx
import onnx.checker
import onnx.numpy_helper
import onnxruntime as ort

# (a) ONNX Runtime against torch: different kernels, so a small relative slack.
REFERENCE_RTOL, REFERENCE_ATOL = 1e-4, 1e-5
# (b) ONNX Runtime on the optimized model against ONNX Runtime on the original.
ROUNDTRIP_RTOL, ROUNDTRIP_ATOL = 1e-5, 1e-5
# The optimizer must finish well within the test's own timeout.
GRAPHOPT_TIMEOUT_S = 300


@dataclasses.dataclass
class Result:
    """One table row; `errors` empty means the model passed."""

    name: str
    opset: Optional[int] = None
    nodes_before: Optional[int] = None
    nodes_after: Optional[int] = None
    reference_diff: Optional[float] = None  # max |ORT(original) - torch|
    roundtrip_diff: Optional[float] = None  # max |ORT(optimized) - ORT(original)|
    optimize_s: Optional[float] = None
    errors: List[str] = dataclasses.field(default_factory=list)


def load_tensors(directory: str, prefix: str) -> List[np.ndarray]:
    """Reads <directory>/<prefix>_0.pb, _1.pb, ... in index order."""
    arrays = []
    while True:
        path = os.path.join(directory, f"{prefix}_{len(arrays)}.pb")
        if not os.path.exists(path):
            return arrays
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        arrays.append(onnx.numpy_helper.to_array(tensor))


def run_ort(model_path: str, inputs: Sequence[np.ndarray]) -> List[np.ndarray]:
    """Runs the model on CPU with every ONNX Runtime graph optimization turned off."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        raise ValueError(f"model has {len(names)} inputs, the test case has {len(inputs)}")
    return session.run(None, dict(zip(names, inputs)))


def compare(label: str, actual: Sequence[np.ndarray], expected: Sequence[np.ndarray],
            rtol: float, atol: float, errors: List[str]) -> float:
    """Appends a message to `errors` for each mismatching output; returns the max abs diff."""
    if len(actual) != len(expected):
        errors.append(f"{label}: {len(actual)} outputs, expected {len(expected)}")
        return float("inf")
    worst = 0.0
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a.shape != e.shape or a.dtype != e.dtype:
            errors.append(f"{label}: output {i} is {a.dtype}{list(a.shape)}, "
                          f"expected {e.dtype}{list(e.shape)}")
            worst = float("inf")
            continue
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
        worst = max(worst, float(diff.max(initial=0.0)))
        bad = ~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        if bad.any():
            errors.append(f"{label}: output {i}: {int(bad.sum())} of {a.size} elements differ "
                          f"(max abs diff {diff.max():.3g}, rtol {rtol:g}, atol {atol:g})")
    return worst


def node_count(model: onnx.ModelProto) -> int:
    return len(model.graph.node)


def default_opset(model: onnx.ModelProto) -> Optional[int]:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return None


def check_model(model_dir: str, graphopt: str, work_dir: str) -> Result:
    result = Result(name=os.path.basename(os.path.normpath(model_dir)))
    model_path = os.path.join(model_dir, "model.onnx")
    data_dir = os.path.join(model_dir, "test_data_set_0")
    original = onnx.load(model_path)
    result.opset = default_opset(original)
    result.nodes_before = node_count(original)
    inputs = load_tensors(data_dir, "input")
    reference = load_tensors(data_dir, "output")
    if not inputs or not reference:
        result.errors.append(f"{data_dir} has no input_0.pb or no output_0.pb")
        return result

    # (a) The corpus itself: ONNX Runtime agrees with torch.
    try:
        ort_original = run_ort(model_path, inputs)
    except Exception as e:  # ORT raises several unrelated exception types
        result.errors.append(f"ONNX Runtime cannot run the original model: {e}")
        return result
    result.reference_diff = compare("original vs torch", ort_original, reference,
                                    REFERENCE_RTOL, REFERENCE_ATOL, result.errors)

    # (b) The round trip through graphopt.
    optimized_path = os.path.join(work_dir, f"{result.name}.onnx")
    command = [graphopt, "optimize", model_path, "-o", optimized_path, "-O2"]
    start = time.monotonic()
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=GRAPHOPT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        result.errors.append(f"graphopt did not finish in {GRAPHOPT_TIMEOUT_S} s")
        return result
    result.optimize_s = time.monotonic() - start
    if proc.returncode != 0:
        output = proc.stdout.decode(errors="replace").strip()
        result.errors.append(f"`graphopt optimize {model_path} -o {result.name}.onnx -O2` "
                             f"exited {proc.returncode}:\n{output}")
        return result
    if not os.path.exists(optimized_path):
        result.errors.append(f"graphopt exited 0 but wrote no {optimized_path}")
        return result

    try:
        optimized = onnx.load(optimized_path)
        # A path (not the loaded proto) so that the checker also handles external data.
        onnx.checker.check_model(optimized_path, full_check=True)
    except Exception as e:  # onnx raises ValidationError, InferenceError, DecodeError, ...
        result.errors.append(f"optimized model is not valid ONNX: {type(e).__name__}: {e}")
        return result
    result.nodes_after = node_count(optimized)

    def interface(model: onnx.ModelProto):
        initializers = {t.name for t in model.graph.initializer}
        return ([i.name for i in model.graph.input if i.name not in initializers],
                [o.name for o in model.graph.output])

    if interface(optimized) != interface(original):
        result.errors.append(f"graph inputs/outputs changed: {interface(original)} -> "
                             f"{interface(optimized)}")
        return result

    try:
        ort_optimized = run_ort(optimized_path, inputs)
    except Exception as e:
        result.errors.append(f"ONNX Runtime cannot run the optimized model: {e}")
        return result
    result.roundtrip_diff = compare("optimized vs original", ort_optimized, ort_original,
                                    ROUNDTRIP_RTOL, ROUNDTRIP_ATOL, result.errors)
    return result


def format_table(results: Sequence[Result]) -> str:
    def fmt(value, spec):
        return "-" if value is None else format(value, spec)

    header = (f"{'model':<20} {'opset':>5} {'nodes':>6} {'after':>6} {'vs torch':>10} "
              f"{'vs orig':>10} {'optimize':>9}  result")
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r.name:<20} {fmt(r.opset, 'd'):>5} {fmt(r.nodes_before, 'd'):>6} "
            f"{fmt(r.nodes_after, 'd'):>6} {fmt(r.reference_diff, '.3g'):>10} "
            f"{fmt(r.roundtrip_diff, '.3g'):>10} "
            f"{fmt(r.optimize_s, '.2f') + ' s' if r.optimize_s is not None else '-':>9}  "
            f"{'FAIL' if r.errors else 'ok'}")
    return "\n".join(lines)


def find_model_dirs(paths: Sequence[str]) -> List[str]:
    """Accepts model folders, corpus folders holding model folders, or files inside either."""
    dirs: Dict[str, None] = {}
    for path in paths:
        if os.path.isfile(path):
            # A file of the corpus (as `$(rootpaths //models:corpus)` lists them).
            if os.path.basename(path) == "model.onnx":
                dirs[os.path.dirname(path)] = None
        elif os.path.isfile(os.path.join(path, "model.onnx")):
            dirs[path] = None
        else:
            for model in sorted(glob.glob(os.path.join(path, "*", "model.onnx"))):
                dirs[os.path.dirname(model)] = None
    return sorted(dirs, key=lambda d: os.path.basename(os.path.normpath(d)))


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphopt", required=True, help="the graphopt CLI binary")
    parser.add_argument("--work_dir", required=True, help="where optimized models are written")
    parser.add_argument("--min_models", type=int, default=1,
                        help="fail unless at least this many models were found")
    parser.add_argument("models", nargs="+", help="model folders, corpus folders or corpus files")
    args = parser.parse_args(argv)

    model_dirs = find_model_dirs(args.models)
    if len(model_dirs) < args.min_models:
        print(f"FAIL: found {len(model_dirs)} models in {args.models}, "
              f"expected at least {args.min_models}", file=sys.stderr)
        return 1
    if not os.access(args.graphopt, os.X_OK):
        print(f"FAIL: {args.graphopt} is not an executable", file=sys.stderr)
        return 1
    os.makedirs(args.work_dir, exist_ok=True)
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}; "
          f"{len(model_dirs)} models", flush=True)

    results = []
    for model_dir in model_dirs:
        result = check_model(model_dir, args.graphopt, args.work_dir)
        results.append(result)
        print(f"{result.name}: {'FAIL' if result.errors else 'ok'}", flush=True)

    print()
    print(format_table(results))
    failed = [r for r in results if r.errors]
    for r in failed:
        print()
        for error in r.errors:
            print(f"FAIL {r.name}: {error}")
    print()
    print(f"{len(results) - len(failed)} of {len(results)} models passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
