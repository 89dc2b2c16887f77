"""Times one model on ONNX Runtime (the peer of bench/runtime_vs_ort.py), in its own process.

Prints one JSON line: {"median_ms": .., "min_ms": .., "runs": ..}. The inputs are those of the
model's test_data_set_0 (the same the graphopt side reads).

    .venv/bin/python bench/ort_run.py MODEL_DIR --threads N --opt {disable,all} --runs R

With --bursts it follows run_model_bench's protocol of the same name: after the warm-up it prints
{"ready": true}, then for each stdin line "N" makes --warmup untimed runs and N timed ones and
prints that burst's line; at the end of stdin, the line over all the bursts' timed runs.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import time

import onnx
import onnx.numpy_helper
import onnxruntime as ort


def peak_rss_mib() -> float:
    """This process's own peak resident set (VmHWM) in MiB: the parent's wait4 figure carries
    the forking process's peak across exec (see bench/bursts.py)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("model_dir", nargs="?")
    p.add_argument("--baseline", action="store_true",
                   help="import everything, create no session: the process's RSS floor")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--opt", choices=["disable", "all"], default="disable")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--bursts", action="store_true",
                   help="after the warm-up, run the number of times each stdin line says")
    args = p.parse_args()
    if args.baseline:
        print(json.dumps({"median_ms": 0, "min_ms": 0, "runs": 0, "peak_rss_mib": peak_rss_mib()}))
        return

    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_DISABLE_ALL if args.opt == "disable"
                                   else ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    session_start = time.perf_counter()
    sess = ort.InferenceSession(os.path.join(args.model_dir, "model.onnx"), so,
                                providers=["CPUExecutionProvider"])
    session_ms = (time.perf_counter() - session_start) * 1000
    feeds = {}
    names = [i.name for i in sess.get_inputs()]
    files = sorted(glob.glob(os.path.join(args.model_dir, "test_data_set_0", "input_*.pb")),
                   key=lambda f: int(f.rsplit("_", 1)[1].split(".")[0]))
    for name, path in zip(names, files):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        feeds[name] = onnx.numpy_helper.to_array(t)
    def warm_up() -> None:
        for _ in range(args.warmup):
            sess.run(None, feeds)

    warm_up()
    times = []

    def timed_runs(n: int) -> list:
        for _ in range(n):
            start = time.perf_counter()
            sess.run(None, feeds)
            times.append((time.perf_counter() - start) * 1000)
        return times[-n:]

    def line(t: list) -> str:
        return json.dumps({"median_ms": statistics.median(t), "min_ms": min(t), "runs": len(t),
                           "session_ms": session_ms, "peak_rss_mib": peak_rss_mib()})

    if args.bursts:
        print(json.dumps({"ready": True}), flush=True)
        for request in sys.stdin:
            n = int(request) if request.strip().isdigit() else 0
            if n < 1:
                sys.exit(f"--bursts: expected a run count per line, got {request.strip()!r}")
            warm_up()
            print(line(timed_runs(n)), flush=True)
    else:
        timed_runs(args.runs)
    if not times:
        sys.exit("no timed runs")
    print(line(times))


if __name__ == "__main__":
    main()
