"""Real graphopt-server and graphopt-worker processes on loopback for the shared-service tests.

A Cluster starts one server and N workers in secure mode (a dev CA made by
scripts/make_dev_certs.sh, mTLS between server and workers, bearer tokens for two tenants and
an admin) or insecure mode, and stops them (SIGKILL after SIGTERM) when the test ends. Stubs are
the wire contract's own (proto/*_pb2_grpc), generated at build time into this folder's runfiles.
Results are written as JUnit XML to $XML_OUTPUT_FILE, one test case per check, so that the test
command counts them one by one.
"""

import hashlib
import os
import signal
import subprocess
import sys
import time
import unittest
import xml.etree.ElementTree as ET

import grpc

from proto import coordinator_pb2, coordinator_pb2_grpc, graph_pb2, optimizer_pb2
from proto import optimizer_pb2_grpc, worker_pb2, worker_pb2_grpc

RUNFILES = os.path.join(os.environ.get("TEST_SRCDIR", ""), "graphopt")
TMP = os.environ.get("TEST_TMPDIR", "/tmp")
SERVER = os.path.join(RUNFILES, "server/graphopt-server")
WORKER = os.path.join(RUNFILES, "worker/graphopt-worker")
CLI = os.path.join(RUNFILES, "client/graphopt")
MAKE_CERTS = os.path.join(RUNFILES, "scripts/make_dev_certs.sh")
MAX_MESSAGE = 512 * 1024 * 1024
START = time.time()


def log(msg):
    print(f"[{time.time() - START:6.1f}s] {msg}", flush=True)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def new_token(tenant=None, admin=False, label="test"):
    """A fresh token and its tokens-file line, from `graphopt token new`."""
    args = [CLI, "token", "new", "--label", label]
    args += ["--admin"] if admin else ["--tenant", tenant]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60, check=True)
    token = line = None
    for text in r.stdout.splitlines():
        key, _, rest = text.partition(":")
        if key.strip() == "token":
            token = rest.strip()
        elif key.strip() == "tokens file line":
            line = rest.strip()
    assert token and line, f"graphopt token new printed: {r.stdout!r}"
    return token, line


def make_certs(folder):
    subprocess.run([MAKE_CERTS, folder, "--client"], check=True, capture_output=True, timeout=120)
    return folder


def wait_port_file(path, proc, what, bound_s=30):
    deadline = time.time() + bound_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before serving")
        if os.path.exists(path):
            text = open(path).read().strip()
            if text:
                return int(text)
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not write {path} within {bound_s} s")


