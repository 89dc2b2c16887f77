"""Shared helpers of the gradient tests: graphopt's CLI (grad, run), comparisons, and the list of
cases known not to pass yet (known_failures.txt, as tests/conformance does it)."""

import os
import re
import subprocess
from typing import Dict, Iterable, List, Optional, Sequence

import numpy as np

MISSING_GRADIENT = re.compile(r"no gradient definition for op '([^']+)'")


class GraphoptError(Exception):
    """A graphopt command failed; the message names the op when a gradient is missing."""


def npy_name(value: str) -> str:
    """The file `graphopt run -o DIR` writes a value to (client/run_model.cc's NpyFileName)."""
    out = "".join(c if c.isalnum() or c in "-_." else "_" for c in value)
    if not out or out[0] == ".":
        out = "_" + out
    return out + ".npy"


class Graphopt:
    def __init__(self, binary: str, work_dir: str):
        self.binary = binary
        self.work_dir = work_dir
        os.makedirs(work_dir, exist_ok=True)

    def _call(self, args: Sequence[str], what: str) -> str:
        proc = subprocess.run([self.binary, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            missing = MISSING_GRADIENT.search(proc.stdout)
            if missing:
                raise GraphoptError(f"{what}: op '{missing.group(1)}' has no gradient yet")
            lines = proc.stdout.strip().splitlines()
            errors = [line for line in lines if line.startswith(("error:", "usage error:"))]
            raise GraphoptError(f"{what} failed (rc {proc.returncode}): " +
                                " | ".join(errors or lines[-3:]))
        return proc.stdout

    def grad(self, model: str, out: str, wrt: Iterable[str], loss: Iterable[str] = (),
             outputs: Iterable[str] = (), opt_level: int = 2, suffix: Optional[str] = None,
             server: Optional[str] = None) -> str:
        args = ["grad", model, "-o", out, "--wrt", ",".join(wrt), "-O", str(opt_level)]
        if loss:
            args += ["--loss", ",".join(loss)]
        if outputs:
            args += ["--outputs", ",".join(outputs)]
        if suffix:
            args += ["--suffix", suffix]
        if server:
            args += ["--server", server]
        return self._call(args, "graphopt grad")

    def run(self, model: str, inputs: Dict[str, np.ndarray], want: Iterable[str],
            tag: str, threads: int = 2, opt_level: Optional[int] = None) -> Dict[str, np.ndarray]:
        """Runs `model` on `inputs` (optimized at `opt_level` first when given); returns the
        outputs named in `want`."""
        in_dir = os.path.join(self.work_dir, tag, "in")
        out_dir = os.path.join(self.work_dir, tag, "out")
        os.makedirs(in_dir, exist_ok=True)
        args = ["run", model, "-o", out_dir, "--threads", str(threads)]
        if opt_level is not None:
            args += ["-O", str(opt_level)]
        for name, value in inputs.items():
            path = os.path.join(in_dir, npy_name(name))
            np.save(path, np.array(value, order="C"))
            args += ["--input", f"{name}={path}"]
        self._call(args, "graphopt run")
        return {name: np.load(os.path.join(out_dir, npy_name(name))) for name in want}


def float64_model(model):
    """A copy of an ONNX model computing in float64: float32 initializers, graph inputs,
    outputs and value infos, Cast targets and Constant values widened (exactly). Raises
    GraphoptError for float32 it cannot widen (attributes of other ops)."""
    import onnx
    import onnx.numpy_helper
    out = onnx.ModelProto()
    out.CopyFrom(model)
    f32, f64 = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE

    def widen(t):
        if t.data_type == f32:
            wide = onnx.numpy_helper.from_array(
                onnx.numpy_helper.to_array(t).astype(np.float64), t.name)
            t.CopyFrom(wide)

    g = out.graph
    for t in g.initializer:
        widen(t)
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == f32:
            vi.type.tensor_type.elem_type = f64
    for node in g.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to" and a.i == f32:
                a.i = f64
            elif a.type == onnx.AttributeProto.TENSOR:
                widen(a.t)
            elif a.type == onnx.AttributeProto.GRAPH:
                raise GraphoptError(f"float64_model: node '{node.name}' has a subgraph")
    return out


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| over max |want|: relative to the tensor's largest magnitude, so that
    elements near zero (most of a gradient) are not judged on their own scale."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-30)
    return float(np.max(np.abs(got - want))) / scale if want.size else 0.0


def read_known_failures(path: str) -> Dict[str, str]:
    """case -> the reason given in the comment block above it."""
    known, reason = {}, ""
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("#"):
                reason = line.lstrip("# ")
            elif line:
                known[line] = reason
    return known


def check_against_known(results: Dict[str, Optional[str]], known_path: str) -> List[str]:
    """results: case -> None (passed) or the failure. Returns the differences from the list."""
    known = read_known_failures(known_path)
    problems = []
    for case, failure in sorted(results.items()):
        if failure is not None and case not in known:
            problems.append(f"{case}: fails and is not in known_failures.txt: {failure}")
        if failure is None and case in known:
            problems.append(f"{case}: passes now: remove it from known_failures.txt")
    return problems
