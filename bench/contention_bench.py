"""graphopt and ONNX Runtime on a loaded host: latency with and without competing busy processes.

A shared service (Kubernetes CPU limits, noisy neighbours) rarely has its CPUs to itself. This
times each model, at each --threads, with --loads L busy-loop processes competing for the CPUs
(0: none besides whatever the host runs), for each contender in its own process:
  new   bench/run_model_bench (--bench), the binary under test
  base  another build of it (--base_bench), for A/B; optional
  ort   ONNX Runtime with all graph optimizations (bench/ort_run.py)
The contenders alternate within each trial (the order rotates between trials), and the table
gives each one's median over the trials of its per-process median. It prints the host's load
average before and after each load level.

    .venv/bin/python bench/contention_bench.py --models gru,squeezenet1_1 --threads 1,2 \
        --loads 0,4 [--opt_level 3] [--base_bench /var/tmp/x/run_model_bench] [--trials 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def start_load(n):
    return [subprocess.Popen(["bash", "-c", "while :; do :; done"]) for _ in range(n)]


def stop_load(procs):
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def run_json(cmd, timeout):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        sys.stderr.write(f"failed: {' '.join(cmd)}\n{out.stderr[-2000:]}\n")
        return None
    for line in reversed(out.stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--zoo", default=".bazel/bin/models/zoo")
    p.add_argument("--models", default="gru,squeezenet1_1,efficientnet_b0,transformer_decoder")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--loads", default="0,4")
    p.add_argument("--opt_level", type=int, default=3)
    p.add_argument("--bench", default=".bazel/bin/bench/run_model_bench")
    p.add_argument("--base_bench", default="")
    p.add_argument("--python", default=".venv/bin/python")
    p.add_argument("--no_ort", action="store_true")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--timeout_s", type=float, default=120)
    args = p.parse_args()

    contenders = [("new", args.bench)]
    if args.base_bench:
        contenders.append(("base", args.base_bench))
    names = [c[0] for c in contenders] + ([] if args.no_ort else ["ort"])
    rows = []
    for load in [int(x) for x in args.loads.split(",")]:
        procs = start_load(load)
        try:
            time.sleep(0.5)
            la_before = os.getloadavg()[0]
            for model in args.models.split(","):
                model_dir = os.path.join(args.zoo, model)
                for threads in [int(t) for t in args.threads.split(",")]:
                    common = ["--threads", str(threads), "--runs", str(args.runs), "--warmup",
                              str(args.warmup)]
                    cmds = {name: [binary, model_dir, "--opt_level", str(args.opt_level)] + common
                            for name, binary in contenders}
                    if not args.no_ort:
                        cmds["ort"] = [args.python, os.path.join(HERE, "ort_run.py"), model_dir,
                                       "--opt", "all"] + common
                    got = {name: [] for name in names}
                    for trial in range(args.trials):
                        order = names[trial % len(names):] + names[:trial % len(names)]
                        for name in order:
                            r = run_json(cmds[name], args.timeout_s)
                            got[name].append(r["median_ms"] if r else float("inf"))
                    med = {name: statistics.median(v) for name, v in got.items()}
                    rows.append((model, threads, load, med))
                    cells = "  ".join(f"{n} {med[n]:.2f}" for n in names)
                    print(f"{model} threads={threads} load={load}: {cells}", flush=True)
            la_after = os.getloadavg()[0]
            print(f"load={load}: load average {la_before:.1f} -> {la_after:.1f}", flush=True)
        finally:
            stop_load(procs)

    header = "| model | threads | busy loops | " + " | ".join(f"{n} ms" for n in names)
    if "base" in names:
        header += " | new / base"
    if "ort" in names:
        header += " | new / ORT"
    print()
    print(header + " |")
    print("|" + " --- |" * (header.count("|") + 1))
    for model, threads, load, med in rows:
        line = f"| {model} | {threads} | {load} | " + " | ".join(f"{med[n]:.2f}" for n in names)
        if "base" in names:
            line += f" | {med['new'] / med['base']:.2f}x"
        if "ort" in names:
            line += f" | {med['new'] / med['ort']:.2f}x"
        print(line + " |")


if __name__ == "__main__":
    main()
