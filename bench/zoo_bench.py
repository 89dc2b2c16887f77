#!/usr/bin/env python3
"""The zoo (//models:zoo) against onnx-simplifier and ONNX Runtime, in one run (issue 34).

For every zoo model:
  - node counts: the input, graphopt's output at -O0, -O2 and -O3 (`graphopt optimize`), and
    onnxsim's (onnxsim.simplify with its defaults);
  - batch-1 latency of graphopt at -O0 and -O3 (bench/run_model_bench) and of ONNX Runtime with
    all graph optimizations (bench/ort_run.py), at each --threads, each in a process of its own,
    interleaved in bursts as bench/runtime_vs_ort.py does (bench/bursts.py); medians over
    --trials trials of each trial's median, and "pairs", the median over bursts of graphopt -O3's
    burst median divided by the ORT burst next to it in time;
  - peak RSS of each of those processes (graphopt's includes importing and optimizing the model
    in the same process; ORT's includes Python, numpy and onnx);
  - first run: graphopt's plan (Executor::Create) plus its first run of the -O3 graph, against
    ONNX Runtime's session creation (which optimizes the graph) plus its first run, each the
    median of --first_trials fresh processes.
Ratios are graphopt / ORT: below 1 is faster or smaller. It prints one markdown table (the one
docs/performance.md holds) and, with --write_onnxsim, writes onnxsim's counts in the format of
tests/differential/zoo_onnxsim_nodes.txt.

    bench/zoo_bench.sh [--models a,b] [--threads 1,2] [--trials 3] [--runs 20] [--burst 10]
                       [--no_latency] [--write_onnxsim FILE]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bursts  # noqa: E402

MODELS = ["swin_t", "vit_4l", "convnext_tiny", "densenet121", "efficientnet_b0", "googlenet",
          "regnet_y_400mf", "shufflenet_v2_x1_0", "squeezenet1_1", "mnasnet1_0", "gru",
          "transformer_decoder"]


def node_count(path):
    return len(onnx.load(path, load_external_data=False).graph.node)


def graphopt_nodes(cli, model_path, level, tmp):
    out = os.path.join(tmp, f"O{level}.onnx")
    subprocess.run([cli, "optimize", model_path, "-o", out, "-q", "-O", str(level)], check=True,
                   stdout=subprocess.DEVNULL)
    n = node_count(out)
    os.remove(out)
    return n


def onnxsim_nodes(python, pythonpath, model_path, tmp):
    """onnxsim in a process of its own (it may take GBs on large graphs)."""
    out = os.path.join(tmp, "sim.onnx")
    code = ("import sys, onnx, onnxsim; m, ok = onnxsim.simplify(onnx.load(sys.argv[1])); "
            "assert ok, 'onnxsim check failed'; onnx.save(m, sys.argv[2])")
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    r = subprocess.run([python, "-c", code, model_path, out], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"onnxsim failed on {model_path}: {r.stderr[-800:]}")
    n = node_count(out)
    os.remove(out)
    return n


def ort_first_run(model_dir, threads):
    """Child mode: ONNX Runtime's session creation + first run, in ms, as one JSON line."""
    import glob
    import onnx.numpy_helper
    import onnxruntime as ort
    feeds_files = sorted(glob.glob(os.path.join(model_dir, "test_data_set_0", "input_*.pb")),
                         key=lambda f: int(f.rsplit("_", 1)[1].split(".")[0]))
    arrays = []
    for path in feeds_files:
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        arrays.append(onnx.numpy_helper.to_array(t))
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    start = time.perf_counter()
    sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), so,
                                providers=["CPUExecutionProvider"])
    created = time.perf_counter()
    sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), arrays)})
    end = time.perf_counter()
    print(json.dumps({"create_ms": (created - start) * 1000, "run_ms": (end - created) * 1000}))


def first_runs(args, model_dir, threads):
    """Medians over --first_trials fresh processes: (graphopt plan + first run at -O3,
    ORT session + first run), in ms, alternating which goes first."""
    go, ort = [], []
    go_cmd = [args.bench, model_dir, "--opt_level", "3", "--threads", str(threads),
              "--warmup", "0", "--runs", "1"]
    ort_cmd = [args.python, os.path.abspath(__file__), "--ort_first_run", model_dir,
               "--threads", str(threads)]
    for trial in range(args.first_trials):
        for which in ((0, 1) if trial % 2 == 0 else (1, 0)):
            if which == 0:
                r, _ = bursts.run(go_cmd)
                go.append(r["plan_ms"] + r["median_ms"])
            else:
                r, _ = bursts.run(ort_cmd)
                ort.append(r["create_ms"] + r["run_ms"])
    return statistics.median(go), statistics.median(ort)


