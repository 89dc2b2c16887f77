"""A gRPC mutation round against a real server with two workers (issue 30): at least 10,000
malformed requests, each answered with a well-formed status (a code other than UNKNOWN and a
non-empty message, or OK), while the server and both workers stay healthy.

Requests start from valid seeds (Optimize of graphs and ONNX models, RegisterOps, Run, HasBlobs,
ListOps) and are mutated two ways: structurally (a field of the message set to a hostile value:
huge or negative dims, wrong types, unknown ops, cycles, deep nesting, very long strings, budgets
past their ceilings, ...) and as bytes (bit flips, truncation, splices of the serialized request,
sent raw so that even unparsable bytes reach the server). The seed of each request is logged
with its failure, so a failure can be replayed.
"""

import concurrent.futures
import random
import struct
import time
import unittest

import grpc

import harness
import models
from harness import Cluster, log, named, tensor
from proto import coordinator_pb2, graph_pb2, op_pb2, optimizer_pb2

ROUNDS = 10000
SEED = 20261207
OPS = ["Add", "MatMul", "Relu", "Conv", "Reshape", "Loop", "If", "Scan", "Concat", "Gather",
       "Tile", "Expand", "ConstantOfShape", "Range", "Slice", "Transpose", "Cast", "Where",
       "Softmax", "Einsum", "TopK", "NonZero", "Split", "Pad", "Resize", "com.x::Nope", ""]
DTYPES = list(range(0, 18)) + [99, -1]
HOSTILE_INTS = [0, -1, 1, 2 ** 31, 2 ** 31 - 1, -(2 ** 31), 2 ** 62, 2 ** 63 - 1, -(2 ** 63)]


def hostile_int(rng):
    return rng.choice(HOSTILE_INTS + [rng.randrange(-10, 100)])


def hostile_string(rng):
    return rng.choice(["", "x" * rng.choice([1, 300, 70000]), "\x00\xff", "../../etc/passwd",
                       "名前", "a" * 64, "sha256:" + "0" * 64, "%s%n{}", "\n"])


def nested(depth):
    """A Loop nested `depth` levels deep."""
    g = graph_pb2.Graph(name="leaf")
    for i in range(depth):
        outer = graph_pb2.Graph(name=f"level{i}")
        n = outer.nodes.add(name=f"n{i}", op_type="Loop", inputs=["", ""], outputs=[f"o{i}"])
        n.attributes.add(name="body").g.CopyFrom(g)
        g = outer
    return g


def mutate_graph(g, rng):
    """One structural mutation of a graph, in place."""
    kind = rng.randrange(16)
    nodes = list(g.nodes)
    if kind == 0 and nodes:
        rng.choice(nodes).op_type = rng.choice(OPS)
    elif kind == 1 and nodes:
        n = rng.choice(nodes)
        n.inputs.append(rng.choice([hostile_string(rng), n.outputs[0] if n.outputs else "x"]))
    elif kind == 2 and g.initializers:
        t = rng.choice(list(g.initializers))
        del t.dims[:]
        t.dims.extend(hostile_int(rng) for _ in range(rng.randrange(0, 9)))
    elif kind == 3 and g.initializers:
        rng.choice(list(g.initializers)).dtype = rng.choice([d for d in DTYPES if d >= 0])
    elif kind == 4 and nodes:
        n = rng.choice(nodes)
        a = n.attributes.add(name=rng.choice(["axis", "perm", "shape", "value", "body", "x"]))
        choice = rng.randrange(4)
        if choice == 0:
            a.i = hostile_int(rng)
        elif choice == 1:
            a.ints.values.extend(hostile_int(rng) for _ in range(rng.randrange(0, 7)))
        elif choice == 2:
            a.s = hostile_string(rng).encode("utf-8", "surrogateescape")
        else:
            a.g.CopyFrom(nested(rng.randrange(1, 200)))
    elif kind == 5 and nodes:
        # A cycle: a node reads what a later one writes.
        a, b = rng.sample(nodes, 2) if len(nodes) > 1 else (nodes[0], nodes[0])
        a.inputs.append(b.outputs[0] if b.outputs else "y")
    elif kind == 6 and nodes:
        n = rng.choice(nodes)
        n.outputs.extend(f"out{i}" for i in range(rng.choice([2, 1000, 100000])))
    elif kind == 7:
        g.nodes.add(name=hostile_string(rng), op_type=rng.choice(OPS),
                    inputs=[hostile_string(rng)], outputs=[hostile_string(rng)])
    elif kind == 8 and g.inputs:
        v = rng.choice(list(g.inputs))
        v.type.dtype = rng.choice([d for d in DTYPES if d >= 0])
        del v.type.shape.dims[:]
        for _ in range(rng.randrange(0, 40)):
            d = v.type.shape.dims.add()
            if rng.random() < 0.5:
                d.size = hostile_int(rng)
            else:
                d.symbol = hostile_string(rng)
    elif kind == 9:
        del g.outputs[:]
        g.outputs.append(harness.value(hostile_string(rng), 1, [1]))
    elif kind == 10 and nodes:
        n = rng.choice(nodes)
        n.domain = rng.choice(["ai.onnx", "com.microsoft", "com.x", hostile_string(rng)])
    elif kind == 11:
        g.opset_imports.add(domain="", version=hostile_int(rng))
    elif kind == 12 and g.initializers:
        t = rng.choice(list(g.initializers))
        t.raw_data = t.raw_data[: rng.randrange(0, max(1, len(t.raw_data)))]
    elif kind == 13 and g.initializers:
        rng.choice(list(g.initializers)).blob = hostile_string(rng)
    elif kind == 14:
        # The same value produced twice, or an initializer shadowing an output.
        if nodes:
            g.nodes.add(name="dup", op_type="Relu", inputs=["x"], outputs=list(nodes[0].outputs))
    else:
        for n in nodes:
            n.name = ""
    return g


