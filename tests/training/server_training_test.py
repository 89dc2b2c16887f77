"""Training through the server (graphopt.v1.Coordinator sessions) with the Python client.

The same comparison as training_test.py's MLP, but as a framework client does it: the Python
client (graphopt_client) builds the training step with Optimize, then runs 20 steps as a
training session through the server's Coordinator (Client.session: Run with a session), which
keeps the session on one worker; FetchState through the server returns the weights, which
must match torch.optim's after the same 20 steps within 1e-4 of each tensor's largest
magnitude. Also through the real server: the session's steps all run on one worker, another
tenant cannot see the session, and when the session's worker dies the next step fails with
ABORTED saying the session was lost (no retry elsewhere).
"""

import copy
import os
import sys
import time
import unittest
import urllib.request

import torch

import harness
from harness import log

sys.path.insert(0, os.path.join(harness.RUNFILES, "client", "python"))
sys.path.insert(0, os.path.join(harness.RUNFILES, "tests", "training"))
import graphopt_client  # noqa: E402
import training_test  # noqa: E402
from training_test import RTOL, STEPS, WithLoss, export, mlp, worst_error  # noqa: E402

TIMEOUT_S = 300


class ServerTrainingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.metrics_port_file = os.path.join(harness.TMP, "server_training.metrics_port")
        cls.c = harness.Cluster("server_training", workers=2, secure=True, worker_threads=2,
                                server_args=["--metrics_listen=127.0.0.1:0",
                                             f"--metrics_port_file={cls.metrics_port_file}"])

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def client(self, tenant="acme"):
        return graphopt_client.Client(self.c.address, TIMEOUT_S, token=self.c.tokens[tenant],
                                      tls_ca=self.c.cert("ca.pem"))

    def sessions_metric(self):
        port = int(harness.read(self.metrics_port_file).strip())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("graphopt_training_sessions "):
                    return float(line.split()[1])
        return None

    def training_step(self, client, onnx_model, params, step_options):
        result = client.optimize(
            onnx_model,
            passes=[("infer_type", {}), ("infer_shape", {}),
                    ("gradient", {"wrt": ";".join(params), "loss": "loss"}),
                    ("training_step", step_options)],
            result_format="graph")
        return result.graph

    def setup_mlp(self, client, step_options):
        torch.manual_seed(7)
        model = WithLoss(mlp())
        model.train()
        initial = copy.deepcopy(model.state_dict())
        gen = torch.Generator().manual_seed(1234)
        batches = [(torch.randn((4, 32), generator=gen), torch.randn((4, 10), generator=gen))
                   for _ in range(STEPS)]
        onnx_model = export(model, *batches[0])
        model.load_state_dict(initial)
        params = [name for name, _ in model.named_parameters()]
        graph = self.training_step(client, onnx_model, params, step_options)
        self.assertEqual({u.state for u in graph.state_updates} >= set(params), True)
        return model, initial, batches, params, graph

    def compare(self, step_options, torch_optimizer, name):
        with self.client() as client:
            model, initial, batches, params, graph = self.setup_mlp(client, step_options)
            losses, workers = [], set()
            start = time.time()
            with client.session(name, graph) as session:
                for i, (x, t) in enumerate(batches):
                    out = session.step({"x": x.numpy(), "t": t.numpy()})
                    self.assertEqual(session.state_version, i + 1)
                    self.assertEqual(list(out), ["loss"])
                    losses.append(float(out["loss"]))
                    workers.add(session.last_response.worker_id)
                    self.assertEqual(session.last_response.loaded_plan, i == 0)
                log(f"{STEPS} steps through the server in {time.time() - start:.1f} s")
                # Every step ran where the state is.
                self.assertEqual(len(workers), 1, workers)
                ours = session.fetch_state(params)
                self.assertEqual(session.state_version, STEPS)
                self.assertEqual(sorted(ours), sorted(params))
                # Another tenant sees no such session.
                with self.client("globex") as other:
                    with self.assertRaises(graphopt_client.GraphoptError) as e:
                        other.fetch_state(name)
                    self.assertEqual(e.exception.code, "NOT_FOUND")
                    self.assertFalse(other.end_session(name))
            # Ended: its name is unknown now.
            with self.assertRaises(graphopt_client.GraphoptError) as e:
                client.fetch_state(name)
            self.assertEqual(e.exception.code, "NOT_FOUND")

        opt = torch_optimizer(model.parameters())
        torch_losses = []
        for x, t in batches:
            opt.zero_grad()
            loss = model(x, t)
            loss.backward()
            opt.step()
            torch_losses.append(float(loss))
        loss_err = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, torch_losses))
        worst = ("", 0.0)
        for pname, p in model.named_parameters():
            want = p.detach().numpy()
            got = ours[pname]
            self.assertEqual(got.shape, want.shape, pname)
            err = worst_error(got, want)
            if err > worst[1]:
                worst = (pname, err)
        log(f"weights after {STEPS} steps through the server: worst relative error "
            f"{worst[1]:.2e} ({worst[0]}); worst loss difference {loss_err:.2e}")
        moved = max(worst_error(initial[n].numpy(), p.detach().numpy())
                    for n, p in model.named_parameters())
        self.assertGreater(moved, 10 * RTOL, "the weights hardly moved: a vacuous comparison")
        self.assertLessEqual(worst[1], RTOL, f"{worst[0]} differs from torch")
        self.assertLessEqual(loss_err, RTOL)

    def test_mlp_sgd_momentum(self):
        self.compare({"optimizer": "momentum", "lr": "0.05", "momentum": "0.9"},
                     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), "mlp-momentum")

    def test_mlp_adam(self):
        self.compare({"optimizer": "adam", "lr": "0.001"},
                     lambda p: torch.optim.Adam(p, lr=0.001), "mlp-adam")

    def test_zz_worker_death_loses_the_session(self):
        # Last (by name): it kills a worker.
        with self.client() as client:
            _, _, batches, _, graph = self.setup_mlp(client, {"optimizer": "sgd", "lr": "0.01"})
            session = client.session("doomed", graph)
            x, t = batches[0]
            session.step({"x": x.numpy(), "t": t.numpy()})
            address = session.last_response.worker_address
            self.assertEqual(self.sessions_metric(), 1)
            victim = [w for w in self.c.workers if address.endswith(f":{w.port}")]
            self.assertEqual(len(victim), 1, address)
            victim[0].proc.kill()
            victim[0].proc.wait()
            with self.assertRaises(graphopt_client.GraphoptError) as e:
                session.step({"x": x.numpy(), "t": t.numpy()})
            self.assertEqual(e.exception.code, "ABORTED")
            self.assertIn("session 'doomed' was lost with worker", e.exception.message)
            self.assertIn("start it again from your last fetched state", e.exception.message)
            log(f"after the worker's death: {e.exception.message}")
            self.assertTrue(session.end())
            # A new session of the name starts on the worker that is left.
            again = client.session("doomed", graph)
            again.step({"x": x.numpy(), "t": t.numpy()})
            self.assertNotEqual(again.last_response.worker_address, address)
            self.assertEqual(again.state_version, 1)
            again.end()


if __name__ == "__main__":
    torch.set_num_threads(2)
    harness.run_tests("server_training_test")
