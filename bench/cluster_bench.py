"""Coordinator.Run under load: one graphopt-server and W graphopt-workers on 127.0.0.1.

For each model: the in-process baseline (bench/run_load without --server, 1 client), then for
W in --workers a fresh server with W workers (--threads=1 each), measured with each client
count in --clients; resnet18 also once with its weights inline in every request. Every figure
is the median over --trials runs of --seconds each. Prints a table and, with --json, the raw
runs.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time

BIN = ".bazel/bin"
CORPUS = f"{BIN}/models/corpus"


def wait_port(path, proc, what):
    for _ in range(300):
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        if os.path.exists(path) and open(path).read().strip():
            return int(open(path).read())
        time.sleep(0.05)
    raise SystemExit(f"{what}: no port file")


class Cluster:
    def __init__(self, workers, tmp, worker_args=(), server_args=()):
        self.procs = []
        port_file = os.path.join(tmp, "server.port")
        self.server = self.start([f"{BIN}/server/graphopt-server", "--insecure",
                                  "--listen=127.0.0.1:0", f"--port_file={port_file}",
                                  "--op_store_dir=", "--log_level=warn", "--threads=16"]
                                 + list(server_args), tmp, "server")
        self.addr = f"127.0.0.1:{wait_port(port_file, self.server, 'server')}"
        for i in range(workers):
            wp = os.path.join(tmp, f"worker{i}.port")
            p = self.start([f"{BIN}/worker/graphopt-worker", "--insecure",
                            "--listen=127.0.0.1:0", f"--port_file={wp}", f"--worker_id=w{i}",
                            "--threads=1", "--log_level=warn", f"--register_with={self.addr}"]
                           + list(worker_args), tmp, f"w{i}")
            wait_port(wp, p, f"worker {i}")
        deadline = time.time() + 20
        while time.time() < deadline:
            out = subprocess.run([f"{BIN}/client/graphopt", "workers", "--server", self.addr],
                                 capture_output=True, text=True).stdout
            if sum(" up " in line for line in out.splitlines()) == workers:
                return
            time.sleep(0.1)
        raise SystemExit(f"workers not up: {out}")

    def start(self, argv, tmp, name):
        p = subprocess.Popen(argv, stdout=open(os.path.join(tmp, name + ".log"), "w"),
                             stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def stop(self):
        for p in reversed(self.procs):
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            p.wait(timeout=30)


def load(model, seconds, clients, server=None, weights="blobs"):
    argv = [f"{BIN}/bench/run_load", f"{CORPUS}/{model}", f"--concurrency={clients}",
            f"--seconds={seconds}"]
    if server:
        argv += [f"--server={server}", f"--weights={weights}"]
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"run_load failed: {out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_of(runs):
    keys = ["throughput_rps", "p50_ms", "p99_ms", "worker_p50_ms", "overhead_p50_ms"]
    row = {k: statistics.median(r[k] for r in runs) for k in keys}
    row["request_bytes"] = runs[0]["request_bytes"]
    row["response_bytes"] = runs[0]["response_bytes"]
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--models", default="mlp,resnet18")
    ap.add_argument("--workers", default="1,2,3")
    ap.add_argument("--clients", default="1,4")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    models = args.models.split(",")
    workers = [int(w) for w in args.workers.split(",")]
    clients = [int(c) for c in args.clients.split(",")]
    rows, raw = [], []

    def measure(label, model, w, c, **kw):
        runs = [load(model, args.seconds, c, **kw) for _ in range(args.trials)]
        raw.extend(dict(r, model=model, workers=w, label=label) for r in runs)
        rows.append((model, label, w, c, median_of(runs)))
        print(f"  {model} {label} workers={w} clients={c}: {rows[-1][4]}", flush=True)

    for model in models:
        measure("in-process", model, "-", 1)
    for w in workers:
        with tempfile.TemporaryDirectory() as tmp:
            cluster = Cluster(w, tmp)
            try:
                for model in models:
                    for c in clients:
                        measure("remote", model, w, c, server=cluster.addr)
                    if model == "resnet18" and w == workers[0]:
                        measure("remote, weights inline", model, w, 1, server=cluster.addr,
                                weights="inline")
            finally:
                cluster.stop()

    print()
    print(f"medians of {args.trials} runs of {args.seconds:g} s each")
    head = ("model", "path", "workers", "clients", "req/s", "p50 ms", "p99 ms", "worker p50",
            "overhead p50", "request KiB")
    fmt = "{:<9} {:<23} {:>7} {:>7} {:>8} {:>8} {:>8} {:>10} {:>12} {:>11}"
    print(fmt.format(*head))
    for model, label, w, c, r in sorted(rows, key=lambda x: (models.index(x[0]))):
        print(fmt.format(model, label, w, c, f"{r['throughput_rps']:.1f}", f"{r['p50_ms']:.2f}",
                         f"{r['p99_ms']:.2f}", f"{r['worker_p50_ms']:.2f}",
                         f"{r['overhead_p50_ms']:.2f}", f"{r['request_bytes'] / 1024:.1f}"))
    if args.json:
        print(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
