"""graphopt on separate hosts made of network namespaces (tests/shared/netns.py), through faults.

Hosts on one bridge (10.77.0.0/24): three etcd members (a real three-member cluster), two
graphopt-server replicas, three graphopt-worker hosts, two client hosts (netns_client.py: a
steady stream of Run requests with request ids, each client at home on one replica and failing
over to the other on UNAVAILABLE with the same id), and a control host this test watches from.

While the clients run, in turn:
  1. a server replica is SIGKILLed and restarted;
  2. a worker's cable is pulled (`ip link set eth0 down` in its namespace) and plugged back;
  3. the etcd leader is SIGKILLed and restarted.
Then every request must have been answered (lost 0), none answered twice for its id (each id
answered once without `replayed` in the replicas' logs; sent again, an id gets its stored
answer, `replayed`, with the same outputs), equal inputs must have given equal outputs, and a
worker may have run an id twice only where a fault cut its call off (the workers' own logs).
The times to recover are measured and printed with the counts in one summary line
("netns cluster (...): ...").

The binaries decide how the hosts share state, each on its own: a server that takes
--etcd_endpoints keeps its state in the etcd cluster, and ids are then sent again to the OTHER
replica (those that failed over first), so they must deduplicate across replicas; a worker that
takes it registers there under a lease, else the replicas are given the workers (--workers).

Where network namespaces cannot be made (not root, no iproute2, a sandbox forbidding mounts),
the test is skipped, visibly, with the reason.
"""

import base64
import collections
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import unittest
import urllib.request

import grpc

import harness
import netns
import netns_requests
from harness import SERVER, TMP, WORKER, log
from proto import coordinator_pb2, coordinator_pb2_grpc

HERE = os.path.dirname(os.path.abspath(__file__))
ETCD = os.environ.get("GRAPHOPT_ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
PORT = 7000
SETTLE_S = 3.0       # requests flowing between faults
FAULT_HOLD_S = 3.0   # how long a replica / cable / etcd member stays down
CUT_CALL_BOUND_S = 15.0  # a call cut off with its worker must be answered elsewhere by then
BOUND_S = 30.0       # any recovery slower than this fails the test
# A killed replica's claims on running request ids lapse after this; short, so that failover
# is quick, and so that a replica cut off from etcd for longer (an election) must take a new
# lease rather than lose requests.
REPLICA_LEASE_TTL_S = 4
# A worker cut off from etcd leaves the membership after this: shorter than the probes take to
# mark it down, so that the membership lapses while the cable is out, and the replicas must
# fail over the calls they had on it when they forget it.
WORKER_LEASE_TTL_S = 2
ETCD_HOSTS = ["e1", "e2", "e3"]
SERVER_HOSTS = ["s1", "s2"]
WORKER_HOSTS = ["w1", "w2", "w3"]
OCTETS = {"ctl": 2, "e1": 11, "e2": 12, "e3": 13, "s1": 21, "s2": 22, "w1": 31, "w2": 32,
          "w3": 33, "c1": 41, "c2": 42}


def takes_etcd(binary):
    """Whether this build of `binary` takes --etcd_endpoints (shares its state through etcd)."""
    r = subprocess.run([binary, "--helpfull"], capture_output=True, text=True, timeout=30)
    return "--etcd_endpoints" in r.stdout + r.stderr


def http_json(url, body=None, timeout=1.0):
    data = None if body is None else json.dumps(body).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=timeout) as r:
        return json.loads(r.read())


