#!/usr/bin/python3
"""Memory planning on the real-model corpus (issue 7's benchmark (i), with the planner's effect on
peak RSS and latency).

For each model, optimized at --level and then scheduled and memory-planned, one line: the planned
arena, the liveness lower bound of the chosen schedule and their ratio (target <= 1.05), the sum
of all planned intermediate values (no reuse), and peak RSS and median batch-1 latency of the same
optimized graph run by runtime::Executor from the plan and without it (every value allocated on
its own). Each measurement is a process of its own (peak RSS from wait4); the two modes are
interleaved and repeated --trials times, medians compared.

    bench/memory_plan_bench.sh [--level 1] [--trials 3] [--runs 20] [--threads 1] [--models a,b]
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bursts import run  # noqa: E402  (one process per measurement, peak RSS by wait4)

MODELS = ["mlp", "lstm", "transformer_encoder", "mobilenet_v2", "mobilenet_v2_bn", "resnet18",
          "resnet50"]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", default=".bazel/bin/models/corpus")
    p.add_argument("--bench", default=".bazel/bin/bench/run_model_bench")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--level", type=int, default=1, help="optimization level before planning")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--json", help="also write the medians here")
    args = p.parse_args()

    rows = []
    for model in args.models.split(","):
        d = os.path.join(args.corpus, model)
        common = [d, "--opt_level", str(args.level), "--plan_memory", "--threads",
                  str(args.threads), "--runs", str(args.runs)]
        m = {"planned_ms": [], "plain_ms": [], "planned_rss": [], "plain_rss": []}
        info = None
        for _ in range(args.trials):
            r, rss = run([args.bench] + common)
            if not r.get("planned"):
                raise RuntimeError(f"{model}: the executor did not use the plan")
            info = r
            m["planned_ms"].append(r["median_ms"]); m["planned_rss"].append(rss)
            r, rss = run([args.bench] + common + ["--use_memory_plan=false"])
            m["plain_ms"].append(r["median_ms"]); m["plain_rss"].append(rss)
        med = {k: statistics.median(v) for k, v in m.items()}
        med.update(model=model, arena=info["arena_bytes"], bound=info["lower_bound"],
                   naive=info["naive_bytes"])
        rows.append(med)
        print(f"  measured {model}", file=sys.stderr, flush=True)

    kib = 1024.0
    steps = f"-O{args.level}" + (" + schedule + plan_memory" if args.level < 3 else "")
    print(f"\n{steps}, {args.threads} thread(s), batch 1; medians "
          f"of {args.trials} trials x {args.runs} runs; MiB = peak RSS of the process\n")
    hdr = (f"{'model':<20} {'arena KiB':>10} {'bound KiB':>10} {'ratio':>6} {'no reuse KiB':>12} "
           f"{'MiB plan':>8} {'MiB none':>8} {'ms plan':>8} {'ms none':>8}")
    print(hdr)
    print("-" * len(hdr))
    worst = 0.0
    for r in rows:
        ratio = r["arena"] / r["bound"] if r["bound"] else 1.0
        worst = max(worst, ratio)
        print(f"{r['model']:<20} {r['arena'] / kib:>10.1f} {r['bound'] / kib:>10.1f} {ratio:>6.3f} "
              f"{r['naive'] / kib:>12.1f} {r['planned_rss']:>8.1f} {r['plain_rss']:>8.1f} "
              f"{r['planned_ms']:>8.2f} {r['plain_ms']:>8.2f}")
    verdict = "met" if worst <= 1.05 else "NOT met"
    print(f"\nworst arena / lower bound: {worst:.3f} (target <= 1.05: {verdict})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