def seeds():
    """Valid requests to start from: (method, message)."""
    mlp = models.mlp(width=16, depth=2)
    out = []
    for level in (0, 1, 2, 3):
        r = optimizer_pb2.OptimizeRequest(graph=mlp)
        r.pipeline.opt_level = level
        out.append(("Optimize", r))
    r = optimizer_pb2.OptimizeRequest(graph=mlp)
    r.pipeline.passes.add(name="constant_fold").options["max_folded_bytes"] = "1024"
    out.append(("Optimize", r))
    loop, _ = models.doubling_loop(3)
    out.append(("Optimize", optimizer_pb2.OptimizeRequest(graph=loop)))
    try:
        import onnx
        from onnx import helper, TensorProto
        node = helper.make_node("Relu", ["x"], ["y"])
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
            "x", TensorProto.FLOAT, [1, 4])], [helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, [1, 4])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        out.append(("Optimize", optimizer_pb2.OptimizeRequest(
            onnx_model=model.SerializeToString())))
    except ImportError:
        pass
    op = op_pb2.OpDescriptor(domain="com.fuzz", name="Op", version=1)
    op.inputs.add(name="X", type_constraint="T")
    op.outputs.add(name="Y", type_constraint="T")
    op.type_constraints.add(name="T", allowed=[graph_pb2.DT_FLOAT32])
    op.shape_rule.expr = "output[0] = shape(X);"
    out.append(("RegisterOps", optimizer_pb2.RegisterOpsRequest(ops=[op], validate_only=True)))
    run = coordinator_pb2.RunRequest(graph=mlp, inputs=models.mlp_input(16))
    out.append(("Run", run))
    out.append(("HasBlobs", optimizer_pb2.HasBlobsRequest(digests=["sha256:" + "a" * 64])))
    out.append(("ListOps", optimizer_pb2.ListOpsRequest(domain="", name="Conv")))
    return out


def mutate(method, message, rng):
    """A structurally mutated copy of a seed request."""
    m = type(message)()
    m.CopyFrom(message)
    if method == "Optimize":
        k = rng.randrange(8)
        if k < 4 and m.HasField("graph"):
            for _ in range(rng.randrange(1, 4)):
                mutate_graph(m.graph, rng)
        elif k == 4:
            m.pipeline.passes.add(name=rng.choice(["constant_fold", "fuse_ops", "nope", ""]))
            m.pipeline.passes[-1].options[rng.choice(["max_folded_bytes", "max_growth_bytes",
                                                      "x", "winograd"])] = str(hostile_int(rng))
        elif k == 5:
            m.dim_bindings[hostile_string(rng) or "batch"] = hostile_int(rng)
        elif k == 6:
            m.result_format = rng.choice([0, 1, 2, 7, -3])
            m.pipeline.opt_level = hostile_int(rng) % 2 ** 31 if rng.random() < 0.5 else 9
        else:
            m.ops.add().CopyFrom(op_pb2.OpDescriptor(name=hostile_string(rng), version=-1))
    elif method == "RegisterOps":
        d = m.ops[0]
        k = rng.randrange(5)
        if k == 0:
            d.shape_rule.expr = rng.choice(["output[0] = ", "let x = ((((((", "assert 1/0;",
                                            "output[0] = shape(X)" * 1000, hostile_string(rng)])
        elif k == 1:
            d.body.CopyFrom(mutate_graph(models.mlp(width=4, depth=1), rng))
        elif k == 2:
            d.name = hostile_string(rng)
        elif k == 3:
            d.version = hostile_int(rng)
        else:
            m.ops.extend([d] * rng.choice([2, 500]))
    elif method == "Run":
        k = rng.randrange(4)
        if k < 2:
            mutate_graph(m.graph, rng)
        elif k == 2:
            t = m.inputs[0].tensor
            del t.dims[:]
            t.dims.extend(hostile_int(rng) for _ in range(rng.randrange(0, 5)))
        else:
            m.memory_limit_bytes = hostile_int(rng)
            m.request_id = hostile_string(rng)
    elif method == "HasBlobs":
        m.digests.extend(hostile_string(rng) for _ in range(rng.randrange(1, 20)))
    else:
        m.domain = hostile_string(rng)
        m.name = hostile_string(rng)
    return m


