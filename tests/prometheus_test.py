"""Debian's real Prometheus scrapes a graphopt-server and a graphopt-worker on loopback.

The server and a worker run with --metrics_listen (port 0, the port read back from
--metrics_port_file) and --log_format=json; Prometheus scrapes both every second. After a few
Optimize and Run calls through the CLI, Prometheus's HTTP API (/api/v1/query) must show:
  - up == 1 for both jobs;
  - Optimize calls answered OK, from the server job; Execute calls from the worker job;
  - the worker up as the coordinator sees it (graphopt_worker_up);
  - per-pass times, plan-cache misses, queue gauges;
and `promtool check metrics` must accept both expositions. The JSON logs must parse line by
line, and the trace id of a Run in the server's log must appear in the worker's log on that
Run's Execute.

Where /usr/bin/prometheus is missing the test is skipped visibly (JUnit <skipped/>).

Usage: prometheus_test.py CLI SERVER WORKER TMPDIR MODEL.onnx
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

CLI, SERVER, WORKER, TMP, MODEL = sys.argv[1:6]
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
children = []
START = time.time()


def log(msg):
    print(f"[{time.time() - START:6.1f}s] {msg}", flush=True)


def write_junit(skipped_reason=None):
    path = os.environ.get("XML_OUTPUT_FILE")
    if not path:
        return
    inner = (f'<skipped message="{skipped_reason}"/>' if skipped_reason else "")
    with open(path, "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<testsuites><testsuite name="prometheus_test" tests="1" failures="0" '
                f'errors="0" skipped="{1 if skipped_reason else 0}">'
                f'<testcase name="prometheus_scrape" classname="tests.prometheus_test">'
                f'{inner}</testcase></testsuite></testsuites>\n')


def cleanup():
    for p in children:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in children:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def fail(msg):
    log("FAIL: " + msg)
    for name in sorted(os.listdir(TMP)):
        if name.endswith(".log"):
            lines = open(os.path.join(TMP, name), errors="replace").read().splitlines()
            print(f"--- last lines of {name}", *lines[-15:], sep="\n", flush=True)
    cleanup()
    sys.exit(1)


def wait_file(path, proc, what):
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            fail(f"{what} exited with {proc.returncode}")
        if os.path.exists(path):
            text = open(path).read().strip()
            if text:
                return int(text)
        time.sleep(0.05)
    fail(f"{what} did not write {path} within 30 s")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(name, args):
    out = open(os.path.join(TMP, f"{name}.log"), "w")
    p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    children.append(p)
    return p


def cli(*args):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        fail(f"graphopt {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def query(prom_port, expr):
    """The instant vector `expr` as [(labels, float value)], from Prometheus's HTTP API."""
    url = (f"http://127.0.0.1:{prom_port}/api/v1/query?"
           + urllib.parse.urlencode({"query": expr}))
    _, _, body = http_get(url)
    answer = json.loads(body)
    if answer.get("status") != "success":
        fail(f"query {expr!r}: {answer}")
    return [(r["metric"], float(r["value"][1])) for r in answer["data"]["result"]]


def json_lines(path):
    out = []
    for n, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            fail(f"{path}:{n} is not JSON ({e}): {line!r}")
        for key in ("ts", "level", "logger", "msg"):
            if key not in obj:
                fail(f"{path}:{n} has no '{key}': {line!r}")
        out.append(obj)
    return out


