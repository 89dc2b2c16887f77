"""One graphopt-server and three graphopt-worker processes on loopback, driven by the CLI.

Checks, in order:
  1. the three workers register and `graphopt workers` lists them as up; a run with a
     per-request memory cap (--memory-limit-mb) below its needs fails with RESOURCE_EXHAUSTED
     naming the node, and every worker stays up;
  2. every model given runs through the coordinator (`graphopt run --server`) from several
     clients at once, with outputs byte-identical to in-process execution (`graphopt run`);
  3. meanwhile a worker caught executing a request is stopped (SIGSTOP, so that the request is
     certainly still on it) and killed (SIGKILL): every request still succeeds with identical
     outputs, at least one on a later attempt; none is lost, and the server answered each
     request id exactly once;
  4. a request sent again with the same request id gets the first answer (replayed), and no
     worker executes anything for it;
  5. the killed worker, restarted on its port, rejoins (listed up again);
  6. a worker stopped with SIGSTOP is listed down within STALL_BOUND_S; with the third worker
     stopped too, requests run on the rejoined worker;
  7. with every worker gone, Run answers UNAVAILABLE naming the plan, and the server keeps
     serving (and stops cleanly on SIGTERM).

Usage: cluster_test.py CLI SERVER WORKER TMPDIR MODEL.onnx...
"""

import collections
import concurrent.futures
import hashlib
import os
import re
import signal
import subprocess
import sys
import time

CLI, SERVER, WORKER, TMP = sys.argv[1:5]
MODELS = sys.argv[5:]
CLIENTS = 3          # concurrent clients
ROUNDS = 2           # passes over the models per client
STALL_BOUND_S = 5.0  # a SIGSTOPped worker must be listed down within this
PROBE_ARGS = ["--probe_interval_ms=200", "--probe_timeout_ms=1500", "--max_run_attempts=3"]

children = []
START = time.time()


def log(msg):
    print(f"[{time.time() - START:6.1f}s] {msg}", flush=True)


def cleanup():
    for p in children:
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass


def fail(msg):
    log("FAIL: " + msg)
    for name in sorted(os.listdir(TMP)):
        if name.endswith(".log"):
            lines = open(os.path.join(TMP, name), errors="replace").read().splitlines()
            print(f"--- last lines of {name}", *lines[-15:], sep="\n", flush=True)
    cleanup()
    sys.exit(1)


def wait_port_file(path, proc, what):
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            fail(f"{what} exited with {proc.returncode} before serving")
        if os.path.exists(path):
            text = open(path).read().strip()
            if text:
                return int(text)
        time.sleep(0.05)
    fail(f"{what} did not write {path} within 30 s")


def start_server():
    port_file = os.path.join(TMP, "server.port")
    out = open(os.path.join(TMP, "server.log"), "w")
    p = subprocess.Popen([SERVER, "--insecure", "--listen=127.0.0.1:0",
                          f"--port_file={port_file}", "--op_store_dir=", "--log_level=info"]
                         + PROBE_ARGS,
                         stdout=out, stderr=subprocess.STDOUT)
    children.append(p)
    return p, wait_port_file(port_file, p, "graphopt-server")


def start_worker(i, server_port, port=0):
    port_file = os.path.join(TMP, f"worker{i}.port")
    if os.path.exists(port_file):
        os.remove(port_file)
    out = open(os.path.join(TMP, f"worker{i}.log"), "a")
    p = subprocess.Popen([WORKER, "--insecure", f"--listen=127.0.0.1:{port}",
                          f"--port_file={port_file}", f"--worker_id=w{i}",
                          f"--register_with=127.0.0.1:{server_port}", "--threads=1"],
                         stdout=out, stderr=subprocess.STDOUT)
    children.append(p)
    return p, wait_port_file(port_file, p, f"worker {i}")