class Cluster:
    def __init__(self, net, server_etcd, worker_etcd):
        self.net = net
        self.server_etcd = server_etcd
        self.worker_etcd = worker_etcd
        self.dir = os.path.join(TMP, "netns")
        os.makedirs(self.dir, exist_ok=True)
        self.procs = {}
        self.etcd_urls = ",".join(f"{net.address(h)}:2379" for h in ETCD_HOSTS)
        self.stubs = {}

    def mode(self):
        return ("replicas share state in etcd" if self.server_etcd else
                "replicas without shared state (no --etcd_endpoints)") + (
                    ", workers register in etcd" if self.worker_etcd else
                    ", replicas given the workers (--workers)")

    def addr(self, host):
        return f"{self.net.address(host)}:{PORT}"

    # --- processes ---------------------------------------------------------------------------

    def start_etcd(self, host):
        a = self.net.address(host)
        peers = ",".join(f"{h}=http://{self.net.address(h)}:2380" for h in ETCD_HOSTS)
        self.procs[host] = self.net.spawn(host, [
            ETCD, f"--name={host}", f"--data-dir={os.path.join(self.dir, host + '.etcd')}",
            f"--listen-peer-urls=http://{a}:2380", f"--initial-advertise-peer-urls=http://{a}:2380",
            f"--listen-client-urls=http://{a}:2379", f"--advertise-client-urls=http://{a}:2379",
            f"--initial-cluster={peers}", "--initial-cluster-state=new",
            f"--initial-cluster-token=graphopt-netns-{os.getpid()}",
            "--heartbeat-interval=100", "--election-timeout=1000",
            "--max-request-bytes=33554432", "--log-level=warn"],
            os.path.join(self.dir, host + ".log"))

    def start_server(self, host):
        # Quotas far above the load: this test watches the replicas closely (ListWorkers many
        # times a second), and its clients are one tenant.
        args = [SERVER, "--insecure", f"--listen={self.addr(host)}", "--op_store_dir=",
                "--log_level=info", "--probe_interval_ms=200", "--probe_timeout_ms=1000",
                "--max_run_attempts=3", "--tenant_requests_per_s=100000",
                "--tenant_burst=100000"]
        if self.server_etcd:
            # A short lease: a killed replica's claims on running request ids lapse sooner.
            args += [f"--etcd_endpoints={self.etcd_urls}", "--etcd_prefix=/graphopt/",
                     f"--advertise_address={self.addr(host)}",
                     f"--etcd_lease_ttl_s={REPLICA_LEASE_TTL_S}"]
        if not self.worker_etcd:
            args += ["--workers=" + ",".join(self.addr(w) for w in WORKER_HOSTS)]
        self.procs[host] = self.net.spawn(host, args, os.path.join(self.dir, host + ".log"))

    def start_worker(self, host):
        args = [WORKER, "--insecure", f"--listen={self.addr(host)}", f"--worker_id={host}",
                "--threads=1"]
        if self.worker_etcd:
            # A short lease, so that it lapses while the worker's cable is out.
            args += [f"--etcd_endpoints={self.etcd_urls}", "--etcd_prefix=/graphopt/",
                     f"--advertise_address={self.addr(host)}",
                     f"--etcd_lease_ttl_s={WORKER_LEASE_TTL_S}"]
        self.procs[host] = self.net.spawn(host, args, os.path.join(self.dir, host + ".log"))

    def kill(self, host):
        p = self.procs[host]
        p.kill()
        p.wait(timeout=10)

    def check_alive(self):
        for host, p in self.procs.items():
            if p.poll() is not None and not host.startswith("c"):
                raise AssertionError(f"{host} exited with {p.returncode}:\n{self.tail(host)}")

    def tail(self, host, n=15):
        try:
            lines = open(os.path.join(self.dir, host + ".log"), errors="replace").readlines()
        except OSError:
            return ""
        return "".join(lines[-n:])

    def logs(self):
        return "\n".join(f"--- {h} (last lines)\n{self.tail(h)}" for h in self.procs)

    # --- observing ---------------------------------------------------------------------------

    def coordinator(self, host):
        if host not in self.stubs:
            self.stubs[host] = coordinator_pb2_grpc.CoordinatorStub(grpc.insecure_channel(
                self.addr(host), options=[("grpc.initial_reconnect_backoff_ms", 100),
                                          ("grpc.min_reconnect_backoff_ms", 100),
                                          ("grpc.max_reconnect_backoff_ms", 300)]))
        return self.stubs[host]

    def worker_health(self, server):
        """worker id -> (health, executed) as `server` sees them; {} when it does not answer."""
        try:
            answer = self.coordinator(server).ListWorkers(coordinator_pb2.ListWorkersRequest(),
                                                          timeout=2)
        except grpc.RpcError:
            return {}
        return {w.worker_id or w.address: (w.health, w.executed) for w in answer.workers}

    def busy(self, server, slow=False):
        """The id of a worker `server` has a call in flight on now, or None; slow: one still
        busy at three more looks 50 ms apart (a call of the stream lasts a millisecond or two)."""
        def executing():
            try:
                answer = self.coordinator(server).ListWorkers(
                    coordinator_pb2.ListWorkersRequest(), timeout=2)
            except grpc.RpcError:
                return set()
            return {w.worker_id for w in answer.workers if w.executing > 0 and w.worker_id}

        now = executing()
        for _ in range(3 if slow and now else 0):
            time.sleep(0.05)
            now &= executing()
        return min(now) if now else None

    def wait_listening(self, host, bound_s=BOUND_S):
        """Waits for host's port to take connections (before any gRPC channel tries it: a
        refused first connection puts the channel into backoff)."""
        def accepting():
            try:
                socket.create_connection((self.net.address(host), PORT), timeout=0.5).close()
                return True
            except OSError:
                return False
        self.check_alive()
        return wait_until(f"{host} listening", accepting, bound_s)

    def etcd_healthy(self, host):
        try:
            return http_json(f"http://{self.net.address(host)}:2379/health").get("health") == "true"
        except (OSError, ValueError):
            return False

    def etcd_leader(self):
        """The host of the current etcd leader, or None."""
        ids = {}
        leader = None
        for h in ETCD_HOSTS:
            try:
                s = http_json(f"http://{self.net.address(h)}:2379/v3/maintenance/status", {})
            except (OSError, ValueError):
                continue
            ids[s["header"]["member_id"]] = h
            leader = s.get("leader", leader)
        return ids.get(leader)

    def etcd_has(self, key):
        """Whether `key` exists in etcd (read through any member; None when none answers)."""
        body = {"key": base64.b64encode(key.encode()).decode()}
        for h in ETCD_HOSTS:
            try:
                answer = http_json(f"http://{self.net.address(h)}:2379/v3/kv/range", body,
                                   timeout=0.25)
                return bool(answer.get("kvs"))
            except (OSError, ValueError):
                continue
        return None

    def etcd_put(self, key, value):
        """A write through the first etcd member that takes it (needs a quorum)."""
        body = {"key": base64.b64encode(key.encode()).decode(),
                "value": base64.b64encode(value.encode()).decode()}
        for h in ETCD_HOSTS:
            try:
                # Short: a member waiting for an election answers only after it; the caller
                # retries, so the time measured is the election's, not this timeout's.
                http_json(f"http://{self.net.address(h)}:2379/v3/kv/put", body, timeout=0.25)
                return True
            except (OSError, ValueError):
                continue
        return False


