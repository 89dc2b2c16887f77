"""A shared graphopt service under hostile and busy clients (issue 30), on real processes.

Each test class starts its own cluster (tests/shared/harness.py): one graphopt-server and
workers on loopback, secure (TLS, bearer tokens, mTLS with a dev CA) unless it says otherwise.
Checks authentication and authorization on every RPC, tenant isolation, the hijacking
registration, poison models, closed-loop overload, deadlines and cancellation, and quotas.
"""

import concurrent.futures
import hashlib
import os
import signal
import threading
import time
import unittest

import grpc

import harness
import models
from harness import Cluster, cpu_seconds, log, named, tensor
from proto import coordinator_pb2, graph_pb2, optimizer_pb2, worker_pb2

Code = grpc.StatusCode


def code_of(fn):
    """The status code (and details) a call ends with; (OK, "") when it succeeds."""
    try:
        fn()
        return Code.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details() or ""


def run_request(graph, inputs, **kw):
    r = coordinator_pb2.RunRequest(**kw)
    r.graph.CopyFrom(graph)
    r.inputs.extend(inputs)
    return r



class AuthTest(unittest.TestCase):
    """Who may call what: tokens, tenants, admin, the cluster identity."""

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster("auth", workers=2)

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def tenant_calls(self, stub, md):
        """Every GraphOptimizer RPC once, and Coordinator.Run, with metadata `md`."""
        graph = models.mlp(width=8, depth=1)
        digest = "sha256:" + "0" * 64
        chunks = iter([optimizer_pb2.BlobChunk(digest="sha256:" + hashlib.sha256(b"b").hexdigest(),
                                               total_size=1, data=b"b")])
        return {
            "Optimize": lambda: stub.Optimize(optimizer_pb2.OptimizeRequest(graph=graph),
                                              metadata=md, timeout=30),
            "ListPasses": lambda: stub.ListPasses(optimizer_pb2.ListPassesRequest(), metadata=md,
                                                  timeout=10),
            "ListOps": lambda: stub.ListOps(optimizer_pb2.ListOpsRequest(), metadata=md,
                                            timeout=10),
            "RegisterOps": lambda: stub.RegisterOps(
                optimizer_pb2.RegisterOpsRequest(ops=[models.custom_op("AuthProbe")],
                                                 validate_only=True),
                metadata=md, timeout=10),
            "UnregisterOps": lambda: stub.UnregisterOps(
                optimizer_pb2.UnregisterOpsRequest(ops=[optimizer_pb2.OpRef(domain="com.test",
                                                                            name="Nope")]),
                metadata=md, timeout=10),
            "HasBlobs": lambda: stub.HasBlobs(optimizer_pb2.HasBlobsRequest(digests=[digest]),
                                              metadata=md, timeout=10),
            "PutBlobs": lambda: stub.PutBlobs(chunks, metadata=md, timeout=10),
            "Run": lambda: self.c.coordinator().Run(
                run_request(graph, [named("x", tensor("x", models.F32, [1, 8],
                                                      harness.floats([1.0] * 8)))]),
                metadata=md, timeout=30),
        }

    def test_every_tenant_rpc_refuses_a_missing_or_unknown_token(self):
        stub = self.c.optimizer()
        for md, why in (([], "no token"),
                        ([("authorization", "Bearer gopt_" + "A" * 43)], "unknown token"),
                        ([("authorization", "Basic dXNlcjpwYXNz")], "not a bearer token")):
            for name, call in self.tenant_calls(stub, md).items():
                code, details = code_of(call)
                self.assertEqual(code, Code.UNAUTHENTICATED, f"{name} with {why}: {details}")
                self.assertTrue(details, f"{name}: empty message")
                self.assertNotIn("AAAA", details, f"{name}: the token is echoed")

    def test_every_tenant_rpc_works_with_a_token(self):
        stub = self.c.optimizer()
        for name, call in self.tenant_calls(stub, self.c.md("acme")).items():
            code, details = code_of(call)
            # The probe op is not registered: UnregisterOps says NOT_FOUND, which is fine.
            self.assertIn(code, (Code.OK, Code.NOT_FOUND), f"{name}: {details}")

    def test_a_tenant_token_cannot_act_for_another_tenant(self):
        stub = self.c.optimizer()
        for name, call in self.tenant_calls(stub, self.c.md("acme", tenant="globex")).items():
            code, details = code_of(call)
            self.assertEqual(code, Code.PERMISSION_DENIED, f"{name}: {details}")
            self.assertIn("globex", details)

    def test_cluster_operations_need_admin_or_cluster_identity(self):
        coordinator = self.c.coordinator()
        code, details = code_of(lambda: coordinator.ListWorkers(
            coordinator_pb2.ListWorkersRequest(), metadata=self.c.md("acme"), timeout=10))
        self.assertEqual(code, Code.PERMISSION_DENIED, details)
        code, _ = code_of(lambda: coordinator.ListWorkers(
            coordinator_pb2.ListWorkersRequest(), timeout=10))
        self.assertEqual(code, Code.UNAUTHENTICATED)
        self.assertEqual(len(self.c.list_workers()), 2)  # admin
        register = coordinator_pb2.RegisterWorkerRequest(address="127.0.0.1:1", worker_id="x")
        # A token is no cluster identity, not even an admin's.
        for md in ([], self.c.md("acme"), self.c.md("admin")):
            code, details = code_of(lambda: coordinator.RegisterWorker(register, metadata=md,
                                                                       timeout=10))
            self.assertEqual(code, Code.UNAUTHENTICATED, details)
        # A certificate of the cluster's CA, but not a worker's.
        with_client_cert = self.c.coordinator(client_cert="client")
        code, details = code_of(lambda: with_client_cert.RegisterWorker(register, timeout=10))
        self.assertEqual(code, Code.PERMISSION_DENIED, details)

    def test_the_hijacking_registration_is_refused(self):
        before = {w.address: w.worker_id for w in self.c.list_workers()}
        victim = self.c.workers[0]
        hijack = coordinator_pb2.RegisterWorkerRequest(address="127.0.0.1:9", worker_id="w0")
        # Without a worker certificate: not even considered.
        code, _ = code_of(lambda: self.c.coordinator().RegisterWorker(hijack, timeout=10))
        self.assertEqual(code, Code.UNAUTHENTICATED)
        # With a stolen worker certificate, a live worker's id is still refused.
        as_worker = self.c.coordinator(client_cert="worker")
        code, details = code_of(lambda: as_worker.RegisterWorker(hijack, timeout=10))
        self.assertEqual(code, Code.ALREADY_EXISTS, details)
        self.assertIn(f"127.0.0.1:{victim.port}", details)
        after = {w.address: w.worker_id for w in self.c.list_workers()}
        self.assertEqual(before, after)
        # Runs still go to the real workers.
        graph = models.mlp(width=8, depth=1)
        x = [named("x", tensor("x", models.F32, [1, 8], harness.floats([1.0] * 8)))]
        for _ in range(4):
            r = self.c.coordinator().Run(run_request(graph, x), metadata=self.c.md("acme"),
                                         timeout=30)
            self.assertIn(r.worker_address, before)

    def test_workers_serve_only_the_cluster_servers(self):
        w = self.c.workers[0]
        calls = {
            "Describe": lambda s: s.Describe(worker_pb2.DescribeRequest(), timeout=10),
            "LoadPlan": lambda s: s.LoadPlan(worker_pb2.LoadPlanRequest(
                graph=models.mlp(width=8, depth=1)), timeout=10),
            "Execute": lambda s: s.Execute(worker_pb2.ExecuteRequest(plan_id="sha256:0"),
                                           timeout=10),
            "UnloadPlan": lambda s: s.UnloadPlan(worker_pb2.UnloadPlanRequest(plan_id="x"),
                                                 timeout=10),
        }
        for cert, want in ((None, Code.UNAUTHENTICATED), ("client", Code.PERMISSION_DENIED),
                           ("worker", Code.PERMISSION_DENIED)):
            stub = self.c.worker_stub(w, client_cert=cert)
            for name, call in calls.items():
                code, details = code_of(lambda: call(stub))
                self.assertEqual(code, want, f"{name} with cert {cert}: {details}")
        # The server's certificate opens every door (what the coordinator uses).
        stub = self.c.worker_stub(w, client_cert="server")
        self.assertTrue(stub.Describe(worker_pb2.DescribeRequest(), timeout=10).worker_id)

    def test_plaintext_and_foreign_ca_clients_cannot_connect(self):
        plain = harness.optimizer_pb2_grpc.GraphOptimizerStub(
            grpc.insecure_channel(self.c.address))
        code, _ = code_of(lambda: plain.ListPasses(optimizer_pb2.ListPassesRequest(),
                                                   metadata=self.c.md("acme"), timeout=5))
        self.assertEqual(code, Code.UNAVAILABLE)
        foreign = harness.make_certs(os.path.join(self.c.dir, "foreign"))
        creds = grpc.ssl_channel_credentials(root_certificates=harness.read(
            os.path.join(foreign, "ca.pem")))
        stub = harness.optimizer_pb2_grpc.GraphOptimizerStub(
            grpc.secure_channel(self.c.address, creds))
        code, _ = code_of(lambda: stub.ListPasses(optimizer_pb2.ListPassesRequest(),
                                                  metadata=self.c.md("acme"), timeout=5))
        self.assertEqual(code, Code.UNAVAILABLE)

    def test_ops_and_blobs_are_per_tenant(self):
        stub = self.c.optimizer()
        stub.RegisterOps(optimizer_pb2.RegisterOpsRequest(ops=[models.custom_op("AcmeOnly")]),
                         metadata=self.c.md("acme"), timeout=10)
        theirs = stub.ListOps(optimizer_pb2.ListOpsRequest(registered_only=True),
                              metadata=self.c.md("globex"), timeout=10)
        self.assertEqual([o.name for o in theirs.ops], [])
        code, _ = code_of(lambda: stub.UnregisterOps(optimizer_pb2.UnregisterOpsRequest(
            ops=[optimizer_pb2.OpRef(domain="com.test", name="AcmeOnly")]),
            metadata=self.c.md("globex"), timeout=10))
        self.assertEqual(code, Code.NOT_FOUND)
        mine = stub.ListOps(optimizer_pb2.ListOpsRequest(registered_only=True),
                            metadata=self.c.md("acme"), timeout=10)
        self.assertEqual([o.name for o in mine.ops], ["AcmeOnly"])
        # An admin acts for the tenant it names.
        admin = stub.ListOps(optimizer_pb2.ListOpsRequest(registered_only=True),
                             metadata=self.c.md("admin", tenant="acme"), timeout=10)
        self.assertEqual([o.name for o in admin.ops], ["AcmeOnly"])

        data = os.urandom(4096)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        stub.PutBlobs(iter([optimizer_pb2.BlobChunk(digest=digest, total_size=len(data),
                                                    data=data)]),
                      metadata=self.c.md("acme"), timeout=10)
        for who, missing in (("acme", []), ("globex", [digest])):
            r = stub.HasBlobs(optimizer_pb2.HasBlobsRequest(digests=[digest]),
                              metadata=self.c.md(who), timeout=10)
            self.assertEqual(list(r.missing), missing, who)
        graph = graph_pb2.Graph(name="uses_blob")
        models.opset(graph)
        graph.inputs.append(harness.value("x", models.F32, [1024]))
        w = graph.initializers.add(name="w", dtype=models.F32, dims=[1024], blob=digest)
        del w
        models.node(graph, "add", "Add", ["x", "w"], ["y"])
        graph.outputs.append(harness.value("y", models.F32, [1024]))
        stub.Optimize(optimizer_pb2.OptimizeRequest(graph=graph), metadata=self.c.md("acme"),
                      timeout=30)
        code, details = code_of(lambda: stub.Optimize(optimizer_pb2.OptimizeRequest(graph=graph),
                                                      metadata=self.c.md("globex"), timeout=30))
        self.assertEqual(code, Code.FAILED_PRECONDITION, details)
        self.assertIn("globex", details)

    def test_revoked_tokens_stop_working_without_a_restart(self):
        stub = self.c.optimizer()
        request = optimizer_pb2.ListPassesRequest()
        stub.ListPasses(request, metadata=self.c.md("globex"), timeout=10)
        original = open(self.c.tokens_file).read()
        kept = [l for l in original.splitlines() if not l.startswith("tenant globex")]
        # Replaced the way a Kubernetes Secret is: a new file renamed over the old one.
        tmp = self.c.tokens_file + ".new"
        with open(tmp, "w") as f:
            f.write("\n".join(kept) + "\n")
        os.replace(tmp, self.c.tokens_file)
        try:
            deadline = time.time() + 5
            code = Code.OK
            while time.time() < deadline and code == Code.OK:
                code, _ = code_of(lambda: stub.ListPasses(request, metadata=self.c.md("globex"),
                                                          timeout=10))
                time.sleep(0.1)
            self.assertEqual(code, Code.UNAUTHENTICATED)
            stub.ListPasses(request, metadata=self.c.md("acme"), timeout=10)
        finally:
            with open(tmp, "w") as f:
                f.write(original)
            os.replace(tmp, self.c.tokens_file)