def cli(*args, check=True):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
    if check and r.returncode != 0:
        fail(f"graphopt {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


Row = collections.namedtuple("Row", "id health busy executed")


def workers(addr):
    """address -> Row, from the table `graphopt workers` prints."""
    rows = {}
    for line in cli("workers", "--server", addr).stdout.splitlines()[1:]:
        if line.startswith("last errors:"):
            break
        f = line.split()
        rows[f[0]] = Row(f[1], f[2], int(f[5]), int(f[6]))
    return rows


def wait_health(addr, port, health, bound_s, what):
    start = time.time()
    while time.time() - start < bound_s:
        row = workers(addr).get(f"127.0.0.1:{port}")
        if row and row.health == health:
            return time.time() - start
        time.sleep(0.05)
    fail(f"{what}: worker on port {port} not '{health}' within {bound_s} s: {workers(addr)}")


def digest_dir(d):
    h = hashlib.sha256()
    for name in sorted(os.listdir(d)):
        h.update(name.encode())
        h.update(open(os.path.join(d, name), "rb").read())
    return h.hexdigest()


def run_remote(addr, model, tag, request_id):
    """(tag, (outputs digest, worker id, attempt, replayed) or None, error or None)."""
    out_dir = os.path.join(TMP, "out", tag)
    os.makedirs(out_dir, exist_ok=True)
    r = cli("run", model, "--server", addr, "--seed", "7", "--request-id", request_id,
            "-o", out_dir, check=False)
    if r.returncode != 0:
        return tag, None, f"exit {r.returncode}: {r.stdout}{r.stderr}"
    m = re.search(r"ran on worker (\S+) \((\S+)\), attempt (\d+)", r.stdout)
    if not m:
        return tag, None, f"no 'ran on worker' line: {r.stdout}"
    return tag, (digest_dir(out_dir), m.group(1), int(m.group(3)), ", replayed" in r.stdout), None


def catch_busy_worker(addr, ports, procs, deadline):
    """SIGSTOPs a worker seen executing, confirms it still holds a request, SIGKILLs it."""
    while time.time() < deadline:
        for address, row in workers(addr).items():
            if row.busy == 0:
                continue
            idx = ports.index(int(address.rsplit(":", 1)[1]))
            procs[idx].send_signal(signal.SIGSTOP)
            # Stopped, it cannot answer: if the coordinator still counts a call on it, that
            # call fails when the worker dies (well before the probe timeout marks it down).
            row = workers(addr).get(address)
            if row and row.busy > 0 and row.health == "up":
                procs[idx].kill()
                procs[idx].wait()
                return idx
            procs[idx].send_signal(signal.SIGCONT)
        time.sleep(0.01)
    return None


def main():
    server, server_port = start_server()
    addr = f"127.0.0.1:{server_port}"
    procs, ports = [], []
    for i in range(3):
        p, port = start_worker(i, server_port)
        procs.append(p)
        ports.append(port)
    for port in ports:
        wait_health(addr, port, "up", 15, "registration")
    log(f"server on {server_port}, workers on {ports}: all up")

    # A per-request memory cap far below the run's needs: RESOURCE_EXHAUSTED naming the node,
    # and every worker stays up (the cap is enforced before the allocation).
    mlp = next(m for m in MODELS if os.path.basename(os.path.dirname(m)) == "mlp")
    r = cli("run", mlp, "--bind", "batch=100000", "--memory-limit-mb", "1", "--server", addr,
            check=False)
    if (r.returncode != 1 or "RESOURCE_EXHAUSTED" not in r.stderr or "node '" not in r.stderr
            or "attempt" in r.stderr):
        fail(f"--memory-limit-mb 1: exit {r.returncode}, want 1 with RESOURCE_EXHAUSTED naming "
             f"a node, from the first worker (the cap fails alike everywhere, so no retry):"
             f"\n{r.stdout}{r.stderr}")
    for port in ports:
        wait_health(addr, port, "up", 5, "after the over-budget run")
    log(f"--memory-limit-mb 1 on the server: {r.stderr.strip().splitlines()[-1][:160]}")

    # In-process references (same seed, so the same random inputs).
    ref = {}
    for model in MODELS:
        d = os.path.join(TMP, "ref", os.path.basename(os.path.dirname(model)))
        os.makedirs(d, exist_ok=True)
        cli("run", model, "--seed", "7", "-o", d)
        ref[model] = digest_dir(d)
    log(f"in-process references for {len(MODELS)} models")

    # Concurrent clients; a worker dies while executing.
    jobs = [(model, f"c{c}r{r}m{m}") for c in range(CLIENTS) for r in range(ROUNDS)
            for m, model in enumerate(MODELS)]
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(run_remote, addr, model, tag, f"req-{tag}")
                   for model, tag in jobs]
        killed = catch_busy_worker(addr, ports, procs, time.time() + 120)
        if killed is not None:
            log(f"SIGKILL worker {killed} (port {ports[killed]}) while it executed a request")
        results = [f.result() for f in futures]
    if killed is None:
        fail("no worker was ever seen executing")
    retried = 0
    for (model, tag), (_, res, err) in zip(jobs, results):
        if err:
            fail(f"{tag} ({model}): {err}")
        if res[0] != ref[model]:
            fail(f"{tag} ({model}): outputs differ from in-process execution")
        if res[3]:
            fail(f"{tag}: answered as a replay, but its id was new")
        retried += res[2] > 1
    log(f"{len(jobs)} concurrent requests: all answered, outputs identical to in-process; "
        f"{retried} ran on a later attempt")
    if retried == 0:
        fail("the killed worker's request was not retried (no attempt > 1)")
    # Each request id answered exactly once by the server (a retry inside the coordinator is
    # not a second answer).
    answered = collections.Counter(
        re.findall(r"request_id='(req-[^']*)'.* replayed=false .*status=OK",
                   open(os.path.join(TMP, "server.log")).read()))
    for _, tag in jobs:
        if answered[f"req-{tag}"] != 1:
            fail(f"request req-{tag} answered {answered[f'req-{tag}']} times in the server log")
    log("the server log shows each request id answered once")

    # The same request id again: the first answer, executed by nobody. (The workers count
    # executions; the coordinator reads the counts with its probes: wait for a probe or two.)
    time.sleep(0.6)
    before = sum(row.executed for row in workers(addr).values())
    model, tag = jobs[-1]
    _, res, err = run_remote(addr, model, tag + "-again", f"req-{tag}")
    if err or res[0] != ref[model] or not res[3]:
        fail(f"request id replay: {err or 'different outputs' if res[0] != ref[model] else 'not replayed'}")
    time.sleep(0.6)
    after = sum(row.executed for row in workers(addr).values())
    if after != before:
        fail(f"request id replay executed again ({before} -> {after} executions)")
    log("a repeated request id gets the first answer, executed once")

    # The killed worker comes back on its port and rejoins.
    procs[killed], _ = start_worker(killed, server_port, ports[killed])
    took = wait_health(addr, ports[killed], "up", 15, "rejoin")
    log(f"worker {killed} restarted and rejoined after {took:.2f} s")

    # A stalled worker is detected within the bound. With the third stopped too, requests run
    # on the rejoined worker.
    stalled = [i for i in range(3) if i != killed]
    procs[stalled[0]].send_signal(signal.SIGSTOP)
    took = wait_health(addr, ports[stalled[0]], "down", STALL_BOUND_S, "SIGSTOP")
    log(f"SIGSTOPped worker {stalled[0]} listed down after {took:.2f} s (bound {STALL_BOUND_S} s)")
    procs[stalled[1]].send_signal(signal.SIGSTOP)
    wait_health(addr, ports[stalled[1]], "down", STALL_BOUND_S, "SIGSTOP")
    for k, model in enumerate(MODELS):
        _, res, err = run_remote(addr, model, f"rejoin{k}", f"rejoin-{k}")
        if err or res[0] != ref[model]:
            fail(f"on the rejoined worker: {err or 'different outputs'}")
        if res[1] != f"w{killed}":
            fail(f"with two workers stopped, ran on {res[1]}, not on the rejoined w{killed}")
    log(f"the rejoined worker w{killed} ran {len(MODELS)} models while the others were stopped")
    for i in stalled:
        procs[i].send_signal(signal.SIGCONT)
    for i in stalled:
        wait_health(addr, ports[i], "up", 15, "SIGCONT")
    log("the stopped workers are up again after SIGCONT")

    # All workers gone: UNAVAILABLE naming the plan; the server still answers.
    for p in procs:
        p.kill()
        p.wait()
    for port in ports:
        wait_health(addr, port, "down", 10, "all killed")
    r = cli("run", MODELS[0], "--server", addr, check=False)
    if r.returncode != 1 or "UNAVAILABLE" not in r.stderr or "plan sha256:" not in r.stderr:
        fail(f"no workers: expected UNAVAILABLE naming the plan, got {r.returncode}: {r.stderr}")
    log("no live worker: " + r.stderr.strip().splitlines()[-1])
    workers(addr)

    server.send_signal(signal.SIGTERM)
    if server.wait(timeout=30) != 0:
        fail(f"server exited {server.returncode} on SIGTERM")
    log("PASS")


if __name__ == "__main__":
    try:
        main()
    finally:
        cleanup()