def latency(args, model_dir, threads):
    """Interleaved trials of graphopt -O0, graphopt -O3 and ORT-all."""
    common = ["--threads", str(threads), "--runs", str(args.runs)]
    contenders = [("go0", [args.bench, model_dir, "--opt_level", "0"] + common),
                  ("go3", [args.bench, model_dir, "--opt_level", "3"] + common),
                  ("ort", [args.python, os.path.join(HERE, "ort_run.py"), model_dir, "--opt",
                           "all"] + common)]
    m = {k: [] for k in ("go0", "go3", "ort", "go0_rss", "go3_rss", "ort_rss")}
    pairs = []
    rounds = (args.runs + args.burst - 1) // args.burst
    for trial in range(args.trials):
        # go3 and ort always next to each other, in either order; go0 before or after them.
        def order(t, trial=trial):
            turn = trial * rounds + t
            pair = [1, 2] if turn % 2 == 0 else [2, 1]
            return pair + [0] if turn % 4 < 2 else [0] + pair
        r = bursts.interleaved_trial(contenders, args.runs, args.burst, args.gap_ms / 1000, order)
        for name, (median, rss, _) in r.items():
            m[name].append(median)
            m[name + "_rss"].append(rss)
        pairs += [g / o for g, o in zip(r["go3"][2], r["ort"][2])]
    result = {k: statistics.median(v) for k, v in m.items()}
    result["pairs"] = statistics.median(pairs)
    return result


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def print_table(rows, args, started):
    """The markdown table (the one docs/performance.md holds) and the summary lines."""
    when = time.strftime("%Y-%m-%d", time.gmtime(started))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n{when}, {cpu_model()}, {os.cpu_count()} vCPUs (load average at the end: {load}); "
          f"batch 1; latency medians of "
          f"{args.trials} interleaved trials x {args.runs} runs (bursts of {args.burst}); "
          f"first run: medians of {args.first_trials} fresh processes. Ratios graphopt / ORT "
          f"(ONNX Runtime, all optimizations).\n")
    print("| model | nodes in | -O0 | -O2 | -O3 | onnxsim | thr | -O0 ms | -O3 ms | ORT ms | "
          "-O3/ORT (pairs) | -O3/-O0 | RSS -O3 / ORT MiB | first run -O3 / ORT ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
          "---: | ---: |")
    for row in rows:
        counts = (f"| {row['model']} | {row['input']} | {row['O0']} | {row['O2']} | {row['O3']} "
                  f"| {row['onnxsim']} |")
        if not row["threads"]:
            print(counts + " | | | | | | | |")
        for i, (t, r) in enumerate(sorted(row["threads"].items())):
            lead = counts if i == 0 else "| | | | | | |"
            print(f"{lead} {t} | {r['go0']:.2f} | {r['go3']:.2f} | {r['ort']:.2f} | "
                  f"{r['go3'] / r['ort']:.2f}x ({r['pairs']:.2f}x) | {r['go3'] / r['go0']:.2f}x | "
                  f"{r['go3_rss']:.0f} / {r['ort_rss']:.0f} | "
                  f"{r['first_go']:.1f} / {r['first_ort']:.1f} |")
    misses = [r["model"] for r in rows if r["O2"] > r["onnxsim"]]
    print(f"\n-O2 leaves more nodes than onnxsim on {len(misses)} of {len(rows)}"
          + (f": {', '.join(misses)}" if misses else ""))
    if not args.table_from:
        print(f"(wall time of this run: {(time.time() - started) / 60:.1f} min)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--zoo", default=".bazel/bin/models/zoo")
    p.add_argument("--graphopt", default=".bazel/bin/client/graphopt")
    p.add_argument("--bench", default=".bazel/bin/bench/run_model_bench")
    p.add_argument("--python", default=sys.executable,
                   help="the interpreter with onnxruntime and onnxsim (the venv's)")
    p.add_argument("--onnxsim_path", help="a directory to add to onnxsim's PYTHONPATH")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--runs", type=int, default=20, help="timed runs per contender per trial")
    p.add_argument("--burst", type=int, default=10)
    p.add_argument("--gap_ms", type=float, default=100)
    p.add_argument("--first_trials", type=int, default=3)
    p.add_argument("--no_latency", action="store_true", help="node counts only")
    p.add_argument("--write_onnxsim", help="write onnxsim's node counts to this file")
    p.add_argument("--json", help="also write every figure here")
    p.add_argument("--table_from", help="print the table of a --json file of an earlier run")
    p.add_argument("--ort_first_run", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.ort_first_run:
        ort_first_run(args.ort_first_run, int(args.threads))
        return 0
    if args.table_from:
        with open(args.table_from) as f:
            rows = json.load(f)
        for row in rows:
            row["threads"] = {int(t): r for t, r in row["threads"].items()}
        print_table(rows, args, os.path.getmtime(args.table_from))
        return 0

    threads = [int(t) for t in args.threads.split(",")]
    rows = []
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            d = os.path.join(args.zoo, name)
            path = os.path.join(d, "model.onnx")
            row = {"model": name, "input": node_count(path)}
            for level in (0, 2, 3):
                row[f"O{level}"] = graphopt_nodes(args.graphopt, path, level, tmp)
            row["onnxsim"] = onnxsim_nodes(args.python, args.onnxsim_path, path, tmp)
            row["threads"] = {}
            if not args.no_latency:
                for t in threads:
                    lat = latency(args, d, t)
                    lat["first_go"], lat["first_ort"] = first_runs(args, d, t)
                    row["threads"][t] = lat
            rows.append(row)
            print(f"  measured {name}: {json.dumps(row)}", file=sys.stderr, flush=True)
            if args.json:  # after every model, so that an interrupted run keeps what it measured
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)

    print_table(rows, args, started)
    if args.write_onnxsim:
        with open(args.write_onnxsim, "w") as f:
            f.write("# onnxsim's node count per zoo model (onnxsim 0.4.36, onnxsim.simplify with "
                    "its defaults),\n# written by bench/zoo_bench.py --write_onnxsim; zoo_test "
                    "compares -O2's count with it.\n")
            for r in rows:
                f.write(f"{r['model']} {r['onnxsim']}\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
