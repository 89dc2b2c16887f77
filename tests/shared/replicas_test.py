"""Two graphopt-server replicas sharing state through a real 3-member etcd (issue 32).

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

        def register(replica, name):
            try:
                register(replica, name, tenant="race")
                with lock:
                    acked.append(name)
            except grpc.RpcError as e:
                self.assertEqual(e.code(), grpc.StatusCode.ABORTED, e.details())
                with lock:
                    aborted.append(name)

        for i in range(15):
            threads = [threading.Thread(target=register, args=(self.a, f"A{i}")),
                       threading.Thread(target=register, args=(self.b, f"B{i}"))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
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


if __name__ == "__main__":
    harness.run_tests("replicas_test")
