"""Two graphopt-server replicas and graphopt-workers sharing one real etcd, driven by the CLI.

Checks, in order:
  1. a worker started with --etcd_endpoints is listed by both replicas (source etcd) without
     --register_with or --workers;
  2. a Run with a request id on replica 1, sent again on replica 2, is answered there from the
     first (replayed, identical outputs, executed once); the id with other inputs is refused with
     INVALID_ARGUMENT;
  3. a worker stopped with SIGTERM leaves both replicas' lists at once (its lease revoked); one
     killed with SIGKILL leaves them once its lease's TTL has passed;
  4. with etcd gone, a Run with a request id fails with UNAVAILABLE naming etcd instead of
     running without the shared check.

Usage: etcd_replicas_test.py CLI SERVER WORKER TMPDIR MODEL.onnx
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time

CLI, SERVER, WORKER, TMP, MODEL = sys.argv[1:6]
ETCD = os.environ.get("GRAPHOPT_ETCD", "/usr/bin/etcd")
LEASE_TTL_S = 2

children = []
START = time.time()


def log(msg):
    print(f"[{time.time() - START:6.1f}s] {msg}", flush=True)


def cleanup():
    for p in children:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)


def fail(msg):
    log(f"FAIL: {msg}")
    for name in sorted(os.listdir(TMP)):
        if name.endswith(".log"):
            print(f"--- {name}\n{open(os.path.join(TMP, name)).read()[-3000:]}")
    cleanup()
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(name, args):
    p = subprocess.Popen(args, stdout=open(os.path.join(TMP, f"{name}.log"), "w"),
                         stderr=subprocess.STDOUT)
    children.append(p)
    return p


def wait_port_file(path, proc, what):
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            fail(f"{what} exited with {proc.returncode} before serving")
        if os.path.exists(path) and open(path).read().strip():
            return int(open(path).read().strip())
        time.sleep(0.05)
    fail(f"{what} did not write {path} within 30 s")


def cli(*args, check=True):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        fail(f"graphopt {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r


def workers(port):
    """address -> (worker id, source) as `graphopt workers` lists them."""
    rows = {}
    for line in cli("workers", "--server", f"127.0.0.1:{port}").stdout.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 4 and ":" in cols[0]:
            rows[cols[0]] = (cols[1], cols[3])
    return rows


def eventually(pred, what, limit_s=10.0):
    deadline = time.time() + limit_s
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.1)
    fail(f"not within {limit_s} s: {what}")


def digest_dir(d):
    return [(name, open(os.path.join(d, name), "rb").read()) for name in sorted(os.listdir(d))]


def start_worker(name, etcd):
    port_file = os.path.join(TMP, f"{name}.port")
    p = spawn(name, [WORKER, "--insecure", "--listen=127.0.0.1:0", f"--port_file={port_file}",
                     f"--worker_id={name}", f"--etcd_endpoints={etcd}",
                     f"--etcd_lease_ttl_s={LEASE_TTL_S}", "--shutdown_grace_s=0"])
    return p, f"127.0.0.1:{wait_port_file(port_file, p, name)}"


def run(port, seed, out, request_id="job-1", check=True):
    return cli("run", MODEL, "--server", f"127.0.0.1:{port}", "--seed", str(seed),
               "--request-id", request_id, "-o", os.path.join(TMP, out), check=check)


def main():
    if not os.access(ETCD, os.X_OK):
        fail(f"no etcd binary at {ETCD} (Debian's etcd-server)")
    client_port, peer_port = free_port(), free_port()
    etcd = f"127.0.0.1:{client_port}"
    etcd_proc = spawn("etcd", [ETCD, "--name=t", f"--data-dir={TMP}/etcd",
                               f"--listen-client-urls=http://{etcd}",
                               f"--advertise-client-urls=http://{etcd}",
                               f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                               f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                               f"--initial-cluster=t=http://127.0.0.1:{peer_port}"])
    ports = []
    for i in (1, 2):
        port_file = os.path.join(TMP, f"server{i}.port")
        p = spawn(f"server{i}", [SERVER, "--insecure", "--listen=127.0.0.1:0",
                                 f"--port_file={port_file}", "--op_store_dir=",
                                 f"--etcd_endpoints={etcd}", "--probe_interval_ms=200",
                                 "--shutdown_grace_s=0"])
        ports.append(wait_port_file(port_file, p, f"server {i}"))
    log(f"etcd {etcd}, replicas on {ports}")

    w1, w1_address = start_worker("w1", etcd)
    for port in ports:
        eventually(lambda port=port: workers(port).get(w1_address) == ("w1", "etcd"),
                   f"replica :{port} lists w1 from etcd")
    log("1. both replicas list the worker from its etcd key")

    first = run(ports[0], 7, "o1")
    again = run(ports[1], 7, "o2")
    if ", replayed" in first.stdout or ", replayed" not in again.stdout:
        fail(f"expected a first run and a replay:\n{first.stdout}\n{again.stdout}")
    if digest_dir(f"{TMP}/o1") != digest_dir(f"{TMP}/o2"):
        fail("the replayed outputs differ from the first")
    other = run(ports[1], 8, "o3", check=False)
    if other.returncode == 0 or "INVALID_ARGUMENT" not in other.stdout + other.stderr:
        fail(f"the id reused for other inputs was not refused:\n{other.stdout}{other.stderr}")
    log("2. a request id runs once across replicas; reused for other inputs, refused")

    w1.send_signal(signal.SIGTERM)
    for port in ports:
        eventually(lambda port=port: w1_address not in workers(port),
                   f"replica :{port} forgets w1 after SIGTERM", limit_s=3.0)
    w2, w2_address = start_worker("w2", etcd)
    eventually(lambda: w2_address in workers(ports[0]), "replica lists w2")
    w2.kill()
    killed_at = time.time()
    eventually(lambda: w2_address not in workers(ports[0]),
               "replica forgets w2 after its lease's TTL", limit_s=LEASE_TTL_S + 8.0)
    log(f"3. workers leave on SIGTERM at once, on SIGKILL after "
        f"{time.time() - killed_at:.1f} s (lease TTL {LEASE_TTL_S} s)")

    etcd_proc.kill()
    etcd_proc.wait()
    gone = run(ports[0], 7, "o4", request_id="job-2", check=False)
    text = gone.stdout + gone.stderr
    if gone.returncode == 0 or "UNAVAILABLE" not in text or "etcd" not in text:
        fail(f"with etcd gone, a Run with a request id should fail UNAVAILABLE naming etcd:\n{text}")
    error = next(line for line in text.splitlines() if "UNAVAILABLE" in line)
    log(f"4. without etcd, a Run with a request id is refused: {error}")
    cleanup()
    print("PASS")


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - any crash must still stop the children
        fail(f"{type(e).__name__}: {e}")
