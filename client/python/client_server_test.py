"""graphopt_client against the real graphopt-server binary, with a model exported by torch.

Starts graphopt-server on a free loopback port (--listen=127.0.0.1:0 --port_file=...), then:
optimizes a torch-exported MLP (ONNX bytes) at opt_level=1 and with explicit passes and checks
the result with onnx.checker and the pass reports; checks the errors (unknown pass: NOT_FOUND
naming it; malformed model: INVALID_ARGUMENT); sends the same model with upload_weights=True
(its 128 KiB weight goes through HasBlobs/PutBlobs) and requires the very same result as the
inline call; a repeated request is a cache hit with the same bytes; verify=True reports per
output, and fails over tolerance; lists passes and ops. The server is killed at the end, whatever happened (and
dies with this process should it be killed: PR_SET_PDEATHSIG).

    client_server_test.py --server PATH/TO/graphopt-server

Run with Debian's /usr/bin/python3 (see run_python_test.sh); needs torch, onnx and numpy.
"""

import argparse
import ctypes
import io
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import onnx
import onnx.checker
import onnx.numpy_helper
import torch
from torch import nn

import graphopt_client
from graphopt_client import GraphoptError, weights

# The level-1 pipeline, in order (README.md, docs/architecture.md).
O1_PASSES = ["inline_functions", "infer_type", "infer_shape", "gradient", "eliminate_identity",
             "common_subexpression_elimination", "dead_code_elimination"]
STARTUP_TIMEOUT_S = 30

SERVER_PATH = None  # set by main()


class MLP(nn.Module):
    """Linear(64, 512) - BatchNorm - ReLU - Dropout - Linear(512, 16) - Softmax.

    In eval mode torch exports BatchNormalization with its running statistics, and as a fresh
    BatchNorm's running_var equals its weight (ones) and running_mean its bias (zeros), the
    exporter shares those initializers through two Identity nodes: eliminate_identity (level 1)
    removes them. fc1's weight is 128 KiB (a blob with upload_weights); the others are smaller.
    """

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 512)
        self.bn = nn.BatchNorm1d(512)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(512, 16)

    def forward(self, x):
        return torch.softmax(self.fc2(self.drop(torch.relu(self.bn(self.fc1(x))))), dim=-1)


def export_mlp() -> bytes:
    torch.manual_seed(0)
    buffer = io.BytesIO()
    torch.onnx.export(MLP().eval(), torch.randn(2, 64), buffer, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}},
                      opset_version=13)
    return buffer.getvalue()


def _die_with_parent():
    """In the server's child process: SIGKILL it when this test process dies."""
    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


