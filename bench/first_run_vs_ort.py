"""First-run latency: graphopt's optimize (-O3) + plan + first run against ONNX Runtime's session
creation (all optimizations) + first run, each in a fresh process, the two alternating (issue
34, point 3). Medians over --trials processes each; ratio = graphopt / ORT (below 1: faster).

    .venv/bin/python bench/first_run_vs_ort.py --corpus DIR [--models a,b] [--trials 5]
                                               [--threads 1] [--opt_level 3]

(A run_model_bench too old to print optimize_ms counts it as 0.)
DIR holds one directory per model with model.onnx and test_data_set_0 (models/ corpus layout).
"""
import argparse
import os
import statistics
import sys

import bursts


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", default=".bazel/bin/models/corpus")
    p.add_argument("--bench", default=".bazel/bin/bench/run_model_bench")
    p.add_argument("--python", default=".venv/bin/python")
    p.add_argument("--models", default="")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--opt_level", type=int, default=3)
    args = p.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    ort_script = os.path.join(here, "ort_run.py")
    models = args.models.split(",") if args.models else sorted(os.listdir(args.corpus))
    common = ["--threads", str(args.threads), "--runs", "1", "--warmup", "0"]
    print(f"{args.trials} fresh processes each, {args.threads} thread(s); graphopt -O{args.opt_level}: "
          "optimize + plan + first run; ORT (all optimizations): session + first run\n")
    hdr = (f"{'model':<22} {'go opt ms':>9} {'plan ms':>8} {'1st run':>8} {'go total':>9} "
           f"{'ORT sess':>9} {'1st run':>8} {'ORT total':>9} {'ratio':>6}")
    print(hdr)
    print("-" * len(hdr))
    for model in models:
        d = os.path.join(args.corpus, model)
        if not os.path.exists(os.path.join(d, "model.onnx")):
            continue
        go, ort = [], []
        for trial in range(args.trials):
            runs = [("go", [args.bench, d, "--opt_level", str(args.opt_level)] + common),
                    ("ort", [args.python, ort_script, d, "--opt", "all"] + common)]
            if trial % 2:
                runs.reverse()
            for name, cmd in runs:
                r, _ = bursts.run(cmd)
                if name == "go":
                    go.append((r.get("optimize_ms", 0.0), r["plan_ms"], r["median_ms"]))
                else:
                    ort.append((r["session_ms"], r["median_ms"]))
        g = [statistics.median(x) for x in zip(*go)]
        o = [statistics.median(x) for x in zip(*ort)]
        gt = statistics.median(a + b + c for a, b, c in go)
        ot = statistics.median(a + b for a, b in ort)
        print(f"{model:<22} {g[0]:>9.2f} {g[1]:>8.2f} {g[2]:>8.2f} {gt:>9.2f} {o[0]:>9.2f} "
              f"{o[1]:>8.2f} {ot:>9.2f} {gt / ot:>5.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
