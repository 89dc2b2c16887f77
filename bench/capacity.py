"""Capacity planning figures for docs/operations.md: requests/s per server core (Optimize) and
per worker core (Run), on this machine.

  server core: one graphopt-server with --threads=1 pinned to CPU 0 (taskset); C concurrent
    Optimize calls of a corpus model (its ONNX bytes, at -O1/-O2) from a client pinned to CPU 1.
  worker core: one graphopt-worker with --threads=1 --max_concurrent=1 pinned to CPU 0; the
    server and bench/run_load (Coordinator.Run, weights as blobs) pinned to CPU 1.

Each figure is the median of --trials runs of --seconds each, after a warm-up. Run by hand
(bench/capacity.sh); not a test.
"""

import argparse
import concurrent.futures
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

BIN = ".bazel/bin"
CORPUS = f"{BIN}/models/corpus"
sys.path.insert(0, f"{BIN}/tests/shared")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402

from cluster_bench import wait_port  # noqa: E402

from proto import optimizer_pb2, optimizer_pb2_grpc  # noqa: E402




def start(args, tmp, name, cpu):
    log = open(os.path.join(tmp, name + ".log"), "a")
    return subprocess.Popen(["taskset", "-c", str(cpu)] + args, stdout=log,
                            stderr=subprocess.STDOUT)


def stop(*procs):
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def server(tmp, cpu, extra=()):
    port_file = os.path.join(tmp, "server.port")
    if os.path.exists(port_file):
        os.remove(port_file)
    p = start([f"{BIN}/server/graphopt-server", "--insecure", "--listen=127.0.0.1:0",
               f"--port_file={port_file}", "--op_store_dir=", "--log_level=warn",
               "--tenant_requests_per_s=100000", "--tenant_burst=100000",
               "--tenant_max_concurrent=1000"] + list(extra), tmp, "server", cpu)
    return p, f"127.0.0.1:{wait_port(port_file, p, 'server')}"


def optimize_rate(address, model, level, clients, seconds):
    data = open(f"{CORPUS}/{model}/model.onnx", "rb").read()
    request = optimizer_pb2.OptimizeRequest(onnx_model=data,
                                            pipeline=optimizer_pb2.Pipeline(opt_level=level))
    opts = [("grpc.max_receive_message_length", 1 << 30),
            ("grpc.max_send_message_length", 1 << 30)]
    stubs = [optimizer_pb2_grpc.GraphOptimizerStub(grpc.insecure_channel(address, options=opts))
             for _ in range(clients)]
    for s in stubs:  # warm-up
        s.Optimize(request, timeout=120)

    def loop(s):
        n, end = 0, time.time() + seconds
        while time.time() < end:
            s.Optimize(request, timeout=120)
            n += 1
        return n

    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        done = sum(pool.map(loop, stubs))
    return done / (time.time() - t0)


def run_rate(address, model, clients, seconds):
    out = subprocess.run(["taskset", "-c", "1", f"{BIN}/bench/run_load", f"{CORPUS}/{model}",
                          f"--server={address}", f"--concurrency={clients}",
                          f"--seconds={seconds}"], capture_output=True, text=True, check=True)
    m = re.search(r'"throughput_rps": ([0-9.]+)', out.stdout)
    if not m:
        raise SystemExit(f"run_load printed no rate:\n{out.stdout}{out.stderr}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--models", default="mlp,resnet18,transformer_encoder")
    args = ap.parse_args()
    if os.cpu_count() < 2:
        raise SystemExit("needs 2 CPUs (one for the measured process, one for the load)")
    models = args.models.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        srv, address = server(tmp, cpu=0, extra=["--threads=1", "--optimize_queue=64"])
        try:
            for model in models:
                for level in (1, 2):
                    rates = [optimize_rate(address, model, level, 2, args.seconds)
                             for _ in range(args.trials)]
                    rows.append(("Optimize", f"{model} -O{level}", "server", statistics.median(rates)))
        finally:
            stop(srv)
        srv, address = server(tmp, cpu=1, extra=["--threads=1"])
        wport = os.path.join(tmp, "worker.port")
        worker = start([f"{BIN}/worker/graphopt-worker", "--insecure", "--listen=127.0.0.1:0",
                        f"--port_file={wport}", "--threads=1", "--max_concurrent=1",
                        "--queue=16", "--log_level=warn", f"--register_with={address}"],
                       tmp, "worker", 0)
        wait_port(wport, worker, "worker")
        time.sleep(1.0)
        try:
            for model in models:
                rates = [run_rate(address, model, 2, args.seconds) for _ in range(args.trials)]
                rows.append(("Run", model, "worker", statistics.median(rates)))
        finally:
            stop(worker, srv)
    print(f"{'call':<9} {'model':<26} {'per core of':<12} {'requests/s':>10}")
    for call, model, where, rate in rows:
        print(f"{call:<9} {model:<26} {where:<12} {rate:>10.1f}")


if __name__ == "__main__":
    main()