def cpu_seconds(pid):
    """User + system CPU time a process has used, from /proc (all its threads)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    ticks = os.sysconf(os.sysconf_names["SC_CLK_TCK"])
    return (int(fields[11]) + int(fields[12])) / ticks


class Process:
    def __init__(self, name, args, log_path):
        self.name = name
        self.log_path = log_path
        self.out = open(log_path, "a")
        self.proc = subprocess.Popen(args, stdout=self.out, stderr=subprocess.STDOUT)
        self.port = None

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def stop(self, grace_s=10):
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()

    def tail(self, n=20):
        try:
            return "".join(open(self.log_path, errors="replace").readlines()[-n:])
        except OSError:
            return ""


class Cluster:
    """One server and `workers` workers. secure: TLS + tokens + mTLS; else --insecure."""

    def __init__(self, name, workers=2, secure=True, server_args=(), worker_args=(),
                 worker_threads=1):
        self.name = name
        self.secure = secure
        self.dir = os.path.join(TMP, name)
        os.makedirs(self.dir, exist_ok=True)
        self.processes = []
        self.tokens = {}
        if secure:
            self.certs = make_certs(os.path.join(self.dir, "certs"))
            lines = []
            for who, tenant, admin in (("acme", "acme", False), ("globex", "globex", False),
                                       ("admin", None, True)):
                token, line = new_token(tenant, admin, label=f"{who}-test")
                self.tokens[who] = token
                lines.append(line)
            self.tokens_file = os.path.join(self.dir, "tokens")
            with open(self.tokens_file, "w") as f:
                f.write("\n".join(lines) + "\n")
        self.server = self.start_server(list(server_args))
        self.address = f"127.0.0.1:{self.server.port}"
        self.workers = [self.start_worker(i, list(worker_args), worker_threads)
                        for i in range(workers)]
        self.wait_workers_up(len(self.workers))

    # --- processes -----------------------------------------------------------------------

    def cert(self, name):
        return os.path.join(self.certs, name)

    def start_server(self, extra):
        port_file = os.path.join(self.dir, "server.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        args = [SERVER, "--listen=127.0.0.1:0", f"--port_file={port_file}", "--op_store_dir=",
                "--probe_interval_ms=200", "--log_level=info"]
        if self.secure:
            args += [f"--tls_cert={self.cert('server.pem')}", f"--tls_key={self.cert('server.key')}",
                     f"--tls_ca={self.cert('ca.pem')}", f"--tokens_file={self.tokens_file}"]
        else:
            args += ["--insecure"]
        p = Process("server", args + extra, os.path.join(self.dir, "server.log"))
        self.processes.append(p)
        p.port = wait_port_file(port_file, p.proc, "graphopt-server")
        return p

    def start_worker(self, i, extra, threads=1, worker_id=None):
        port_file = os.path.join(self.dir, f"worker{i}.port")
        if os.path.exists(port_file):
            os.remove(port_file)
        args = [WORKER, "--listen=127.0.0.1:0", f"--port_file={port_file}",
                f"--worker_id={worker_id or f'w{i}'}", f"--register_with={self.address}",
                f"--threads={threads}"]
        if self.secure:
            args += [f"--tls_cert={self.cert('worker.pem')}", f"--tls_key={self.cert('worker.key')}",
                     f"--tls_ca={self.cert('ca.pem')}", "--server_tls_name=graphopt-server"]
        else:
            args += ["--insecure"]
        p = Process(f"worker{i}", args + extra, os.path.join(self.dir, f"worker{i}.log"))
        self.processes.append(p)
        p.port = wait_port_file(port_file, p.proc, f"worker {i}")
        return p

    def stop(self):
        for p in reversed(self.processes):
            p.stop()

    def logs(self):
        return "\n".join(f"--- {p.name} (last lines)\n{p.tail()}" for p in self.processes)

    # --- channels --------------------------------------------------------------------------

    def channel(self, address=None, client_cert=None, ca="ca.pem", server_name=None):
        """A channel to the server (or `address`): TLS trusting the dev CA when secure."""
        address = address or self.address
        options = [("grpc.max_receive_message_length", MAX_MESSAGE),
                   ("grpc.max_send_message_length", MAX_MESSAGE)]
        if not self.secure:
            return grpc.insecure_channel(address, options=options)
        key = chain = None
        if client_cert:
            chain = read(self.cert(client_cert + ".pem"))
            key = read(self.cert(client_cert + ".key"))
        creds = grpc.ssl_channel_credentials(root_certificates=read(self.cert(ca)),
                                             private_key=key, certificate_chain=chain)
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        return grpc.secure_channel(address, creds, options=options)

    def optimizer(self, **kw):
        return optimizer_pb2_grpc.GraphOptimizerStub(self.channel(**kw))

    def coordinator(self, **kw):
        return coordinator_pb2_grpc.CoordinatorStub(self.channel(**kw))

    def worker_stub(self, worker, client_cert=None):
        return worker_pb2_grpc.WorkerStub(self.channel(
            f"127.0.0.1:{worker.port}", client_cert=client_cert, server_name="graphopt-worker"))

    def md(self, who=None, tenant=None):
        """Call metadata: the token of `who` ("acme", "globex", "admin") and a tenant header."""
        m = []
        if who:
            m.append(("authorization", f"Bearer {self.tokens[who]}"))
        if tenant:
            m.append(("graphopt-tenant", tenant))
        return m

    def admin_md(self):
        return self.md("admin") if self.secure else []

    def list_workers(self):
        return self.coordinator().ListWorkers(coordinator_pb2.ListWorkersRequest(),
                                              metadata=self.admin_md(), timeout=10).workers

    def wait_workers_up(self, count, bound_s=20):
        deadline = time.time() + bound_s
        while time.time() < deadline:
            try:
                up = [w for w in self.list_workers() if w.health == "up"]
                if len(up) >= count:
                    return up
            except grpc.RpcError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{count} workers not up within {bound_s} s:\n{self.logs()}")

    def health(self, address=None, timeout=2.0, server_name=None):
        """grpc.health.v1 Check of the server (or `address`): "SERVING", "NOT_SERVING", ..."""
        return health_check(self.channel(address, server_name=server_name), timeout)


def health_check(channel, timeout=2.0):
    """grpc.health.v1.Health/Check with an empty service name, without the grpc_health module
    (not in Debian's python3-grpcio): the request is empty, the answer's field 1 the status."""
    call = channel.unary_unary("/grpc.health.v1.Health/Check",
                               request_serializer=lambda _: b"",
                               response_deserializer=lambda b: b)
    answer = call(None, timeout=timeout)
    status = answer[1] if len(answer) >= 2 and answer[0] == 0x08 else 0
    return {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}.get(status, "?")


# --- graphs ------------------------------------------------------------------------------------

def tensor(name, dtype, dims, raw=b"", strings=None):
    t = graph_pb2.Tensor(name=name, dtype=dtype, dims=list(dims))
    if strings is not None:
        t.string_data.extend(strings)
    else:
        t.raw_data = raw
    return t


def int64s(values):
    import struct
    return struct.pack(f"<{len(values)}q", *values)


def floats(values):
    import struct
    return struct.pack(f"<{len(values)}f", *values)


def value(name, dtype, dims=None):
    v = graph_pb2.ValueInfo(name=name)
    v.type.dtype = dtype
    if dims is not None:
        for d in dims:
            v.type.shape.dims.add(size=d)
    return v


def named(name, t):
    return worker_pb2.NamedTensor(name=name, tensor=t)


# --- JUnit XML -----------------------------------------------------------------------------

class _XmlResult(unittest.TextTestResult):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.cases = []
        self._start = None

    def startTest(self, test):
        self._start = time.time()
        super().startTest(test)

    def _record(self, test, kind, detail=""):
        self.cases.append((test, kind, detail, time.time() - (self._start or time.time())))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failure", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)


def run_tests(suite_name):
    """Runs the unittest cases of __main__, writes JUnit XML, exits 1 on any failure."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules["__main__"])
    runner = unittest.TextTestRunner(verbosity=2, resultclass=_XmlResult, stream=sys.stdout)
    result = runner.run(suite)
    path = os.environ.get("XML_OUTPUT_FILE")
    if path:
        root = ET.Element("testsuites")
        s = ET.SubElement(root, "testsuite", name=suite_name, tests=str(len(result.cases)),
                          failures=str(len(result.failures)), errors=str(len(result.errors)))
        for test, kind, detail, seconds in result.cases:
            c = ET.SubElement(s, "testcase", classname=type(test).__name__,
                              name=getattr(test, "_testMethodName", str(test)),
                              time=f"{seconds:.3f}")
            if kind in ("failure", "error"):
                ET.SubElement(c, kind, message=detail.splitlines()[-1] if detail else "").text = detail
            elif kind == "skipped":
                ET.SubElement(c, "skipped", message=detail)
        ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    sys.exit(0 if result.wasSuccessful() else 1)