class PoisonTest(unittest.TestCase):
    """Tiny models that ask for gigabytes or forever: every worker survives and keeps serving."""

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster("poison", workers=2, secure=True,
                        worker_args=["--execution_memory_mb=256", "--max_execution_s=60"])
        cls.pids = [w.pid for w in cls.c.workers]

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def run_model(self, graph, inputs, timeout=60):
        return self.c.coordinator().Run(run_request(graph, inputs), metadata=self.c.md("acme"),
                                        timeout=timeout)

    def assert_fleet_alive(self):
        for w in self.c.workers:
            self.assertTrue(w.alive(), f"{w.name} died:\n{w.tail()}")
        listed = self.c.list_workers()
        self.assertEqual(len(listed), 2)
        for w in listed:
            self.assertEqual(w.health, "up", w)
            self.assertEqual(w.failures, 0, f"{w.address} was marked down: {w.last_error}")
        r = self.run_model(models.mlp(), models.mlp_input())
        self.assertEqual(len(r.outputs), 1)

    def assert_exhausted(self, graph, inputs, node_name):
        code, details = code_of(lambda: self.run_model(graph, inputs))
        self.assertEqual(code, Code.RESOURCE_EXHAUSTED, details)
        self.assertIn(f"'{node_name}'", details)
        self.assertRegex(details, r"\d")  # the size
        self.assertIn("2 attempt(s)", details)  # retried once elsewhere, no more
        self.assert_fleet_alive()

    def test_constant_of_shape_of_8_gib(self):
        self.assert_exhausted(*models.constant_of_shape(2 ** 31), "fill")

    def test_doubling_loop(self):
        self.assert_exhausted(*models.doubling_loop(40), "loop")

    def test_string_tile(self):
        self.assert_exhausted(*models.string_tile(2 ** 30), "tile")

    def test_endless_loop_stops_at_the_deadline(self):
        graph, inputs = models.endless_loop()
        before = [cpu_seconds(pid) for pid in self.pids]
        start = time.time()
        code, details = code_of(lambda: self.run_model(graph, inputs, timeout=1.0))
        elapsed = time.time() - start
        self.assertEqual(code, Code.DEADLINE_EXCEEDED, details)
        self.assertLess(elapsed, 1.5)
        # Within 100 ms of the deadline every worker is idle again.
        time.sleep(max(0.0, 1.1 - elapsed))
        mid = [cpu_seconds(pid) for pid in self.pids]
        time.sleep(0.5)
        after = [cpu_seconds(pid) for pid in self.pids]
        busy = [a - m for a, m in zip(after, mid)]
        log(f"endless loop: worker CPU s during the call {[m - b for m, b in zip(mid, before)]}, "
            f"in the 0.5 s after deadline + 100 ms {busy}")
        for b in busy:
            self.assertLess(b, 0.05)
        self.assert_fleet_alive()


    def test_a_cancelled_run_stops_within_100_ms(self):
        graph, inputs = models.endless_loop()
        start = [cpu_seconds(pid) for pid in self.pids]
        call = self.c.coordinator().Run.future(run_request(graph, inputs),
                                               metadata=self.c.md("acme"), timeout=60)
        time.sleep(1.0)
        busy_before = [cpu_seconds(pid) for pid in self.pids]
        # It was running on a worker (one of them was busy) when cancelled.
        self.assertGreater(max(b - s for b, s in zip(busy_before, start)), 0.3)
        call.cancel()
        time.sleep(0.1)
        mid = [cpu_seconds(pid) for pid in self.pids]
        time.sleep(0.5)
        after = [cpu_seconds(pid) for pid in self.pids]
        log(f"cancelled endless loop: worker CPU s in the 0.1 s after cancel "
            f"{[m - b for m, b in zip(mid, busy_before)]}, in the 0.5 s after that "
            f"{[a - m for a, m in zip(after, mid)]}")
        self.assertTrue(call.cancelled())
        for a, m in zip(after, mid):
            self.assertLess(a - m, 0.05)
        self.assert_fleet_alive()


