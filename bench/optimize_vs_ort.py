#!/usr/bin/python3
"""Optimization time of graphopt against ONNX Runtime's session creation with every graph
optimization enabled (issue 7's benchmark (ii)), side by side in one run.

graphopt (bench/optimize_time): import the ONNX bytes, optimize at --opt_level, and plan the
result for execution (runtime::Executor::Create). ONNX Runtime: InferenceSession from the same
bytes with ORT_ENABLE_ALL (its graph optimizations, kernel creation and weight prepacking). Both
read the model from memory, repeat --runs times after a warm-up, and report medians; the two are
interleaved --trials times and the medians of those compared. Ratio = graphopt / ORT.

    bench/optimize_vs_ort.sh [--models resnet50,...] [--opt_level 3] [--trials N] [--runs R]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

MODELS = ["resnet50", "resnet18", "mobilenet_v2", "mobilenet_v2_bn", "transformer_encoder",
          "lstm", "mlp"]

ORT_SCRIPT = r"""
import json, statistics, sys, time
import onnxruntime as ort
path, runs = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.intra_op_num_threads = 1
so.log_severity_level = 3
times = []
for i in range(runs + 1):
    start = time.perf_counter()
    ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    if i:
        times.append((time.perf_counter() - start) * 1000)
print(json.dumps({"session_ms": statistics.median(times)}))
"""


def last_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", default=".bazel/bin/models/corpus")
    p.add_argument("--bench", default=".bazel/bin/bench/optimize_time")
    p.add_argument("--python", default=".venv/bin/python")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--opt_level", type=int, default=3)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()

    print(f"medians of {args.trials} trials x {args.runs} runs; graphopt at -O{args.opt_level}, "
          f"ONNX Runtime with ORT_ENABLE_ALL; ratio = graphopt (import+optimize+plan) / ORT "
          f"session creation\n")
    hdr = (f"{'model':<20} {'nodes':>11} {'import ms':>9} {'optimize ms':>11} {'plan ms':>8} "
           f"{'total ms':>9} {'ORT ms':>8} {'ratio':>6}")
    print(hdr)
    print("-" * len(hdr))
    for model in args.models.split(","):
        path = os.path.join(args.corpus, model, "model.onnx")
        go, ort = [], []
        for _ in range(args.trials):
            go.append(last_json([args.bench, path, "--opt_level", str(args.opt_level),
                                 "--runs", str(args.runs), "--dim_bounds", "batch:1"]))
            ort.append(last_json([args.python, "-c", ORT_SCRIPT, path, str(args.runs)]))
        med = {k: statistics.median(r[k] for r in go)
               for k in ("import_ms", "optimize_ms", "plan_ms", "total_ms")}
        ort_ms = statistics.median(r["session_ms"] for r in ort)
        nodes = f"{go[0]['nodes_in']}->{go[0]['nodes_out']}"
        print(f"{model:<20} {nodes:>11} {med['import_ms']:>9.1f} {med['optimize_ms']:>11.1f} "
              f"{med['plan_ms']:>8.1f} {med['total_ms']:>9.1f} {ort_ms:>8.1f} "
              f"{med['total_ms'] / ort_ms:>5.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
