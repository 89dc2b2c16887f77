"""Admission control under a closed-loop overload (issue 30): one graphopt-server and W
graphopt-workers (--threads=1 --max_concurrent=1 each, so W execution slots) on 127.0.0.1.

For each trial, bench/run_load drives Coordinator.Run with W and 2W clients (around saturation:
every slot busy, little queued; the saturation throughput is the higher of the two) and with 4W
clients (the overload), in rotating order, each for --seconds; a client answered
RESOURCE_EXHAUSTED waits as long as the retry hint says. Reports the median throughput of each,
the overload's ratio to saturation, the answers shed with RESOURCE_EXHAUSTED, and how often a
worker was marked down (`graphopt workers`' downs column, which must stay 0). Run by hand with bench/overload_bench.sh; not a test.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import cluster_bench  # noqa: E402 (the Cluster and load helpers)

BIN = cluster_bench.BIN
CORPUS = cluster_bench.CORPUS


def load(model, seconds, clients, server):
    argv = [f"{BIN}/bench/run_load", f"{CORPUS}/{model}", f"--concurrency={clients}",
            f"--seconds={seconds}", f"--server={server}", "--shed_ok"]
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"run_load with {clients} clients failed (an error other than "
                         f"RESOURCE_EXHAUSTED): {out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def downs(addr):
    """Sum of the `downs` column of `graphopt workers`."""
    out = subprocess.run([f"{BIN}/client/graphopt", "workers", "--server", addr],
                         capture_output=True, text=True, check=True).stdout
    total = 0
    for line in out.splitlines()[1:]:
        if line.startswith("last errors:"):
            break
        total += int(line.split()[-1])
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    w = args.workers
    levels = [w, 2 * w, 4 * w]
    runs = {c: [] for c in levels}
    with tempfile.TemporaryDirectory() as tmp:
        # One tenant sends everything: its quotas must not be what limits the load.
        cluster = cluster_bench.Cluster(
            w, tmp, worker_args=["--max_concurrent=1"],
            server_args=["--tenant_requests_per_s=1000000", "--tenant_burst=1000000",
                         "--tenant_max_concurrent=100000"])
        try:
            for trial in range(args.trials):
                order = levels[trial % 3:] + levels[:trial % 3]
                for clients in order:
                    r = load(args.model, args.seconds, clients, cluster.addr)
                    runs[clients].append(r)
                    print(f"  trial {trial} clients={clients}: {r['throughput_rps']:.1f} req/s, "
                          f"p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms, "
                          f"shed {r['shed']}", flush=True)
            marked_down = downs(cluster.addr)
        finally:
            cluster.stop()
    sat = max(statistics.median(r["throughput_rps"] for r in runs[c]) for c in (w, 2 * w))
    over = statistics.median(r["throughput_rps"] for r in runs[4 * w])
    print()
    print(f"{args.model}, {w} workers x 1 slot, medians of {args.trials} trials of "
          f"{args.seconds:g} s (rotating order)")
    print(f"{'clients':>8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'shed':>6}")
    for clients in levels:
        rs = runs[clients]
        print(f"{clients:>8} {statistics.median(r['throughput_rps'] for r in rs):>8.1f} "
              f"{statistics.median(r['p50_ms'] for r in rs):>8.2f} "
              f"{statistics.median(r['p99_ms'] for r in rs):>8.2f} "
              f"{sum(r['shed'] for r in rs):>6}")
    print(f"4x overload / saturation throughput: {over / sat:.3f}; workers marked down: "
          f"{marked_down}")
    if args.json:
        print(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