class QuarantineTest(unittest.TestCase):
    """A plan whose workers die under it (killed as the OOM killer would) is quarantined."""

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster("quarantine", workers=2, secure=False)

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def test_a_plan_that_killed_two_workers_is_refused(self):
        graph, inputs = models.endless_loop()
        call = self.c.coordinator().Run.future(run_request(graph, inputs), timeout=60)
        killed = []
        deadline = time.time() + 30
        # The worker running the endless loop is the one using CPU: at least 10% of a core over
        # half a second (an idle worker answers probes only), even on a machine busy enough
        # to give it a quarter of one.
        while len(killed) < 2 and time.time() < deadline:
            before = {w.name: cpu_seconds(w.pid) for w in self.c.workers if w.alive()}
            time.sleep(0.5)
            for w in self.c.workers:
                if w.alive() and w.name in before and cpu_seconds(w.pid) - before[w.name] > 0.05:
                    w.proc.send_signal(signal.SIGKILL)
                    w.proc.wait()
                    killed.append(w.name)
        self.assertEqual(len(killed), 2, "the plan did not run on both workers in turn")
        code, details = code_of(call.result)
        self.assertEqual(code, Code.UNAVAILABLE, details)
        self.assertIn("2 attempt(s)", details)
        code, details = code_of(lambda: self.c.coordinator().Run(run_request(graph, inputs),
                                                                 timeout=30))
        self.assertEqual(code, Code.FAILED_PRECONDITION, details)
        self.assertIn("is quarantined", details)
        self.assertIn("w0", details)
        self.assertIn("w1", details)
        self.assertEqual(self.c.health(), "SERVING")


