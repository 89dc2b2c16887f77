"""A Llama-style decoder with a KV cache through graphopt (issue 35): models/export_llm.py's small
variant (RMSNorm, rotary embeddings, grouped-query attention with a causal mask, SwiGLU, past
key/value inputs and present outputs; symbolic batch, sequence and past length).

A prefill of 128 tokens (past length 0: empty tensors) and 32 single-token decode steps, each
step's presents fed back as the next step's pasts, teacher-forced with torch's tokens, at -O0,
-O2 and -O3 in the CLI's own process, and at -O3 through a real graphopt-server and worker
(`graphopt run --server`). Every step's logits and the final presents must be within 1e-3 of
torch's (export_llm.py's reference.npz). The -O2 and -O3 graphs must keep the symbolic dims
and have fewer nodes than the export.

    run.sh llm_decoder_test.py MODEL_DIR/model.onnx   (reference.npz beside it)
"""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx

import harness

MODEL_DIR = os.path.dirname(sys.argv.pop(1)) if len(sys.argv) > 1 else ""
TOLERANCE = 1e-3


def cli(*args, timeout=300):
    r = subprocess.run([harness.CLI, *args], capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"graphopt {' '.join(args)} exited {r.returncode}:\n{r.stdout}"
                             f"\n{r.stderr}")
    return r.stdout


class LlmDecoderTest(unittest.TestCase):
    cluster = None

    @classmethod
    def setUpClass(cls):
        cls.model = os.path.join(MODEL_DIR, "model.onnx")
        cls.ref = np.load(os.path.join(MODEL_DIR, "reference.npz"))
        m = onnx.load(cls.model)
        cls.inputs = [i.name for i in m.graph.input]
        cls.outputs = [o.name for o in m.graph.output]
        cls.nodes_in = len(m.graph.node)
        past = m.graph.input[1].type.tensor_type.shape.dim
        cls.kv_heads, cls.head_dim = past[1].dim_value, past[3].dim_value
        cls.steps = sum(1 for k in cls.ref.files if k.startswith("logits_"))
        cls.prefill = cls.ref["logits_0"].shape[1]
        cls.tmp = tempfile.mkdtemp(dir=harness.TMP)

    @classmethod
    def tearDownClass(cls):
        if cls.cluster is not None:
            cls.cluster.stop()

    def generate(self, level, server=None):
        """Runs the prefill and the decode steps; returns the worst logits error over steps."""
        tokens = self.ref["tokens"]
        batch = tokens.shape[0]
        past = [np.zeros((batch, self.kv_heads, 0, self.head_dim), np.float32)
                for _ in self.inputs[1:]]
        work = tempfile.mkdtemp(dir=self.tmp)
        worst = 0.0
        for step in range(self.steps):
            start = 0 if step == 0 else self.prefill + step - 1
            ids = tokens[:, start:self.prefill + step]
            args = ["run", self.model, "-O", str(level), "-o", os.path.join(work, "out")]
            if server:
                args += ["--server", server]
            for name, value in zip(self.inputs, [ids] + past):
                path = os.path.join(work, f"{name}.npy")
                np.save(path, value)
                args += ["--input", f"{name}={path}"]
            cli(*args)
            got = [np.load(os.path.join(work, "out", f"{n}.npy")) for n in self.outputs]
            want = self.ref[f"logits_{step}"]
            self.assertEqual(got[0].shape, want.shape, f"step {step}: logits shape")
            err = float(np.max(np.abs(got[0] - want)))
            self.assertLessEqual(err, TOLERANCE, f"-O{level} step {step}: logits off by {err}")
            worst = max(worst, err)
            past = got[1:]
        total = self.prefill + self.steps - 1
        for name, value in zip(self.outputs[1:], past):
            want = self.ref[name]
            self.assertEqual(value.shape, want.shape, name)
            self.assertEqual(value.shape[2], total, f"{name}: cache length")
            err = float(np.max(np.abs(value - want)))
            self.assertLessEqual(err, TOLERANCE, f"-O{level} {name}: off by {err}")
        harness.log(f"-O{level}{' via server' if server else ''}: {self.steps} steps "
                    f"(prefill {self.prefill}), worst logits error {worst:.2e}")
        return worst

    def test_optimize_keeps_symbolic_dims_and_removes_nodes(self):
        for level in (2, 3):
            out = os.path.join(self.tmp, f"O{level}.onnx")
            cli("optimize", self.model, "-O", str(level), "-o", out)
            m = onnx.load(out)
            dims = m.graph.input[1].type.tensor_type.shape.dim
            self.assertEqual([d.dim_param for d in dims], ["batch", "", "past", ""],
                             f"-O{level}: past_key_0's dims")
            self.assertLess(len(m.graph.node), self.nodes_in, f"-O{level}: node count")
            harness.log(f"-O{level}: {self.nodes_in} -> {len(m.graph.node)} nodes")

    def test_generate_O0(self):
        self.generate(0)

    def test_generate_O2(self):
        self.generate(2)

    def test_generate_O3(self):
        self.generate(3)

    def test_generate_O3_through_server_and_worker(self):
        cls = type(self)
        if cls.cluster is None:
            cls.cluster = harness.Cluster("llm", workers=1, secure=False)
        self.generate(3, server=cls.cluster.address)
        stub = cls.cluster.worker_stub(cls.cluster.workers[0])
        described = stub.Describe(harness.worker_pb2.DescribeRequest(), timeout=30)
        self.assertGreaterEqual(described.executed, self.steps,
                                "the worker did not execute every step")


if __name__ == "__main__":
    if not MODEL_DIR:
        sys.exit("usage: llm_decoder_test.py MODEL_DIR")
    harness.run_tests("llm_decoder_test")
