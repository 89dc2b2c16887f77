"""How much faster graphopt-server answers a repeated Optimize from its result cache.

Starts graphopt-server (--insecure, loopback) and sends one model's Optimize request over and
over: the very first request (a miss, on a server that has run no pipeline yet), then per trial
one request with no_cache (the pipeline runs, as for any request not seen before) and hits (the
same request without no_cache), interleaved. Times are of the Optimize RPC as the client sees
it and, in brackets, the server's own (its log line's duration_ms, admission to response).
Two ways to send the model: weights ahead as blobs (what the CLI and the Python client do for
large models: the request is a few hundred KiB) and weights inline (the request carries every
byte; a hit still pays for moving and hashing them; the server runs with
--optimize_cache_mb=1024 so that such a result fits a tenant's share). Medians of --trials;
every hit must return the same bytes as the pipeline.

    bench/optimize_cache.sh [--model resnet50] [--opt_level 2] [--trials 7]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import grpc
import onnx

import graphopt_client
from graphopt_client import optimizer_pb2, optimizer_pb2_grpc, weights


class ServerLog:
    """The server's own time for each Optimize call: duration_ms of its log line (from the
    request's admission to the response, without the transport)."""

    def __init__(self, path: str):
        self._file = open(path, errors="replace")

    def last_duration_ms(self) -> float:
        found = None
        for _ in range(100):
            for line in self._file.read().splitlines():
                match = re.search(r"\] Optimize .* duration_ms=([0-9.]+)", line)
                if match:
                    found = float(match.group(1))
            if found is not None:
                return found
            time.sleep(0.01)  # the line is written as the call completes
        raise RuntimeError("no Optimize line in the server's log")


def start_server(binary: str, work_dir: str):
    port_file = os.path.join(work_dir, "port")
    log = open(os.path.join(work_dir, "server.log"), "wb")
    process = subprocess.Popen([binary, "--insecure", "--listen=127.0.0.1:0",
                                f"--port_file={port_file}", "--threads=2", "--op_store_dir=",
                                "--optimize_cache_mb=1024"],
                               stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"graphopt-server exited with {process.returncode}")
        if os.path.exists(port_file) and open(port_file).read().strip():
            return process, f"127.0.0.1:{open(port_file).read().strip()}"
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("graphopt-server did not start in 30 s")


def measure(stub, log: ServerLog, request: optimizer_pb2.OptimizeRequest, trials: int,
            label: str, hits_per_trial: int) -> None:
    def timed(request):
        start = time.perf_counter()
        response = stub.Optimize(request, timeout=600)
        return (time.perf_counter() - start) * 1e3, log.last_duration_ms(), response

    uncached = optimizer_pb2.OptimizeRequest()
    uncached.CopyFrom(request)
    uncached.options.no_cache = True
    cached = optimizer_pb2.OptimizeRequest()
    cached.CopyFrom(request)
    # The very first request of the model: a miss on a server that has not run a pipeline yet.
    first_ms, first_server, first = timed(cached)
    assert first.cache == optimizer_pb2.CACHE_RESULT_MISS, first.cache
    miss_ms, miss_server, hit_ms, hit_server = [], [], [], []
    for _ in range(trials):
        ms, server_ms, r = timed(uncached)
        assert r.cache == optimizer_pb2.CACHE_RESULT_NOT_USED
        miss_ms.append(ms)
        miss_server.append(server_ms)
        reference = r.onnx_model
        for _ in range(hits_per_trial):
            ms, server_ms, r = timed(cached)
            assert r.cache == optimizer_pb2.CACHE_RESULT_HIT, r.cache
            assert r.onnx_model == reference, "a hit returned other bytes than the pipeline"
            hit_ms.append(ms)
            hit_server.append(server_ms)
    med = statistics.median
    print(f"| {label} | {len(request.SerializeToString()) / 2**20:.2f} | "
          f"{first_ms:.1f} ({first_server:.1f}) | {med(miss_ms):.1f} ({med(miss_server):.1f}) | "
          f"{med(hit_ms):.2f} ({med(hit_server):.2f}) | "
          f"{first_ms / med(hit_ms):.1f}x ({first_server / med(hit_server):.1f}x) | "
          f"{med(miss_ms) / med(hit_ms):.1f}x ({med(miss_server) / med(hit_server):.1f}x) |",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--model_file", required=True)
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--opt_level", type=int, default=2)
    parser.add_argument("--trials", type=int, default=7)
    args = parser.parse_args()

    work_dir = tempfile.mkdtemp(prefix="optimize_cache_bench")
    process, address = start_server(args.server, work_dir)
    try:
        options = [("grpc.max_send_message_length", 2**31 - 1),
                   ("grpc.max_receive_message_length", 2**31 - 1)]
        stub = optimizer_pb2_grpc.GraphOptimizerStub(grpc.insecure_channel(address, options))
        # The channel's connection is made here, not in the first timed request.
        stub.ListPasses(optimizer_pb2.ListPassesRequest(), timeout=30)
        with open(args.model_file, "rb") as f:
            model_bytes = f.read()
        print(f"{args.model} -O{args.opt_level}, {len(model_bytes) / 2**20:.1f} MiB, "
              f"{args.trials} trials, medians; ms of the Optimize RPC as the client sees it "
              "(in brackets: the server's own, its log line's duration_ms)\n")
        print("| weights | request MiB | first request (miss) ms | pipeline (no_cache) ms | "
              "hit ms | first / hit | pipeline / hit |")
        print("| --- | --- | --- | --- | --- | --- | --- |")

        model = onnx.load_model_from_string(model_bytes)
        blobs = weights.externalize_onnx_initializers(model)
        with graphopt_client.Client(address) as client:
            client.upload_blobs(blobs.items())
        light = optimizer_pb2.OptimizeRequest(onnx_model=model.SerializeToString())
        light.pipeline.opt_level = args.opt_level
        log = ServerLog(os.path.join(work_dir, "server.log"))
        measure(stub, log, light, args.trials, "as blobs", hits_per_trial=5)

        inline = optimizer_pb2.OptimizeRequest(onnx_model=model_bytes)
        inline.pipeline.opt_level = args.opt_level
        measure(stub, log, inline, max(3, args.trials // 2), "inline", hits_per_trial=1)
    finally:
        process.kill()
        process.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