class OverloadTest(unittest.TestCase):
    """A closed-loop Run load at 4x the workers' total threads: shed or served, never down."""

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster("overload", workers=2, secure=False, worker_threads=1,
                        server_args=["--probe_interval_ms=100", "--probe_timeout_ms=500"])

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def test_4x_load_marks_no_worker_down_and_errs_only_with_resource_exhausted(self):
        threads = sum(1 for _ in self.c.workers)  # --threads=1 each
        clients = 4 * threads
        graph, x = models.mlp(width=512, depth=6), models.mlp_input(512)
        stop = threading.Event()
        codes = {}
        lock = threading.Lock()
        health = []

        def client():
            stub = self.c.coordinator()
            while not stop.is_set():
                code, details = code_of(lambda: stub.Run(run_request(graph, x), timeout=30))
                with lock:
                    codes.setdefault(code, [0, details])[0] += 1

        def watcher():
            channel = self.c.channel()
            while not stop.is_set():
                try:
                    health.append(harness.health_check(channel, timeout=0.5))
                except grpc.RpcError as e:
                    health.append(str(e.code()))
                for w in self.c.list_workers():
                    health.append(w.health if w.failures == 0 else f"failed:{w.last_error}")
                time.sleep(0.05)

        pool = [threading.Thread(target=client) for _ in range(clients)]
        pool.append(threading.Thread(target=watcher))
        for t in pool:
            t.start()
        time.sleep(12)
        stop.set()
        for t in pool:
            t.join()
        summary = {str(k): v[0] for k, v in codes.items()}
        log(f"{clients} clients for 12 s: {summary}; health samples {len(health)}")
        for code, (n, details) in codes.items():
            self.assertIn(code, (Code.OK, Code.RESOURCE_EXHAUSTED), f"{n} x {code}: {details}")
        self.assertGreater(codes.get(Code.OK, [0])[0], 0)
        bad = [h for h in health if h not in ("SERVING", "up")]
        self.assertEqual(bad, [], "health or worker state went bad under load")
        for w in self.c.list_workers():
            self.assertEqual(w.failures, 0, f"{w.address}: {w.last_error}")


