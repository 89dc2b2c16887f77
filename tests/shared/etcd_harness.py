"""Real etcd members (Debian's etcd-server) and graphopt-server replicas sharing them, for the
scale-out tests. Members listen on loopback ports picked free; data lives in the test's tmpdir."""

import os
import shutil
import socket
import time

import harness

ETCD = os.environ.get("GRAPHOPT_ETCD") or shutil.which("etcd") or "/usr/bin/etcd"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def crash(process):
    """SIGKILL: no shutdown handler runs, as when a machine dies."""
    if process.alive():
        process.proc.kill()
        process.proc.wait()
    process.out.close()


class EtcdCluster:
    """`members` etcd processes forming one cluster; kill(i) / restart(i) keep the data."""

    def __init__(self, folder, members=1, certs=None):
        """certs: a make_dev_certs.sh folder: serve clients over TLS with etcd.pem (it names
        IP 127.0.0.1) and require client certificates of its CA."""
        self.dir = folder
        self.certs = certs
        os.makedirs(folder, exist_ok=True)
        self.names = [f"m{i}" for i in range(members)]
        self.client = [f"127.0.0.1:{free_port()}" for _ in range(members)]
        self.peer = [f"http://127.0.0.1:{free_port()}" for _ in range(members)]
        self.initial = ",".join(f"{n}={p}" for n, p in zip(self.names, self.peer))
        self.procs = [None] * members
        for i in range(members):
            self.start(i)
        self.wait_ready()

    @property
    def endpoints(self):
        return ",".join(self.client)

    def start(self, i):
        scheme = "https" if self.certs else "http"
        args = [ETCD, f"--name={self.names[i]}", f"--data-dir={self.dir}/{self.names[i]}.etcd",
                f"--listen-client-urls={scheme}://{self.client[i]}",
                f"--advertise-client-urls={scheme}://{self.client[i]}",
                f"--listen-peer-urls={self.peer[i]}",
                f"--initial-advertise-peer-urls={self.peer[i]}",
                f"--initial-cluster={self.initial}", "--initial-cluster-state=new",
                "--initial-cluster-token=graphopt-test", "--heartbeat-interval=50",
                "--election-timeout=500", "--max-request-bytes=33554432", "--logger=zap",
                "--log-outputs=stderr"]
        if self.certs:
            args += [f"--cert-file={self.certs}/etcd.pem", f"--key-file={self.certs}/etcd.key",
                     f"--trusted-ca-file={self.certs}/ca.pem", "--client-cert-auth"]
        self.procs[i] = harness.Process(f"etcd-{self.names[i]}", args,
                                        os.path.join(self.dir, f"{self.names[i]}.log"))

    def kill(self, i):
        crash(self.procs[i])

    def restart(self, i):
        self.kill(i)
        self.start(i)

    def wait_ready(self, bound_s=30):
        import grpc  # noqa: F401  (only to fail early when absent)
        deadline = time.time() + bound_s
        while time.time() < deadline:
            for c in self.client:
                try:
                    with socket.create_connection(tuple([c.split(":")[0], int(c.split(":")[1])]),
                                                  timeout=0.5):
                        pass
                except OSError:
                    break
            else:
                # Listening is not serving: wait for the election (a few hundred ms).
                time.sleep(1.0)
                return
            time.sleep(0.1)
        raise RuntimeError(f"etcd not up within {bound_s} s")

    def stop(self):
        for p in self.procs:
            if p is not None:
                p.stop(grace_s=2)


class Replica:
    """One graphopt-server with --etcd_endpoints; restart() keeps its flags (and port)."""

    def __init__(self, name, folder, endpoints, extra=(), wait=True):
        self.name = name
        self.dir = folder
        self.endpoints = endpoints
        self.extra = list(extra)
        self.port = free_port()
        self.proc = None
        self.start(wait)

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def start(self, wait=True):
        port_file = os.path.join(self.dir, f"{self.name}.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        args = [harness.SERVER, f"--listen=127.0.0.1:{self.port}", f"--port_file={port_file}",
                "--insecure", "--op_store_dir=", f"--etcd_endpoints={self.endpoints}",
                "--etcd_lease_ttl_s=3", "--probe_interval_ms=200", "--log_level=info"]
        self.proc = harness.Process(self.name, args + self.extra,
                                    os.path.join(self.dir, f"{self.name}.log"))
        if wait:
            harness.wait_port_file(port_file, self.proc.proc, self.name)

    def kill(self):
        crash(self.proc)

    def restart(self):
        self.kill()
        self.start()