def flip_bytes(data, rng):
    """A byte-level mutation of a serialized request."""
    b = bytearray(data)
    k = rng.randrange(4)
    if k == 0 and b:
        for _ in range(rng.randrange(1, 8)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif k == 1 and b:
        b = b[: rng.randrange(len(b))]
    elif k == 2:
        pos = rng.randrange(len(b) + 1)
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
    elif b:
        a = rng.randrange(len(b))
        b[a:a] = b[a: a + rng.randrange(1, 64)] * rng.randrange(2, 50)
    return bytes(b)


SERVICE = {"Optimize": "GraphOptimizer", "RegisterOps": "GraphOptimizer",
           "HasBlobs": "GraphOptimizer", "ListOps": "GraphOptimizer", "Run": "Coordinator"}


class MutationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Quotas high enough that the requests reach the code under test instead of the
        # tenant's rate limit.
        cls.c = Cluster("mutation", workers=2, secure=False,
                        server_args=["--tenant_requests_per_s=1000000", "--tenant_burst=1000000",
                                     "--tenant_max_concurrent=1000"],
                        worker_args=["--execution_memory_mb=256", "--max_execution_s=5"])

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def test_10000_malformed_requests_get_well_formed_statuses(self):
        channel = self.c.channel()
        seed_list = seeds()
        bad = []
        codes = {}
        examples = {}
        lock = __import__("threading").Lock()

        def one(i):
            rng = random.Random(SEED * 100003 + i)
            method, message = seed_list[i % len(seed_list)]
            raw = rng.random() < 0.3
            if raw:
                payload = flip_bytes(message.SerializeToString(), rng)
            else:
                payload = mutate(method, message, rng).SerializeToString()
            call = channel.unary_unary(f"/graphopt.v1.{SERVICE[method]}/{method}",
                                       request_serializer=lambda b: b,
                                       response_deserializer=lambda b: b)
            try:
                call(payload, timeout=20)
                code, details = grpc.StatusCode.OK, ""
            except grpc.RpcError as e:
                code, details = e.code(), e.details() or ""
            with lock:
                codes[code] = codes.get(code, 0) + 1
                examples.setdefault(code, (i, method, raw, details[:160]))
                if code == grpc.StatusCode.UNKNOWN or (code != grpc.StatusCode.OK and
                                                       not details.strip()):
                    bad.append((i, method, raw, code, details[:200]))

        start = time.time()
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for batch in range(0, ROUNDS, 500):
                list(pool.map(one, range(batch, min(ROUNDS, batch + 500))))
                self.assertEqual(self.c.health(), "SERVING", f"after {batch + 500} requests")
                for w in self.c.workers:
                    self.assertTrue(w.alive(), f"{w.name} died:\n{w.tail()}")
        log(f"{ROUNDS} mutated requests in {time.time() - start:.1f} s: "
            + ", ".join(f"{k.name} {v}" for k, v in sorted(codes.items(), key=lambda kv: -kv[1])))
        for code, example in examples.items():
            log(f"  e.g. {code.name}: {example}")
        self.assertEqual(bad, [], "requests answered with UNKNOWN or an empty message "
                                  "(i, method, raw bytes, code, message); replay with the index")
        self.assertTrue(self.c.server.alive())
        listed = self.c.list_workers()
        self.assertEqual(sorted(w.health for w in listed), ["up", "up"])
        # Still serving real work.
        r = self.c.coordinator().Run(coordinator_pb2.RunRequest(
            graph=models.mlp(), inputs=models.mlp_input()), timeout=60)
        self.assertEqual(len(r.outputs), 1)


if __name__ == "__main__":
    harness.run_tests("mutation_test")