def long_fold_request(matmuls):
    """An Optimize request that keeps the server's CPU busy for seconds (models.long_fold)."""
    request = optimizer_pb2.OptimizeRequest(graph=models.long_fold(matmuls))
    fold = request.pipeline.passes.add(name="constant_fold")
    fold.options["max_growth_bytes"] = str(64 << 20)
    return request


class DeadlineTest(unittest.TestCase):
    """Deadlines reach the optimizer; shutdown does not wait for CPU-bound work."""

    @classmethod
    def setUpClass(cls):
        cls.c = Cluster("deadline", workers=0, secure=False,
                        server_args=["--shutdown_grace_s=1"])

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def optimize_forever(self, timeout):
        return code_of(lambda: self.c.optimizer().Optimize(long_fold_request(400),
                                                           timeout=timeout))

    def test_an_expired_optimize_stops_within_100_ms(self):
        pid = self.c.server.pid
        start = time.time()
        code, details = self.optimize_forever(timeout=1.0)
        elapsed = time.time() - start
        self.assertIn(code, (Code.DEADLINE_EXCEEDED,), details)
        time.sleep(max(0.0, 1.1 - elapsed))
        mid = cpu_seconds(pid)
        time.sleep(0.5)
        spent = cpu_seconds(pid) - mid
        log(f"optimize past its deadline: server CPU {spent:.3f} s in the 0.5 s after deadline "
            f"+ 100 ms")
        self.assertLess(spent, 0.05)
        self.assertEqual(self.c.health(), "SERVING")

    def test_shutdown_ends_cpu_bound_work_after_the_grace_period(self):
        c = Cluster("shutdown", workers=0, secure=False, server_args=["--shutdown_grace_s=1"])
        try:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                pending = pool.submit(lambda: code_of(lambda: c.optimizer().Optimize(
                    long_fold_request(400), timeout=60)))
                time.sleep(0.5)
                start = time.time()
                c.server.proc.send_signal(signal.SIGTERM)
                c.server.proc.wait(timeout=10)
                took = time.time() - start
                code, details = pending.result(timeout=10)
            log(f"shutdown with a CPU-bound Optimize in flight: exited after {took:.2f} s "
                f"(grace 1 s); the call ended {code}: {details}")
            self.assertLess(took, 1.5)
            self.assertEqual(c.server.proc.returncode, 0)
            self.assertIn(code, (Code.UNAVAILABLE, Code.CANCELLED))
        finally:
            c.stop()


