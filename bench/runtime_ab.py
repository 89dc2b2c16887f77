#!/usr/bin/python3
"""Two builds of graphopt's runtime against each other on the real-model corpus: batch-1 latency
of run_model_bench binary A and binary B (e.g. a copy of the one built before a change, and the
one built after), interleaved in bursts (bench/bursts.py) so that both see the same machine, A
and B's order swapping each round. Per model and thread count: each side's median over its
trials' medians, `B/A paired` (the median, over every round, of B's burst median divided by
A's next to it), the share of rounds where B was faster and the middle half of those ratios, and
each side's peak RSS. Below 1 means B is faster.

    cp .bazel/bin/bench/run_model_bench /tmp/before   # then change, rebuild, and:
    bench/runtime_ab.py --a /tmp/before --b .bazel/bin/bench/run_model_bench \\
        --models mobilenet_v2 --threads 1,2 --opt_level 3 [--trials N] [--runs R] [--burst B]
"""
import argparse
import json
import os
import statistics
import sys

import bursts


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--a", required=True, help="run_model_bench binary A (the baseline)")
    p.add_argument("--b", required=True, help="run_model_bench binary B")
    p.add_argument("--corpus", default=".bazel/bin/models/corpus")
    p.add_argument("--models", default="mobilenet_v2")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--runs", type=int, default=200, help="timed runs per side per trial")
    p.add_argument("--burst", type=int, default=10, help="timed runs per burst")
    p.add_argument("--gap_ms", type=float, default=100, help="quiet before each burst")
    p.add_argument("--opt_level", type=int, default=3)
    p.add_argument("--json", help="also write every trial's bursts here")
    args = p.parse_args()
    if args.burst < 1 or args.runs < 1 or args.trials < 1:
        p.error("--burst, --runs and --trials must be at least 1")
    for binary in (args.a, args.b):
        if not os.access(binary, os.X_OK):
            p.error(f"{binary} is not an executable")

    rows = []
    for model in args.models.split(","):
        d = os.path.join(args.corpus, model)
        for threads in [int(t) for t in args.threads.split(",")]:
            common = [d, "--opt_level", str(args.opt_level), "--threads", str(threads),
                      "--runs", str(args.runs)]
            m = {"a": [], "b": [], "a_rss": [], "b_rss": [], "a_bursts": [], "b_bursts": []}
            ratios = []
            rounds = (args.runs + args.burst - 1) // args.burst
            for trial in range(args.trials):
                def order(t, first=trial * rounds):  # A and B swap places each round
                    return [0, 1] if (first + t) % 2 == 0 else [1, 0]
                r = bursts.interleaved_trial([("a", [args.a] + common), ("b", [args.b] + common)],
                                             args.runs, args.burst, args.gap_ms / 1000, order)
                for side in ("a", "b"):
                    median, rss, medians = r[side]
                    m[side].append(median)
                    m[side + "_rss"].append(rss)
                    m[side + "_bursts"].append(medians)
                ratios += [b / a for a, b in zip(r["a"][2], r["b"][2])]
            ratios.sort()
            n = len(ratios)
            rows.append({"model": model, "threads": threads, "trials": m,
                         "a": statistics.median(m["a"]), "b": statistics.median(m["b"]),
                         "paired": statistics.median(ratios),
                         "b_faster": sum(x < 1 for x in ratios) / n,
                         "q1": ratios[n // 4], "q3": ratios[(3 * n) // 4],
                         "a_rss": statistics.median(m["a_rss"]),
                         "b_rss": statistics.median(m["b_rss"])})
            print(f"  measured {model} at {threads} thread(s)", file=sys.stderr, flush=True)

    print(f"\nA = {args.a}\nB = {args.b}\n{args.trials} trials x {args.runs} runs each, bursts of "
          f"{args.burst} interleaved, -O{args.opt_level}, batch 1; B/A paired = median of the "
          f"rounds' ratios\n")
    hdr = (f"{'model':<20} {'thr':>3} {'A ms':>8} {'B ms':>8} {'B/A paired':>10} "
           f"{'B faster':>8} {'middle half':>13} {'A MiB':>6} {'B MiB':>6}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(f"{r['model']:<20} {r['threads']:>3} {r['a']:>8.3f} {r['b']:>8.3f} "
              f"{r['paired']:>9.3f}x {r['b_faster']:>7.0%} {r['q1']:>5.3f}-{r['q3']:.3f}x "
              f"{r['a_rss']:>6.0f} {r['b_rss']:>6.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"a": args.a, "b": args.b, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