def main():
    if not (os.access(PROMETHEUS, os.X_OK) and os.access(PROMTOOL, os.X_OK)):
        log(f"SKIPPED: {PROMETHEUS} or {PROMTOOL} is not installed (scripts/install_deps.sh)")
        write_junit(skipped_reason="prometheus is not installed")
        return

    probe = ["--probe_interval_ms=200", "--probe_timeout_ms=1500"]
    server = start("server", [SERVER, "--insecure", "--listen=127.0.0.1:0",
                              f"--port_file={TMP}/server.port", "--op_store_dir=",
                              "--metrics_listen=127.0.0.1:0",
                              f"--metrics_port_file={TMP}/server.metrics_port",
                              "--log_format=json"] + probe)
    server_port = wait_file(f"{TMP}/server.port", server, "graphopt-server")
    server_metrics = wait_file(f"{TMP}/server.metrics_port", server, "graphopt-server metrics")
    worker = start("worker", [WORKER, "--insecure", "--listen=127.0.0.1:0",
                              f"--port_file={TMP}/worker.port", "--worker_id=w0",
                              f"--register_with=127.0.0.1:{server_port}", "--threads=1",
                              "--metrics_listen=127.0.0.1:0",
                              f"--metrics_port_file={TMP}/worker.metrics_port",
                              "--log_format=json"])
    worker_port = wait_file(f"{TMP}/worker.port", worker, "graphopt-worker")
    worker_metrics = wait_file(f"{TMP}/worker.metrics_port", worker, "graphopt-worker metrics")
    addr = f"127.0.0.1:{server_port}"
    log(f"server {addr} (metrics {server_metrics}), worker {worker_port} "
        f"(metrics {worker_metrics})")

    # The endpoints themselves: content type, 404, and the exposition as promtool reads it.
    for name, port in (("server", server_metrics), ("worker", worker_metrics)):
        status, ctype, body = http_get(f"http://127.0.0.1:{port}/metrics")
        if status != 200 or not ctype.startswith("text/plain; version=0.0.4"):
            fail(f"{name} /metrics: {status} {ctype}")
        if http_get(f"http://127.0.0.1:{port}/healthz")[2] != "ok\n":
            fail(f"{name} /healthz did not answer ok")
        try:
            http_get(f"http://127.0.0.1:{port}/nope")
            fail(f"{name} /nope did not answer 404")
        except urllib.error.HTTPError as e:
            if e.code != 404:
                fail(f"{name} /nope answered {e.code}")

    prom_port = free_port()
    config = os.path.join(TMP, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: graphopt-server
    static_configs:
      - targets: ['127.0.0.1:{server_metrics}']
  - job_name: graphopt-worker
    static_configs:
      - targets: ['127.0.0.1:{worker_metrics}']
""")
    prom = start("prometheus", [PROMETHEUS, f"--config.file={config}",
                                f"--storage.tsdb.path={TMP}/tsdb",
                                f"--web.listen-address=127.0.0.1:{prom_port}",
                                "--log.level=warn"])

    # The worker registers; then a few Optimize and Run calls.
    deadline = time.time() + 30
    while f"127.0.0.1:{worker_port}" not in cli("workers", "--server", addr):
        if time.time() > deadline:
            fail("the worker did not register within 30 s")
        time.sleep(0.2)
    for i in range(3):
        cli("optimize", MODEL, "-o", os.path.join(TMP, f"opt{i}.onnx"), "--server", addr, "-q")
    for i in range(2):
        out = os.path.join(TMP, f"run{i}")
        os.makedirs(out, exist_ok=True)
        cli("run", MODEL, "--server", addr, "--seed", "7", "--request-id", f"prom-run-{i}",
            "-o", out)
    calls_done = time.time()

    for name, port in (("server", server_metrics), ("worker", worker_metrics)):
        body = http_get(f"http://127.0.0.1:{port}/metrics")[2]
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True,
                           text=True, timeout=60)
        # promtool exits 1 for lint warnings too; a parse error is what matters here.
        if "error while linting" in r.stderr or "text format parsing error" in r.stderr:
            fail(f"promtool rejects the {name}'s exposition:\n{r.stderr}")
        log(f"{name} exposition: {len(body)} bytes, "
            f"{sum(1 for l in body.splitlines() if l and not l.startswith('#'))} samples; "
            f"promtool: {r.stdout.strip() or r.stderr.strip() or 'clean'}")

    checks = {
        'up{job="graphopt-server"}': lambda v: v == [1.0],
        'up{job="graphopt-worker"}': lambda v: v == [1.0],
        'sum(graphopt_rpc_requests_total{job="graphopt-server",method="Optimize",code="OK"})':
            lambda v: v and v[0] >= 3,
        'sum(graphopt_rpc_requests_total{job="graphopt-server",method="Run",code="OK"})':
            lambda v: v and v[0] >= 2,
        'sum(graphopt_rpc_requests_total{job="graphopt-worker",method="Execute",code="OK"})':
            lambda v: v and v[0] >= 2,
        'sum(graphopt_rpc_duration_seconds_count{job="graphopt-server",method="Optimize"})':
            lambda v: v and v[0] >= 3,
        f'graphopt_worker_up{{job="graphopt-server",address="127.0.0.1:{worker_port}"}}':
            lambda v: v == [1.0],
        'graphopt_workers{job="graphopt-server",health="up"}': lambda v: v == [1.0],
        'sum(graphopt_pass_duration_seconds_count{job="graphopt-server"})':
            lambda v: v and v[0] > 0,
        'graphopt_plan_cache_misses_total{job="graphopt-worker"}': lambda v: v and v[0] >= 1,
        'graphopt_plan_cache_plans{job="graphopt-worker"}': lambda v: v and v[0] >= 1,
        'graphopt_queue_capacity{job="graphopt-server",queue="optimize"}':
            lambda v: v and v[0] > 0,
        'graphopt_queue_depth{job="graphopt-worker",queue="execute"}': lambda v: v == [0.0],
    }
    deadline = time.time() + 60
    pending = dict(checks)
    last = {}
    while pending and time.time() < deadline:
        if prom.poll() is not None:
            fail(f"prometheus exited with {prom.returncode}")
        for expr in list(pending):
            try:
                values = [v for _, v in query(prom_port, expr)]
            except OSError:
                break  # Prometheus not listening yet
            last[expr] = values
            if pending[expr](values):
                del pending[expr]
        time.sleep(0.5)
    if pending:
        fail("Prometheus never showed: " + "; ".join(f"{e} (last {last.get(e)})" for e in pending))
    log(f"every query holds, {time.time() - calls_done:.1f} s after the last call")
    for expr in ('scrape_duration_seconds', 'scrape_samples_scraped'):
        for labels, v in query(prom_port, expr):
            log(f"{expr}{{job={labels.get('job')}}} = {v:g}")
    hist = query(prom_port, 'histogram_quantile(0.5, sum by (le) '
                            '(graphopt_rpc_duration_seconds_bucket{job="graphopt-server",'
                            'method="Optimize"}))')
    log(f"median Optimize latency as Prometheus estimates it: {hist[0][1] * 1000:.1f} ms"
        if hist else "no Optimize histogram")

    # JSON logs: every line parses; a Run's trace id reaches the worker.
    server_lines = json_lines(os.path.join(TMP, "server.log"))
    worker_lines = json_lines(os.path.join(TMP, "worker.log"))
    runs = [l for l in server_lines if l["msg"].startswith("Run ") and "status=OK" in l["msg"]]
    if len(runs) < 2:
        fail(f"the server logged {len(runs)} successful Runs, expected 2")
    for run in runs:
        trace = run.get("trace_id")
        if not trace or not run.get("request_id", "").startswith("prom-run-"):
            fail(f"server Run line without trace and request ids: {run}")
        executes = [l for l in worker_lines
                    if l.get("trace_id") == trace and l["msg"].startswith("Execute ")]
        if not executes:
            fail(f"trace id {trace} of the server's Run is on no Execute line of the worker")
        if executes[0].get("request_id") != run["request_id"]:
            fail(f"the worker's Execute names request {executes[0].get('request_id')}, "
                 f"the server's Run {run['request_id']}")
    if len({r["trace_id"] for r in runs}) != len(runs):
        fail("two Runs share a trace id")
    log(f"{len(runs)} Runs traced from server to worker: "
        + ", ".join(f"{r['request_id']}={r['trace_id']}" for r in runs))

    cleanup()
    for p, what in ((server, "graphopt-server"), (worker, "graphopt-worker")):
        if p.returncode != 0:
            fail(f"{what} exited {p.returncode} on SIGTERM")
    write_junit()
    log("PASS")


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001 - any error ends the children first
        cleanup()
        raise
