#!/usr/bin/python3
"""Helper of cli_run_test.sh: converts a corpus model's test inputs to .npy, and compares the
.npy outputs of `graphopt run` with torch's reference outputs.

    cli_run_check.py inputs MODEL_DIR OUT_DIR      prints NAME=FILE.npy per input
    cli_run_check.py compare MODEL_DIR RUN_DIR     exits 1 unless every output matches
"""
import glob
import os
import re
import sys

import numpy as np
import onnx
import onnx.numpy_helper


def npy_name(value_name: str) -> str:
    """graphopt run's file name for a value (client/run_model.cc NpyFileName)."""
    out = re.sub(r"[^A-Za-z0-9._-]", "_", value_name)
    if not out or out[0] == ".":
        out = "_" + out
    return out + ".npy"


def tensors(model_dir: str, kind: str):
    files = sorted(glob.glob(os.path.join(model_dir, "test_data_set_0", f"{kind}_*.pb")),
                   key=lambda f: int(f.rsplit("_", 1)[1].split(".")[0]))
    for f in files:
        t = onnx.TensorProto()
        with open(f, "rb") as fh:
            t.ParseFromString(fh.read())
        yield onnx.numpy_helper.to_array(t)


def main() -> int:
    mode, model_dir, out_dir = sys.argv[1:4]
    model = onnx.load(os.path.join(model_dir, "model.onnx"), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    if mode == "inputs":
        names = [i.name for i in model.graph.input if i.name not in inits]
        for name, array in zip(names, tensors(model_dir, "input")):
            path = os.path.join(out_dir, npy_name(name))
            np.save(path, array)
            print(f"{name}={path}")
        return 0
    worst = 0.0
    for out, want in zip(model.graph.output, tensors(model_dir, "output")):
        got = np.load(os.path.join(out_dir, npy_name(out.name)))
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f"{out.name}: {got.dtype}{list(got.shape)} != expected {want.dtype}{list(want.shape)}")
            return 1
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        tol = 1e-5 + 1e-4 * np.abs(want.astype(np.float64))
        if not np.all(err <= tol):
            i = int(np.argmax(err - tol))
            print(f"{out.name}: {int(np.sum(err > tol))} elements beyond 1e-4; worst at {i}: "
                  f"{got.flat[i]} vs {want.flat[i]}")
            return 1
        worst = max(worst, float(np.max(err)) if want.size else 0.0)
    print(f"all outputs match torch (max abs diff {worst:.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
