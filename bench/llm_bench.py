#!/usr/bin/python3
"""The Llama-style decoder (models/export_llm.py) on graphopt against ONNX Runtime (all graph
optimizations), side by side in one run (issue 35's benchmark).

Scenarios, each a model folder of its own (symlinks to the model and its data file, plus
test_data_set_0 with the inputs): `decode` is one decode step (batch 1, one token, a KV cache of
--past tokens), `prefill` a prompt of --prefill tokens with an empty cache. For each scenario and
thread count, graphopt (bench/run_model_bench at -O3) and ORT (bench/ort_run.py) each load the
model in a process of their own, warm up, then run interleaved bursts (bench/bursts.py). Reported:
medians, the pair ratio (the median over bursts of graphopt's burst median over ORT's next to
it), prefill tokens/s, and each process's peak RSS against the weights' size (the data file).

    .venv/bin/python bench/llm_bench.py --model_dir DIR [--threads 1,2] [--runs 6] [--burst 3]
"""
import argparse
import json
import os
import statistics
import sys

import numpy as np
import onnx
import onnx.numpy_helper

import bursts


def make_scenario(model_dir, out, seq, past, seed):
    """A model folder for one input shape: links to the model and its data, and the inputs."""
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    for name in os.listdir(model_dir):
        if name.startswith("model.onnx"):
            link = os.path.join(out, name)
            if not os.path.lexists(link):
                os.symlink(os.path.realpath(os.path.join(model_dir, name)), link)
    m = onnx.load(os.path.join(model_dir, "model.onnx"), load_external_data=False)
    rng = np.random.RandomState(seed)
    vocab = None
    for t in m.graph.initializer:
        if t.name.startswith("embed"):
            vocab = t.dims[0]
    for i, value in enumerate(m.graph.input):
        dims = value.type.tensor_type.shape.dim
        if value.name == "input_ids":
            array = rng.randint(0, vocab or 100, (1, seq)).astype(np.int64)
        else:
            array = rng.standard_normal((1, dims[1].dim_value, past, dims[3].dim_value))
            array = (array * 0.5).astype(np.float32)
        t = onnx.numpy_helper.from_array(array, value.name)
        with open(os.path.join(out, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(t.SerializeToString())


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model_dir", required=True, help="holds model.onnx and model.onnx.data")
    p.add_argument("--work", default="/tmp/graphopt_llm_bench")
    p.add_argument("--bench", default=".bazel/bin/bench/run_model_bench")
    p.add_argument("--python", default=".venv/bin/python")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--past", type=int, default=128)
    p.add_argument("--prefill", type=int, default=128)
    p.add_argument("--scenarios", default="decode,prefill")
    p.add_argument("--runs", type=int, default=6)
    p.add_argument("--burst", type=int, default=3)
    p.add_argument("--gap_ms", type=float, default=100)
    p.add_argument("--json", help="also write every figure here")
    args = p.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    ort_script = os.path.join(here, "ort_run.py")
    data = os.path.join(args.model_dir, "model.onnx.data")
    weights_mib = os.path.getsize(data) / 2**20 if os.path.exists(data) else float("nan")

    shapes = {"decode": (1, args.past), "prefill": (args.prefill, 0)}
    rows = []
    for scenario in args.scenarios.split(","):
        seq, past = shapes[scenario]
        folder = os.path.join(args.work, scenario)
        make_scenario(args.model_dir, folder, seq, past, seed=len(rows))
        for threads in [int(t) for t in args.threads.split(",")]:
            common = ["--threads", str(threads), "--runs", str(args.runs), "--warmup", "1",
                      "--bursts"]
            contenders = [("go", [args.bench, folder, "--opt_level", "3"] + common),
                          ("ort", [args.python, ort_script, folder, "--opt", "all"] + common)]
            print(f"{scenario} (seq {seq}, past {past}), {threads} thread(s) ...", flush=True)
            r = bursts.interleaved_trial(contenders, args.runs, args.burst, args.gap_ms / 1000,
                                         lambda t: [0, 1] if t % 2 == 0 else [1, 0])
            pairs = [g / o for g, o in zip(r["go"][2], r["ort"][2])]
            row = {"scenario": scenario, "seq": seq, "past": past, "threads": threads,
                   "go_ms": r["go"][0], "ort_ms": r["ort"][0], "pairs": statistics.median(pairs),
                   "go_rss_mib": r["go"][1], "ort_rss_mib": r["ort"][1],
                   "weights_mib": weights_mib}
            rows.append(row)
            print(json.dumps(row), flush=True)

    print(f"\nweights: {weights_mib:.0f} MiB; graphopt -O3 against ONNX Runtime (all "
          "optimizations); ratio = graphopt / ORT, pairs = median over interleaved bursts\n")
    print("| scenario | thr | graphopt ms | ORT ms | ratio (pairs) | tokens/s go / ORT "
          "| peak RSS go / ORT MiB | go RSS / weights |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        tokens = r["seq"]
        print(f"| {r['scenario']} (seq {r['seq']}, past {r['past']}) | {r['threads']} "
              f"| {r['go_ms']:.1f} | {r['ort_ms']:.1f} "
              f"| {r['go_ms'] / r['ort_ms']:.2f}x ({r['pairs']:.2f}x) "
              f"| {1000 * tokens / r['go_ms']:.1f} / {1000 * tokens / r['ort_ms']:.1f} "
              f"| {r['go_rss_mib']:.0f} / {r['ort_rss_mib']:.0f} "
              f"| {r['go_rss_mib'] / r['weights_mib']:.2f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
