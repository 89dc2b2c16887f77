"""Two graphopt-server replicas sharing state through a real 3-member etcd (issue 32), and
through an etcd that takes only TLS with client certificates.

Checks: an op registered through one replica is used through the other within 1 s; concurrent
registrations through both never lose an acknowledged op; a replica killed with SIGKILL and
restarted loses nothing; an etcd member killed mid-run changes nothing for clients.
"""

import os
import threading
import time
import unittest

import grpc

import etcd_harness
import harness
import models
from harness import log
from proto import graph_pb2, optimizer_pb2, optimizer_pb2_grpc

TENANT = "acme"


def md(tenant=TENANT):
    return [("graphopt-tenant", tenant)]



def graph_using(op_name):
    g = graph_pb2.Graph(name="uses_" + op_name)
    models.opset(g)
    g.opset_imports.add(domain="com.test", version=1)
    g.inputs.append(harness.value("x", models.F32, [4, 8]))
    g.nodes.add(name="custom", op_type=op_name, domain="com.test", inputs=["x"], outputs=["y"])
    g.outputs.append(harness.value("y", models.F32, [4, 8]))
    return g


def stub(replica):
    return optimizer_pb2_grpc.GraphOptimizerStub(grpc.insecure_channel(replica.address))


def register(replica, name, tenant=TENANT, timeout=10):
    stub(replica).RegisterOps(optimizer_pb2.RegisterOpsRequest(ops=[models.custom_op(name)]),
                              metadata=md(tenant), timeout=timeout)


def registered(replica, tenant=TENANT):
    r = stub(replica).ListOps(optimizer_pb2.ListOpsRequest(registered_only=True),
                              metadata=md(tenant), timeout=10)
    return sorted(o.name for o in r.ops)


def wait_for(pred, bound_s, what):
    start = time.time()
    while time.time() - start < bound_s:
        if pred():
            return time.time() - start
        time.sleep(0.01)
    raise AssertionError(f"{what}: not within {bound_s} s")


class ReplicasTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        folder = os.path.join(harness.TMP, "replicas")
        os.makedirs(folder, exist_ok=True)
        cls.etcd = etcd_harness.EtcdCluster(os.path.join(folder, "etcd"), members=3)
        cls.a = etcd_harness.Replica("replica-a", folder, cls.etcd.endpoints)
        cls.b = etcd_harness.Replica("replica-b", folder, cls.etcd.endpoints)
        log(f"etcd {cls.etcd.endpoints}; replicas {cls.a.address} {cls.b.address}")

    @classmethod
    def tearDownClass(cls):
        for p in (cls.a, cls.b):
            p.proc.stop()
        cls.etcd.stop()

    def test_1_op_registered_on_one_is_used_on_the_other_within_1s(self):
        latencies = []
        for i in range(5):
            name = f"Swish{i}"
            register(self.a, name)
            latencies.append(wait_for(lambda: name in registered(self.b), 1.0,
                                      f"{name} visible through replica b"))
            r = stub(self.b).Optimize(optimizer_pb2.OptimizeRequest(graph=graph_using(name)),
                                      metadata=md(), timeout=30)
            self.assertTrue(r.graph.nodes, "optimized graph is empty")
            # Another tenant does not see it through either replica.
            self.assertNotIn(name, registered(self.b, "globex"))
        log(f"op visible on the other replica after {max(latencies) * 1000:.0f} ms at most "
            f"(median {sorted(latencies)[len(latencies) // 2] * 1000:.0f} ms)")
        stub(self.b).UnregisterOps(optimizer_pb2.UnregisterOpsRequest(
            ops=[optimizer_pb2.OpRef(domain="com.test", name="Swish0")]), metadata=md(), timeout=10)
        wait_for(lambda: "Swish0" not in registered(self.a), 1.0, "unregistration seen on a")

    def test_2_concurrent_registrations_never_lose_an_acknowledged_op(self):
        acked, aborted = [], []
        lock = threading.Lock()

        other = []  # anything but success or ABORTED, reported after the threads end

        def attempt(replica, name):
            try:
                register(replica, name, tenant="race")
                with lock:
                    acked.append(name)
            except grpc.RpcError as e:
                with lock:
                    (aborted if e.code() == grpc.StatusCode.ABORTED else other).append(
                        f"{name}: {e.code().name} {e.details()}")
            except Exception as e:  # noqa: BLE001 (a thread's failure must reach the test)
                with lock:
                    other.append(f"{name}: {e!r}")

        for i in range(15):
            threads = [threading.Thread(target=attempt, args=(self.a, f"A{i}")),
                       threading.Thread(target=attempt, args=(self.b, f"B{i}"))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.assertEqual(other, [])
        self.assertEqual(len(acked) + len(aborted), 30)
        self.assertTrue(acked, "no registration succeeded")
        time.sleep(0.5)
        for replica in (self.a, self.b):
            self.assertEqual(registered(replica, "race"), sorted(acked), replica.name)
        log(f"concurrent registrations: {len(acked)} acknowledged, {len(aborted)} ABORTED "
            "(retryable), none lost")

    def test_3_a_killed_replica_restarts_with_everything(self):
        before = registered(self.a)
        self.assertTrue(before)
        self.a.kill()
        # Meanwhile the other replica keeps serving and takes a registration.
        register(self.b, "WhileDown")
        t0 = time.time()
        self.a.restart()
        log(f"replica a restarted in {time.time() - t0:.2f} s")
        self.assertEqual(registered(self.a), sorted(before + ["WhileDown"]))

    def test_4_an_etcd_member_killed_changes_nothing_for_clients(self):
        self.etcd.kill(0)
        try:
            for i in range(3):
                name = f"NoMember{i}"
                register(self.a, name, timeout=15)
                wait_for(lambda: name in registered(self.b), 5.0, f"{name} on b")
        finally:
            self.etcd.start(0)


class EtcdTlsTest(unittest.TestCase):
    """etcd serving clients only over TLS with client certificates (--client-cert-auth): two
    replicas with --etcd_tls_* share ops through it; one without them, or with a certificate of
    another CA, does not start (and says why)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(harness.TMP, "etcd_tls")
        os.makedirs(cls.dir, exist_ok=True)
        cls.certs = harness.make_certs(os.path.join(cls.dir, "certs"))
        cls.etcd = etcd_harness.EtcdCluster(os.path.join(cls.dir, "etcd"), members=1,
                                            certs=cls.certs)
        cls.replicas = []

    @classmethod
    def tearDownClass(cls):
        for r in cls.replicas:
            r.proc.stop()
        cls.etcd.stop()

    def replica(self, name, cert):
        tls = [f"--etcd_tls_ca={self.certs}/ca.pem", f"--etcd_tls_cert={self.certs}/{cert}.pem",
               f"--etcd_tls_key={self.certs}/{cert}.key"]
        r = etcd_harness.Replica(name, self.dir, self.etcd.endpoints, extra=tls)
        self.replicas.append(r)
        return r

    def test_replicas_share_ops_over_tls(self):
        a = self.replica("tls-a", "server")
        b = self.replica("tls-b", "worker")  # any certificate of the cluster CA
        register(a, "OverTls")
        wait_for(lambda: "OverTls" in registered(b), 1.0, "OverTls through replica b")

    def test_no_tls_or_another_ca_does_not_start(self):
        other = harness.make_certs(os.path.join(self.dir, "other-ca"))
        for name, extra in (("plain", []),
                            ("other-ca", [f"--etcd_tls_ca={other}/ca.pem",
                                          f"--etcd_tls_cert={other}/server.pem",
                                          f"--etcd_tls_key={other}/server.key"])):
            # The server waits up to 30 s for etcd before it gives up.
            r = etcd_harness.Replica(f"tls-{name}", self.dir, self.etcd.endpoints, extra=extra,
                                     wait=False)
            try:
                rc = r.proc.proc.wait(timeout=60)
            except Exception:
                r.proc.stop(grace_s=0)
                raise
            log_text = open(os.path.join(self.dir, f"tls-{name}.log"), errors="replace").read()
            self.assertEqual(rc, 1, log_text[-2000:])
            self.assertIn("etcd", log_text.splitlines()[-1], log_text[-2000:])


if __name__ == "__main__":
    harness.run_tests("replicas_test")
