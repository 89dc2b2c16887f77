"""A client host of netns_cluster_test: a steady stream of Coordinator.Run requests, each with a
request id of its own, sent first to this client's home replica and, on UNAVAILABLE or
DEADLINE_EXCEEDED (the replica died or cannot be reached), again to the other replica with the
SAME request id, until answered or a bound passes (RESOURCE_EXHAUSTED: the same replica again,
a little later; any other error ends the request unanswered). Runs inside its own network
namespace (ip netns exec), so every call crosses the test's bridge.

One JSON line per request goes to OUT as soon as it ends: id, input seed, send and answer times
(time.time(), comparable across the hosts' processes), the attempts (replica, status code,
time, the replica's message), and for the answer the replica, worker, replayed flag and a
digest of the outputs.

Usage: netns_client.py NAME OUT STOP_FILE HOME_ADDR OTHER_ADDR [THREADS]
Each thread sends 15 requests a second; the stream stops once STOP_FILE exists.
"""

import json
import os
import sys
import threading
import time

import grpc

from netns_requests import SEEDS, digest, run_request
from proto import coordinator_pb2_grpc

NAME, OUT, STOP_FILE, HOME, OTHER = sys.argv[1:6]
THREADS = int(sys.argv[6]) if len(sys.argv) > 6 else 1
CALL_TIMEOUT_S = 20.0    # one attempt (a worker cut off mid-request costs a probe timeout)
REQUEST_BOUND_S = 60.0   # a request not answered within this is lost
INTERVAL_S = 1 / 15.0    # per thread: a steady stream well inside the tenant's default rate
# Reconnect quickly after a replica comes back: gRPC's default backoff grows to minutes.
OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
           ("grpc.max_reconnect_backoff_ms", 500), ("grpc.enable_retries", 0)]

stubs = {a: coordinator_pb2_grpc.CoordinatorStub(grpc.insecure_channel(a, options=OPTIONS))
         for a in (HOME, OTHER)}
out_lock = threading.Lock()
out = open(OUT, "a")


def one_request(n):
    request_id = f"{NAME}-{n}"
    seed = n % SEEDS
    request = run_request(request_id, seed)
    record = {"id": request_id, "seed": seed, "sent": time.time(), "attempts": []}
    order = [HOME, OTHER]
    k = 0
    while time.time() - record["sent"] < REQUEST_BOUND_S:
        addr = order[k % 2]
        try:
            response = stubs[addr].Run(request, timeout=CALL_TIMEOUT_S)
        except grpc.RpcError as e:
            record["attempts"].append([addr, e.code().name, time.time(),
                                       (e.details() or "")[:200]])
            if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                time.sleep(0.05)  # over the tenant's rate: the same replica, a little later
                continue
            if e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                break  # neither reachability nor load: report it, do not retry
            k += 1
            if k % 2 == 0:
                time.sleep(0.05)  # both replicas refused: do not spin
            continue
        record["attempts"].append([addr, "OK", time.time()])
        record.update(answered=time.time(), replica=addr, worker=response.worker_id,
                      replayed=response.replayed, digest=digest(response),
                      worker_attempts=response.attempts)
        break
    with out_lock:
        out.write(json.dumps(record) + "\n")
        out.flush()


def stream(first):
    n = first
    next_at = time.time()
    while not os.path.exists(STOP_FILE):
        one_request(n)
        n += THREADS
        next_at = max(next_at + INTERVAL_S, time.time())
        time.sleep(max(0.0, next_at - time.time()))


threads = [threading.Thread(target=stream, args=(i,)) for i in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
out.close()