class Server:
    """graphopt-server on a free loopback port, for the duration of the tests."""

    def __init__(self, binary: str, work_dir: str):
        self.port_file = os.path.join(work_dir, "port")
        self.log_path = os.path.join(work_dir, "server.log")
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [binary, "--insecure", "--listen=127.0.0.1:0", f"--port_file={self.port_file}",
             "--threads=4"],
            stdout=self._log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        self.address = f"127.0.0.1:{self._wait_for_port()}"

    def _wait_for_port(self) -> int:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"graphopt-server exited with {self.process.returncode} "
                                   f"during start-up:\n{self.log()}")
            try:
                with open(self.port_file) as f:
                    text = f.read().strip()
                if text:
                    return int(text)
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"no port file after {STARTUP_TIMEOUT_S} s:\n{self.log()}")

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def kill(self) -> None:
        """Kills the server (idempotent)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if not self._log.closed:
            self._log.close()


SERVER = None  # the running Server, for all tests


def setUpModule():
    global SERVER
    work_dir = os.environ.get("TEST_TMPDIR") or tempfile.mkdtemp(prefix="graphopt_client_test")
    SERVER = Server(SERVER_PATH, work_dir)


def tearDownModule():
    if SERVER is not None:
        SERVER.kill()


class ClientServerTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.model_bytes = export_mlp()
        cls.model = onnx.load_model_from_string(cls.model_bytes)
        cls.client = graphopt_client.Client(SERVER.address, timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def run(self, result=None):
        # On a failure, the server's log tells what it saw.
        failures_before = len(result.failures) + len(result.errors) if result else 0
        outcome = super().run(result)
        if result and len(result.failures) + len(result.errors) > failures_before:
            sys.stderr.write(f"--- graphopt-server log ---\n{SERVER.log()}\n")
        return outcome

    def test_exported_model_is_what_the_test_expects(self):
        ops = [node.op_type for node in self.model.graph.node]
        self.assertEqual(ops.count("Identity"), 2, ops)
        fc1 = next(t for t in self.model.graph.initializer if t.name == "fc1.weight")
        self.assertEqual(len(fc1.raw_data), 128 * 1024)

    def test_opt_level_1(self):
        result = self.client.optimize(self.model_bytes, opt_level=1)
        self.assertEqual(result.format, "onnx")
        optimized = onnx.load_model_from_string(result.model)
        onnx.checker.check_model(optimized, full_check=True)

        self.assertEqual([r.name for r in result.reports], O1_PASSES)
        self.assertEqual(result.nodes_before, len(self.model.graph.node))
        self.assertEqual(result.nodes_after, len(self.model.graph.node) - 2)
        for before, after in zip(result.reports, result.reports[1:]):
            self.assertEqual(after.nodes_before, before.nodes_after)
        identity = result.reports[O1_PASSES.index("eliminate_identity")]
        self.assertTrue(identity.changed)
        self.assertEqual((identity.nodes_before, identity.nodes_after), (7, 5))
        self.assertGreater(result.total_time_us, 0)
        self.assertGreaterEqual(result.total_time_us, sum(r.wall_time_us for r in result.reports))

        ops = [node.op_type for node in optimized.graph.node]
        self.assertEqual(ops, ["Gemm", "BatchNormalization", "Relu", "Gemm", "Softmax"])
        self.assertEqual([i.name for i in optimized.graph.input], ["x"])
        self.assertEqual([o.name for o in optimized.graph.output], ["y"])
        # The weights still used arrive unchanged.
        originals = {t.name: t for t in self.model.graph.initializer}
        for tensor in optimized.graph.initializer:
            np.testing.assert_array_equal(onnx.numpy_helper.to_array(tensor),
                                          onnx.numpy_helper.to_array(originals[tensor.name]))

    def test_explicit_passes_and_dim_binding(self):
        result = self.client.optimize(self.model_bytes, passes=["eliminate_identity"],
                                      dim_bindings={"batch": 8}, verify_each_pass=True)
        names = [r.name for r in result.reports]
        self.assertEqual(names[-1], "eliminate_identity")
        self.assertEqual(result.nodes_after, 5)
        for report in result.reports[:-1]:  # passes the pipeline added for eliminate_identity
            self.assertNotEqual(report.added_for, "", report)
        optimized = onnx.load_model_from_string(result.model)
        onnx.checker.check_model(optimized, full_check=True)
        batch = optimized.graph.input[0].type.tensor_type.shape.dim[0]
        self.assertEqual(batch.dim_value, 8, batch)

    def test_unknown_pass_is_not_found(self):
        with self.assertRaises(GraphoptError) as caught:
            self.client.optimize(self.model_bytes, passes=["infer_type", "no_such_pass"])
        self.assertEqual(caught.exception.code, "NOT_FOUND")
        self.assertIn("no_such_pass", caught.exception.message)
        self.assertEqual(caught.exception.rpc, "Optimize")

    def test_malformed_model_is_invalid_argument(self):
        for garbage in (b"\xff\xff\xff\xff\xff", self.model_bytes[:len(self.model_bytes) // 2]):
            with self.subTest(size=len(garbage)), self.assertRaises(GraphoptError) as caught:
                self.client.optimize(garbage, opt_level=1)
            self.assertEqual(caught.exception.code, "INVALID_ARGUMENT")
            self.assertTrue(caught.exception.message)

    def test_upload_weights_gives_the_inline_result(self):
        inline = self.client.optimize(self.model_bytes, opt_level=1, upload_weights=False)
        self.assertIsNone(inline.upload)

        light = onnx.load_model_from_string(self.model_bytes)
        blobs = weights.externalize_onnx_initializers(light)
        self.assertEqual(len(blobs), 1, "expected exactly one initializer >= 64 KiB")
        (digest, data), = blobs.items()

        uploaded = self.client.optimize(self.model_bytes, opt_level=1, upload_weights=True)
        self.assertEqual(uploaded.upload.blobs, 1)
        self.assertEqual(uploaded.upload.blob_bytes, len(data))
        self.assertEqual(self.client.has_blobs([digest]).missing, [])
        self.assertEqual(uploaded.model, inline.model)
        self.assertEqual([(r.name, r.changed, r.nodes_before, r.nodes_after)
                          for r in uploaded.reports],
                         [(r.name, r.changed, r.nodes_before, r.nodes_after)
                          for r in inline.reports])
        onnx.checker.check_model(onnx.load_model_from_string(uploaded.model), full_check=True)

        # The server holds the blob now: nothing is uploaded the second time.
        again = self.client.optimize(self.model_bytes, opt_level=1, upload_weights=True)
        self.assertEqual(again.upload.uploaded_blobs, 0)
        self.assertEqual(again.model, inline.model)

    def test_optimize_file_with_external_data(self):
        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "mlp.onnx")
        onnx.save_model(self.model, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location="mlp.data", size_threshold=1024)
        self.assertLess(os.path.getsize(path), 16384, "the weights stayed inline")
        inline = self.client.optimize(self.model_bytes, opt_level=1, upload_weights=False)
        seen = []
        out = os.path.join(folder, "out.onnx")
        result = self.client.optimize_file(path, out, opt_level=1,
                                           progress=lambda sent, total: seen.append((sent, total)))
        self.assertEqual(result.model, inline.model)
        self.assertGreater(result.upload.blobs, 0)
        if result.upload.uploaded_bytes:
            self.assertEqual(seen[-1], (result.upload.uploaded_bytes,) * 2)
        # The output keeps its weights beside it, as the input did; onnx reads it back.
        self.assertTrue(os.path.exists(os.path.join(folder, "out.onnx.data")))
        written = onnx.load(out)
        for t in written.graph.initializer:
            t.ClearField("data_location")  # onnx.load marks loaded tensors as DEFAULT
        self.assertEqual(written.SerializeToString(), inline.onnx_model().SerializeToString())
        # A second call finds every weight on the server.
        again = self.client.optimize_file(path, opt_level=1, progress=False)
        self.assertEqual(again.upload.uploaded_blobs, 0)

    def test_optimize_file_refuses_locations_outside_the_folder(self):
        folder = tempfile.mkdtemp()
        inner = os.path.join(folder, "model")
        os.makedirs(inner)
        with open(os.path.join(folder, "secret.bin"), "wb") as f:
            f.write(b"\0" * (1 << 20))
        os.symlink(os.path.join(folder, "secret.bin"), os.path.join(inner, "link.bin"))
        name = next(t.name for t in self.model.graph.initializer if len(t.raw_data) >= 1024)
        for location, why in ((os.path.join(folder, "secret.bin"), "is absolute"),
                              ("../secret.bin", "climbs out"),
                              ("link.bin", "outside the model's folder")):
            m = onnx.ModelProto()
            m.CopyFrom(self.model)
            t = next(t for t in m.graph.initializer if t.name == name)
            t.ClearField("raw_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            t.external_data.add(key="location", value=location)
            path = os.path.join(inner, "m.onnx")
            onnx.save(m, path)
            with self.assertRaises(ValueError) as caught:
                self.client.optimize_file(path, progress=False)
            self.assertIn(f"initializer '{name}'", str(caught.exception))
            self.assertIn(why, str(caught.exception))

    def test_upload_of_a_new_blob(self):
        # A model with a weight no other test uses: the upload must really happen.
        model = onnx.load_model_from_string(self.model_bytes)
        fc1 = next(t for t in model.graph.initializer if t.name == "fc1.weight")
        fc1.raw_data = fc1.raw_data[::-1]
        digest = weights.blob_digest(fc1.raw_data)
        self.assertEqual(list(self.client.has_blobs([digest]).missing), [digest])

        inline = self.client.optimize(model, opt_level=1)
        uploaded = self.client.optimize(model, opt_level=1, upload_weights=True)
        self.assertEqual(uploaded.upload.uploaded_blobs, 1)
        self.assertEqual(uploaded.upload.uploaded_bytes, 128 * 1024)
        self.assertEqual(uploaded.model, inline.model)

    def test_graph_result_with_upload(self):
        inline = self.client.optimize(self.model_bytes, opt_level=1, result_format="graph")
        self.assertEqual(inline.format, "graph")
        self.assertEqual(len(inline.graph.nodes), 5)
        uploaded = self.client.optimize(self.model_bytes, opt_level=1, result_format="graph",
                                        upload_weights=True)
        self.assertEqual(uploaded.graph, inline.graph)
        self.assertTrue(all(not t.blob for t in uploaded.graph.initializers))

    def test_grad_of_params_and_inputs(self):
        """grad(): the gradient pass with params/inputs expanded here, then level 2."""
        from onnx import TensorProto, helper  # pylint: disable=import-outside-toplevel

        rng = np.random.RandomState(2)
        inits = [onnx.numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), n)
                 for n, shape in (("W", (4, 3)), ("b", (3,)))]
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["z"]),
             helper.make_node("Relu", ["z"], ["y"])], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        result = self.client.grad(model.SerializeToString(), "params,inputs", outputs="y")
        self.assertEqual(result.format, "onnx")
        out = result.onnx_model()
        self.assertEqual([o.name for o in out.graph.output], ["y", "W_grad", "b_grad", "x_grad"])
        self.assertIn("y_grad", [i.name for i in out.graph.input])
        names = [r.name for r in result.reports]
        self.assertEqual(names[:3], ["infer_type", "infer_shape", "gradient"])
        self.assertIn("constant_fold", names)
        with self.assertRaises(GraphoptError) as raised:
            self.client.grad(model.SerializeToString(), ["nope"], loss=["y"])
        self.assertEqual(raised.exception.code, "INVALID_ARGUMENT")
        self.assertIn("nope", raised.exception.message)

    def test_repeated_request_is_a_cache_hit(self):
        # A binding no other test uses: the first call cannot have been answered before.
        first = self.client.optimize(self.model_bytes, opt_level=2, dim_bindings={"batch": 5})
        second = self.client.optimize(self.model_bytes, opt_level=2, dim_bindings={"batch": 5})
        self.assertEqual(first.cache, "miss")
        self.assertEqual(second.cache, "hit")
        self.assertEqual(second.model, first.model)
        self.assertEqual([r.name for r in second.reports], [r.name for r in first.reports])
        uncached = self.client.optimize(self.model_bytes, opt_level=2, dim_bindings={"batch": 5},
                                        no_cache=True)
        self.assertEqual(uncached.cache, "not_used")
        self.assertEqual(uncached.model, first.model)

    def test_verify(self):
        result = self.client.optimize(self.model_bytes, opt_level=3, dim_bindings={"batch": 3},
                                      verify=True, verify_seed=11)
        report = result.verification
        self.assertIsNotNone(report)
        self.assertTrue(report.passed)
        self.assertEqual(report.seed, 11)
        self.assertEqual(report.generated_inputs, ("x",))
        self.assertEqual([o.name for o in report.outputs], ["y"])
        self.assertTrue(all(o.passed and o.max_abs_error < 1e-5 for o in report.outputs))
        self.assertEqual((report.rtol, report.atol), (1e-4, 1e-6))
        # Given inputs need no binding and are not generated.
        x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
        given = self.client.optimize(self.model_bytes, opt_level=2, verify=True,
                                     verify_inputs={"x": x}, rtol=1e-3)
        self.assertEqual(given.verification.generated_inputs, ())
        self.assertEqual(given.verification.rtol, 1e-3)
        self.assertIsNone(self.client.optimize(self.model_bytes, opt_level=2).verification)

    def test_verify_errors(self):
        with self.assertRaises(GraphoptError) as raised:
            self.client.optimize(self.model_bytes, opt_level=2, verify=True)
        self.assertEqual(raised.exception.code, "INVALID_ARGUMENT")
        self.assertIn("input 'x' dim 0 is symbolic 'batch'", raised.exception.message)
        # -O3's fused kernels (kept in a graphopt graph; a portable ONNX result runs their
        # standard-op bodies) round differently from the unfused ones: a tolerance no float
        # computation meets shows the failure (FAILED_PRECONDITION naming the output).
        with self.assertRaises(GraphoptError) as raised:
            self.client.optimize(self.model_bytes, opt_level=3, dim_bindings={"batch": 3},
                                 result_format="graph", verify=True, rtol=1e-300, atol=1e-300)
        self.assertEqual(raised.exception.code, "FAILED_PRECONDITION")
        self.assertIn("output 'y'", raised.exception.message)
        with self.assertRaises(ValueError):
            self.client.optimize(self.model_bytes, rtol=1e-3)

    def test_lists(self):
        passes = {p.name: p for p in self.client.list_passes()}
        for name in O1_PASSES:
            self.assertIn(name, passes)
            self.assertEqual(passes[name].min_opt_level, 1, name)
        ops = {op.name for op in self.client.list_ops()}
        self.assertTrue({"Gemm", "BatchNormalization", "Relu", "Softmax"} <= ops, ops)
        self.assertEqual([op.name for op in self.client.list_ops(name="Gemm")], ["Gemm"])
        self.assertEqual(self.client.list_ops(name="NoSuchOp"), [])


def main():
    global SERVER_PATH
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="the graphopt-server binary")
    args, unittest_args = parser.parse_known_args()
    SERVER_PATH = os.path.abspath(args.server)
    try:
        unittest.main(argv=[sys.argv[0]] + unittest_args, verbosity=2)
    finally:
        tearDownModule()  # also when unittest itself fails before or after the tests


if __name__ == "__main__":
    main()