def wait_until(what, predicate, bound_s=BOUND_S, step_s=0.05):
    """Seconds until predicate() is true; AssertionError after bound_s."""
    start = time.time()
    while time.time() - start < bound_s:
        if predicate():
            return time.time() - start
        time.sleep(step_s)
    raise AssertionError(f"{what}: not within {bound_s} s")


def read_records(paths):
    records = []
    for p in paths:
        if os.path.exists(p):
            records += [json.loads(line) for line in open(p) if line.strip()]
    return records


def count_in_logs(log_paths, pattern):
    """request id -> lines of the logs matching `pattern` (its group 1 the id)."""
    counts = collections.Counter()
    pattern = re.compile(pattern)
    for path in log_paths:
        for line in open(path, errors="replace"):
            m = pattern.search(line)
            if m:
                counts[m.group(1)] += 1
    return counts


class NetnsClusterTest(unittest.TestCase):
    def test_faults_lose_nothing_and_run_nothing_twice(self):
        reason = netns.unavailable_reason()
        if reason:
            self.skipTest(reason)
        self.assertTrue(os.path.exists(ETCD), f"no etcd binary ({ETCD}): apt-get install "
                                              "etcd-server (scripts/install_deps.sh)")
        stale = netns.remove_stale()
        if stale:
            log(f"removed namespaces an earlier, killed run left: {' '.join(stale)}")
        net = netns.Network()
        try:
            self.run_cluster(net, takes_etcd(SERVER), takes_etcd(WORKER))
        finally:
            net.close()
            leftover = [n for n in netns.ip("netns", "list").stdout.split()
                        if n.startswith(net.prefix)]
            self.assertEqual(leftover, [], "namespaces left behind")

    def run_cluster(self, net, server_etcd, worker_etcd):
        for host, octet in OCTETS.items():
            net.add_host(host, octet)
        net.enter("ctl")  # before any gRPC channel: gRPC's threads then live on ctl too
        c = Cluster(net, server_etcd, worker_etcd)
        log(f"{len(OCTETS)} hosts on {net.switch}'s bridge; {c.mode()}")
        try:
            self.faults(c)
        except BaseException:
            print(c.logs(), flush=True)
            raise

    def faults(self, c):
        t0 = time.time()
        self.extra_records = []  # calls the control host made, for the workers' accounting
        self.start(c)
        fig = {"windows": {}}
        self.kill_replica(c, fig)
        self.pull_cable(c, fig)
        self.kill_etcd_leader(c, fig)
        # The stream ends; every request is accounted for.
        open(self.stop_file, "w").close()
        for client in self.outs:
            c.procs[client].wait(timeout=90)
        self.account(c, read_records(self.outs.values()), fig, time.time() - t0)

    def start(self, c):
        t0 = time.time()
        for h in ETCD_HOSTS:
            c.start_etcd(h)
        took = wait_until("etcd cluster healthy",
                          lambda: all(c.etcd_healthy(h) for h in ETCD_HOSTS))
        log(f"etcd: 3 members healthy after {took:.2f} s, leader {c.etcd_leader()}")
        for h in WORKER_HOSTS:
            c.start_worker(h)
        for h in SERVER_HOSTS:
            c.start_server(h)
        for h in WORKER_HOSTS + SERVER_HOSTS:
            c.wait_listening(h)
        for s in SERVER_HOSTS:
            wait_until(f"{s} lists 3 workers up", lambda: self.all_up(c, s))
        log(f"2 replicas and 3 workers up {time.time() - t0:.1f} s after start")

        # The clients: c1 at home on s1, c2 on s2, each failing over to the other replica.
        self.stop_file = os.path.join(c.dir, "stop")
        self.outs = {}
        env = dict(os.environ, PYTHONPATH=HERE + ":" + os.environ.get("PYTHONPATH", ""))
        for client, home, other in (("c1", "s1", "s2"), ("c2", "s2", "s1")):
            self.outs[client] = os.path.join(c.dir, client + ".jsonl")
            c.procs[client] = c.net.spawn(client, [
                "/usr/bin/python3", "-u", os.path.join(HERE, "netns_client.py"), client,
                self.outs[client], self.stop_file, c.addr(home), c.addr(other), "2"],
                os.path.join(c.dir, client + ".log"), env=env)
        wait_until("first answers to both clients",
                   lambda: self.answered_since(0, "c1") and self.answered_since(0, "c2"),
                   step_s=0.1)
        time.sleep(SETTLE_S)
        c.check_alive()

    @staticmethod
    def all_up(c, server):
        health = c.worker_health(server)
        return sum(health.get(w, ("",))[0] == "up" for w in WORKER_HOSTS) == 3

    def answered_since(self, t, client=None, replica=None):
        return [r for r in read_records([self.outs[k] for k in self.outs if client in (None, k)])
                if r.get("answered", 0) > t and replica in (None, r["replica"])]

    def kill_replica(self, c, fig):
        """A replica dies (SIGKILL), preferably while it has a call on a worker, and comes back;
        c1's requests fail over to s2 with their ids."""
        busy_until = time.time() + 5
        while time.time() < busy_until and not c.busy("s1"):
            pass
        t_kill = time.time()
        c.kill("s1")
        log("SIGKILL server s1")
        fig["failover"] = wait_until("a c1 request answered after s1 died",
                                     lambda: self.answered_since(t_kill, "c1"), step_s=0.02)
        time.sleep(max(0.0, FAULT_HOLD_S - (time.time() - t_kill)))
        t_restart = time.time()
        c.start_server("s1")
        fig["restart"] = wait_until(
            "s1 answers clients again after its restart",
            lambda: self.answered_since(t_restart, replica=c.addr("s1")), step_s=0.02)
        log(f"c1 failed over to s2 in {fig['failover']:.2f} s; s1 restarted and answering "
            f"{fig['restart']:.2f} s later")
        wait_until("s1 lists 3 workers up after its restart", lambda: self.all_up(c, "s1"))
        fig["windows"]["replica"] = (t_kill, time.time())
        fig["in_flight"] = sum(
            1 for r in read_records([self.outs["c1"]]) if r["sent"] < t_kill and any(
                a[0] == c.addr("s1") and a[1] != "OK" and a[2] >= t_kill for a in r["attempts"]))
        log(f"{fig['in_flight']} c1 requests were in flight on s1 when it died")
        time.sleep(SETTLE_S)
        c.check_alive()

    def pull_cable(self, c, fig):
        """A worker's cable is pulled while it runs a call and plugged back. The call is a slow
        one the control host sends (the stream's own take milliseconds); it must still be
        answered, once, by another worker."""
        slow = {}

        def send_slow(attempt):
            # Each try twice the work of the one before, under its own request id: on a fast or
            # idle machine the first may end before it is seen in flight.
            size = dict(netns_requests.SLOW, rows=netns_requests.SLOW["rows"] << attempt)
            request = netns_requests.run_request(f"ctl-slow{attempt}", 0, **size)
            slow.clear()
            slow.update(id=f"ctl-slow{attempt}", sent=time.time())
            try:
                answer = c.coordinator("s2").Run(request, timeout=60)
                slow.update(answered=time.time(), worker=answer.worker_id,
                            worker_attempts=answer.attempts, replayed=answer.replayed)
            except grpc.RpcError as e:
                slow["error"] = f"{e.code().name}: {e.details()}"

        cut = None
        for attempt in range(3):
            sender = threading.Thread(target=send_slow, args=(attempt,))
            sender.start()
            busy_until = time.time() + 10
            while cut is None and time.time() < busy_until and sender.is_alive():
                cut = c.busy("s2", slow=True)
            if cut is not None:
                break
            sender.join()
        cut = fig["cut"] = cut or WORKER_HOSTS[0]
        t_cut = time.time()
        c.net.link(cut, up=False)
        log(f"cable of {cut} pulled")

        def listed(server, health):
            """Whether `server` lists `cut` as `health`; "gone": no longer listed at all (its
            etcd membership ended)."""
            workers = c.worker_health(server)
            if not workers:
                return False  # the replica did not answer: nothing known
            return workers.get(cut, ("gone",))[0] == health

        fig["down"] = wait_until(
            f"{cut} listed down (or gone) by both replicas",
            lambda: all(listed(s, "down") or listed(s, "gone") for s in SERVER_HOSTS))
        key = f"/graphopt/workers/{cut}"
        if c.worker_etcd:
            wait_until(f"{cut}'s etcd membership lapsing while cut off",
                       lambda: c.etcd_has(key) is False)
            fig["lease_gone"] = time.time() - t_cut
        time.sleep(max(0.0, FAULT_HOLD_S - (time.time() - t_cut)))
        # The cable stays out until the call cut off with the worker is answered elsewhere (or
        # CUT_CALL_BOUND_S passes): an answer that only comes back with the cable is a replica
        # still waiting on a worker it can no longer reach.
        sender.join(timeout=max(0.0, CUT_CALL_BOUND_S - (time.time() - t_cut)))
        answered_while_cut = "answered" in slow
        latencies = [r["answered"] - r["sent"] for r in self.answered_since(t_cut - 1.0)
                     if r["sent"] < t_cut + fig["down"]]
        fig["cut_slowest"] = max(latencies, default=0.0)
        t_plug = time.time()
        c.net.link(cut, up=True)
        if c.worker_etcd:
            fig["lease_back"] = wait_until(f"{cut} registered in etcd again",
                                           lambda: c.etcd_has(key) is True)
        fig["up"] = wait_until(f"{cut} listed up by both replicas after its cable is back",
                               lambda: all(listed(s, "up") for s in SERVER_HOSTS))
        fig["up"] = time.time() - t_plug
        fig["windows"]["cable"] = (t_cut, time.time())
        sender.join(timeout=60)
        if "answered" not in slow:
            raise AssertionError(f"the slow call on {cut} when its cable was pulled was not "
                                 f"answered: {slow.get('error', 'no answer within 60 s')}")
        fig["slow"] = slow["answered"] - t_cut
        if fig["slow"] < 0:
            raise AssertionError(f"the slow call ({slow['answered'] - slow['sent']:.2f} s) "
                                 f"ended before {cut}'s cable was pulled")
        if not answered_while_cut or slow["worker"] == cut:
            raise AssertionError(
                f"the call in flight on {cut} when its cable was pulled was answered "
                f"{fig['slow']:.2f} s after the cut by {slow['worker']} (attempt "
                f"{slow['worker_attempts']}), not by another worker while {cut} was cut off "
                f"(waited {CUT_CALL_BOUND_S} s)")
        fig["slow_attempts"] = slow["worker_attempts"]
        self.extra_records.append({"id": slow["id"], "attempts": [], "answered": slow["answered"],
                                   "worker_attempts": slow["worker_attempts"]})
        lease = (f"; its etcd membership lapsed {fig['lease_gone']:.2f} s after the cut and was "
                 f"back {fig['lease_back']:.2f} s after the replug" if c.worker_etcd else "")
        log(f"{cut} listed down or gone by both replicas {fig['down']:.2f} s after the "
            f"cut (slowest request of the stream meanwhile {fig['cut_slowest']:.2f} s); up "
            f"{fig['up']:.2f} s after the cable was back{lease}")
        log(f"the slow call in flight on {cut} was answered {fig['slow']:.2f} s after the cut, "
            f"on worker attempt {fig['slow_attempts']}")
        time.sleep(SETTLE_S)
        c.check_alive()

    def kill_etcd_leader(self, c, fig):
        """The etcd leader dies and comes back; the other two keep a quorum."""
        victim = c.etcd_leader() or "e1"
        t_kill = time.time()
        c.kill(victim)
        log(f"SIGKILL etcd member {victim} (the leader)")
        fig["etcd_write"] = wait_until("a write to etcd with one member down",
                                       lambda: c.etcd_put("/netns-test/probe", "x"))
        wait_until("requests answered with an etcd member down",
                   lambda: self.answered_since(t_kill + fig["etcd_write"]), step_s=0.02)
        time.sleep(max(0.0, FAULT_HOLD_S - (time.time() - t_kill)))
        c.start_etcd(victim)
        fig["etcd_rejoin"] = wait_until(f"{victim} healthy again", lambda: c.etcd_healthy(victim))
        fig["windows"]["etcd"] = (t_kill, time.time())
        log(f"etcd: a quorum write {fig['etcd_write']:.2f} s after the leader died; {victim} "
            f"restarted and healthy {fig['etcd_rejoin']:.2f} s later (leader now "
            f"{c.etcd_leader()})")
        time.sleep(SETTLE_S)
        c.check_alive()

    def account(self, c, records, fig, wall_s):
        sent = len(records)
        lost = [r for r in records if "answered" not in r]
        failed_over = [r for r in records if "answered" in r and any(
            a[1] in ("UNAVAILABLE", "DEADLINE_EXCEEDED") for a in r["attempts"])]
        # Equal inputs, equal outputs, whichever replica, worker or attempt answered.
        by_seed = collections.defaultdict(set)
        for r in records:
            if "answered" in r:
                by_seed[r["seed"]].add(r["digest"])
        wrong = sum(len(d) - 1 for d in by_seed.values())
        limited = sum(a[1] == "RESOURCE_EXHAUSTED" for r in records for a in r["attempts"])
        first_answers = {r["id"]: r for r in records if "answered" in r}

        # Executed twice, seen by the replicas: an id answered without `replayed` twice.
        counts = count_in_logs([os.path.join(c.dir, s + ".log") for s in SERVER_HOSTS],
                               r"\] Run .*request_id='([^']*)'.* replayed=false .*status=OK")
        twice = {i: n for i, n in counts.items() if n > 1}
        # A first answer that is a replay is right: the replica that ran the id died before
        # its answer got out, and the other one found it stored (outputs checked above).
        replayed_first = sum(1 for r in first_answers.values() if r["replayed"])

        # Executed twice by workers (their own logs): only a call cut off by a fault may run
        # again, on another worker (the coordinator's retry) or for the other replica (the
        # client's failover); the answer still goes out once.
        runs = count_in_logs([os.path.join(c.dir, w + ".log") for w in WORKER_HOSTS],
                             r"\] Execute .*request_id='([^']*)'.*status=OK")
        rerun = {i for i, n in runs.items() if n > 1}
        cut_off = {r["id"] for r in failed_over} | {
            r["id"] for r in records + self.extra_records if r.get("worker_attempts", 1) > 1}
        unexplained = sorted(rerun - cut_off)

        # Executed twice, probed: ids sent again get the first answer, replayed, with the same
        # outputs. With shared state they go to the replica that did NOT answer them (those that
        # failed over included); without it, to the one that did (it remembers only its own).
        latest = sorted(first_answers.values(), key=lambda r: r["answered"])[-20:]
        pool = (failed_over + latest) if c.server_etcd else latest
        by_addr = {c.addr(s): s for s in SERVER_HOSTS}
        replay_bad = []
        for r in {r["id"]: r for r in pool}.values():
            target = r["replica"]
            if c.server_etcd:
                target = next(a for a in by_addr if a != r["replica"])
            try:
                answer = c.coordinator(by_addr[target]).Run(
                    netns_requests.run_request(r["id"], r["seed"]), timeout=20)
            except grpc.RpcError as e:
                replay_bad.append(f"{r['id']} at {by_addr[target]}: {e.code().name}")
                continue
            if not answer.replayed or netns_requests.digest(answer) != r["digest"]:
                replay_bad.append(f"{r['id']} at {by_addr[target]}: replayed={answer.replayed}, "
                                  f"same outputs={netns_requests.digest(answer) == r['digest']}")
        resent = len({r["id"] for r in pool})

        # The longest pause in answers (both clients together) from each fault to its recovery.
        times = sorted(r["answered"] for r in first_answers.values())
        pause = {}
        for name, (start, end) in fig["windows"].items():
            inside = [start] + [t for t in times if start < t <= end]
            pause[name] = max(b - a for a, b in zip(inside, inside[1:] + [end]))
        elsewhere = "the other replica" if c.server_etcd else "the replica that answered"
        summary = (
            f"netns cluster (3 etcd + 2 servers + 3 workers + 2 client hosts; {c.mode()}): "
            f"{sent} requests sent, lost {len(lost)}, answered twice {len(twice)}, wrong "
            f"outputs {wrong}, failed over {len(failed_over)} ({replayed_first} of them answered "
            f"by a replay), rate-limited attempts {limited}; "
            f"server kill "
            f"({fig['in_flight']} in flight on it"
            + (f", replica lease {REPLICA_LEASE_TTL_S} s" if c.server_etcd else "")
            + f"): failover {fig['failover']:.2f} s, restarted "
            f"replica serving {fig['restart']:.2f} s; "
            f"worker cable cut ({fig['cut']}): listed down/gone {fig['down']:.2f} s, its call in "
            f"flight answered after {fig['slow']:.2f} s (attempt {fig['slow_attempts']}), "
            f"slowest stream request {fig['cut_slowest']:.2f} s, listed up {fig['up']:.2f} s "
            f"after replug"
            + (f" (etcd membership lapsed {fig['lease_gone']:.2f} s after the cut with a "
               f"{WORKER_LEASE_TTL_S} s lease, back {fig['lease_back']:.2f} s after replug)"
               if c.worker_etcd else "") + "; etcd leader "
            f"kill: quorum write {fig['etcd_write']:.2f} s, member healthy "
            f"{fig['etcd_rejoin']:.2f} s after restart; {sum(runs.values())} worker executions for "
            f"{len(first_answers) + len(self.extra_records)} answers, {len(rerun)} ids run again "
            f"after their call was cut off by a fault, {len(unexplained)} otherwise; {resent} ids "
            f"sent again to {elsewhere}, "
            f"{resent - len(replay_bad)} replayed, {len(replay_bad)} run again; longest pause in "
            f"answers: replica kill {pause['replica']:.2f} s, cable cut {pause['cable']:.2f} s, "
            f"etcd leader kill {pause['etcd']:.2f} s; wall {wall_s:.0f} s")
        log(summary)
        if lost:
            self.fail(f"{len(lost)} requests lost (no answer), the first with their last "
                      "status: " + "; ".join(f"{r['id']}: {r['attempts'][-1][1]} "
                                             f"{r['attempts'][-1][3]}" for r in lost[:3]))
        self.assertEqual(twice, {}, "request ids executed twice")
        self.assertEqual(unexplained, [], "ids run twice by workers without a fault")
        self.assertEqual(wrong, 0, f"equal inputs gave different outputs: {dict(by_seed)}")
        if replay_bad:
            self.fail(f"{len(replay_bad)} of {resent} ids sent again to "
                      f"{elsewhere} ran again instead of getting their first answer (replayed); "
                      f"the first: {replay_bad[:3]}")


if __name__ == "__main__":
    def _term(signum, frame):
        raise SystemExit(f"signal {signum}")  # unwinds through the finally that cleans up

    signal.signal(signal.SIGTERM, _term)
    harness.run_tests("netns_cluster_test")