class QuotaTest(unittest.TestCase):
    """Per-tenant quotas: RESOURCE_EXHAUSTED naming the quota, with a retry hint."""

    @classmethod
    def setUpClass(cls):
        cls.quotas = os.path.join(harness.TMP, "quotas")
        with open(cls.quotas, "w") as f:
            f.write("acme requests_per_s=2 burst=4 blob_mb=1 max_concurrent=1\n")
        cls.c = Cluster("quota", workers=0, server_args=[f"--quotas_file={cls.quotas}"])

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def test_request_rate(self):
        stub = self.c.optimizer()
        results = []
        for _ in range(8):
            try:
                stub.ListPasses(optimizer_pb2.ListPassesRequest(), metadata=self.c.md("acme"),
                                timeout=10)
                results.append("OK")
            except grpc.RpcError as e:
                self.assertEqual(e.code(), Code.RESOURCE_EXHAUSTED, e.details())
                self.assertIn("requests_per_s", e.details())
                trailers = dict(e.trailing_metadata() or ())
                self.assertIn("grpc-retry-pushback-ms", trailers)
                results.append("RE")
        self.assertIn("RE", results)
        # Another tenant is not limited by acme's quota.
        for _ in range(8):
            stub.ListPasses(optimizer_pb2.ListPassesRequest(), metadata=self.c.md("globex"),
                            timeout=10)

    def test_blob_bytes(self):
        time.sleep(2.5)  # let the rate bucket refill
        data = os.urandom(1536 * 1024)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        code, details = code_of(lambda: self.c.optimizer().PutBlobs(
            iter([optimizer_pb2.BlobChunk(digest=digest, total_size=len(data), data=data)]),
            metadata=self.c.md("acme"), timeout=30))
        self.assertEqual(code, Code.RESOURCE_EXHAUSTED, details)
        self.assertIn("blob_bytes", details)
        self.c.optimizer().PutBlobs(
            iter([optimizer_pb2.BlobChunk(digest=digest, total_size=len(data), data=data)]),
            metadata=self.c.md("globex"), timeout=30)


if __name__ == "__main__":
    harness.run_tests("shared_service_test")
