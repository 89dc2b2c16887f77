"""Tests of graphopt_client that need no graphopt server.

- weights: externalizing large initializers into blob references and re-attaching them gives
  back the model byte for byte (ONNX and graphopt Graph), bad references fail with DATA_LOSS,
  and the PutBlobs chunk stream follows the contract;
- credentials: the token (argument or GRAPHOPT_TOKEN) and tenant reach every RPC as metadata,
  bad tokens and contradicting TLS arguments are refused, TLS with tls_ca / tls_cert / tls_key /
  tls_server_name against an in-process TLS server (certificates from
  scripts/make_dev_certs.sh);
- the client against FakeOptimizer, an in-process gRPC implementation of
  graphopt.v1.GraphOptimizer that checks what the contract says the server checks (the chunk
  protocol, digests, that every referenced blob was uploaded before Optimize): request
  building, results, error mapping, the upload of only the missing blobs, the retry after a
  lost blob and the fallback when the server has no blob store.

Run with Debian's /usr/bin/python3 (see run_python_test.sh); needs onnx and numpy.
"""

import base64
import concurrent.futures
import hashlib
import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import unittest
from typing import Dict
from unittest import mock

import grpc
import numpy as np
import onnx
from onnx import helper, numpy_helper

import graphopt_client
from graphopt_client import client as client_module
from graphopt_client import graph_pb2, optimizer_pb2, optimizer_pb2_grpc, weights
from graphopt_client.errors import GraphoptError

KIB = 1024
THRESHOLD = weights.BLOB_THRESHOLD_BYTES


def _floats(count: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(count).astype(np.float32)


def make_onnx_model() -> onnx.ModelProto:
    """A small valid model whose initializers cover every case of externalization:

    w_big (128 KiB) and w_twin (the same bytes) share one blob; w_edge is exactly 64 KiB (a blob);
    w_below is 4 bytes short of 64 KiB, b_small is tiny, w_typed keeps 96 KiB in float_data
    (not raw_data) and w_file already lives in an external file: those four stay as they are.
    """
    big = _floats(32 * KIB, seed=1)          # 128 KiB
    edge = _floats(THRESHOLD // 4, seed=2)   # exactly 64 KiB
    below = _floats(THRESHOLD // 4 - 1, seed=3)
    initializers = [
        numpy_helper.from_array(big.reshape(128, 256), "w_big"),
        numpy_helper.from_array(big.reshape(128, 256), "w_twin"),
        numpy_helper.from_array(edge.reshape(64, 256), "w_edge"),
        numpy_helper.from_array(below, "w_below"),
        numpy_helper.from_array(np.ones(256, np.float32), "b_small"),
        helper.make_tensor("w_typed", onnx.TensorProto.FLOAT, [24 * KIB],
                           _floats(24 * KIB, seed=4).tolist()),
    ]
    external = onnx.TensorProto(name="w_file", data_type=onnx.TensorProto.FLOAT, dims=[4],
                                data_location=onnx.TensorProto.EXTERNAL)
    set_external(external, location="weights.bin", offset=0, length=16)
    initializers.append(external)
    nodes = [
        helper.make_node("MatMul", ["x", "w_big"], ["h1"], name="mm1"),
        helper.make_node("MatMul", ["x", "w_twin"], ["h2"], name="mm2"),
        helper.make_node("Add", ["h1", "h2"], ["h3"], name="add"),
        helper.make_node("Add", ["h3", "b_small"], ["y"], name="bias"),
    ]
    graph = helper.make_graph(
        nodes, "weights_test",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 128])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 256])],
        initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="graphopt_client_test")


def make_graph_message() -> graph_pb2.Graph:
    """A graphopt Graph with one 128 KiB, one 64 KiB and one small initializer."""
    graph = graph_pb2.Graph(name="g")
    graph.initializers.add(name="w", dtype=graph_pb2.DT_FLOAT32, dims=[32 * KIB],
                           raw_data=_floats(32 * KIB, seed=5).tobytes())
    graph.initializers.add(name="w_edge", dtype=graph_pb2.DT_FLOAT32, dims=[THRESHOLD // 4],
                           raw_data=_floats(THRESHOLD // 4, seed=6).tobytes())
    graph.initializers.add(name="b", dtype=graph_pb2.DT_FLOAT32, dims=[2],
                           raw_data=np.ones(2, np.float32).tobytes())
    graph.nodes.add(name="n", op_type="Add", inputs=["w", "w"], outputs=["y"])
    return graph


def set_external(tensor, **entries) -> None:
    """Makes `tensor` refer to external data with these entries (location, offset, length)."""
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    del tensor.external_data[:]
    for key, value in entries.items():
        entry = tensor.external_data.add()
        entry.key, entry.value = key, str(value)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def external_entries(tensor) -> dict:
    return {entry.key: entry.value for entry in tensor.external_data}


class WeightsTest(unittest.TestCase):

    def test_digest_format(self):
        self.assertEqual(weights.blob_digest(b"abc"), sha256_digest(b"abc"))
        self.assertTrue(weights.is_blob_digest(weights.blob_digest(b"")))
        self.assertFalse(weights.is_blob_digest("sha256:" + "A" * 64))
        self.assertFalse(weights.is_blob_digest("sha256:" + "a" * 63))
        self.assertFalse(weights.is_blob_digest("md5:" + "a" * 64))

    def test_onnx_externalize_then_reattach_is_exact(self):
        model = make_onnx_model()
        original = model.SerializeToString()
        raw = {t.name: t.raw_data for t in model.graph.initializer}

        light = onnx.ModelProto.FromString(original)
        blobs = weights.externalize_onnx_initializers(light)

        # Exactly w_big/w_twin (one shared blob) and w_edge moved out.
        self.assertEqual(list(blobs), [sha256_digest(raw["w_big"]), sha256_digest(raw["w_edge"])])
        self.assertEqual(blobs[sha256_digest(raw["w_big"])], raw["w_big"])
        by_name = {t.name: t for t in light.graph.initializer}
        for name in ("w_big", "w_twin", "w_edge"):
            tensor = by_name[name]
            self.assertFalse(tensor.HasField("raw_data"), name)
            self.assertEqual(tensor.data_location, onnx.TensorProto.EXTERNAL, name)
            self.assertEqual([e.key for e in tensor.external_data], ["location", "length"])
            self.assertEqual(external_entries(tensor), {
                "location": "graphopt-blob:" + sha256_digest(raw[name]),
                "length": str(len(raw[name])),
            })
        for name in ("w_below", "b_small", "w_typed", "w_file"):
            self.assertEqual(by_name[name], {t.name: t for t in model.graph.initializer}[name],
                             name)
        self.assertLess(light.ByteSize(), len(original) - 190 * KIB)

        self.assertEqual(weights.reattach_onnx_initializers(light, blobs), 3)
        self.assertEqual(light.SerializeToString(), original)

    def test_onnx_threshold_is_a_parameter(self):
        model = make_onnx_model()
        blobs = weights.externalize_onnx_initializers(model, threshold=1)
        # Every raw_data initializer now; w_typed (float_data) and w_file (a file) still not.
        self.assertEqual(len(blobs), 4)
        self.assertEqual(
            sorted(t.name for t in model.graph.initializer if not t.HasField("raw_data")
                   and t.data_location == onnx.TensorProto.EXTERNAL
                   and external_entries(t)["location"].startswith("graphopt-blob:")),
            ["b_small", "w_below", "w_big", "w_edge", "w_twin"])

    def test_onnx_reattach_unknown_blob_is_data_loss(self):
        model = make_onnx_model()
        blobs = weights.externalize_onnx_initializers(model)
        del blobs[next(iter(blobs))]
        with self.assertRaises(GraphoptError) as caught:
            weights.reattach_onnx_initializers(model, blobs)
        self.assertEqual(caught.exception.code, "DATA_LOSS")
        self.assertIn("'w_big'", caught.exception.message)
        self.assertIn("sha256:", caught.exception.message)

    def test_onnx_reattach_honours_offset_and_length_and_checks_them(self):
        data = bytes(range(256)) * 4
        digest = sha256_digest(data)
        tensor = onnx.TensorProto(name="t", data_type=onnx.TensorProto.UINT8, dims=[8],
                                  data_location=onnx.TensorProto.EXTERNAL)
        set_external(tensor, location="graphopt-blob:" + digest, offset=16, length=8)
        model = helper.make_model(helper.make_graph([], "g", [], [], initializer=[tensor]))
        self.assertEqual(weights.reattach_onnx_initializers(model, {digest: data}), 1)
        restored = model.graph.initializer[0]
        self.assertEqual(restored.raw_data, data[16:24])
        self.assertFalse(restored.HasField("data_location"))
        self.assertEqual(len(restored.external_data), 0)

        set_external(tensor, location="graphopt-blob:" + digest, offset=1020,
                                 length=8)
        model = helper.make_model(helper.make_graph([], "g", [], [], initializer=[tensor]))
        with self.assertRaises(GraphoptError) as caught:
            weights.reattach_onnx_initializers(model, {digest: data})
        self.assertEqual(caught.exception.code, "DATA_LOSS")
        self.assertIn("[1020, 1028)", caught.exception.message)

    def test_onnx_reattach_reaches_subgraphs_and_constants(self):
        data = _floats(THRESHOLD, seed=7).tobytes()
        digest = sha256_digest(data)

        def referring_tensor(name):
            tensor = onnx.TensorProto(name=name, data_type=onnx.TensorProto.FLOAT,
                                      dims=[THRESHOLD], data_location=onnx.TensorProto.EXTERNAL)
            set_external(tensor, location="graphopt-blob:" + digest,
                                     length=len(data))
            return tensor

        constant = helper.make_node("Constant", [], ["c"], value=referring_tensor("c_value"))
        body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["out"])], "body", [],
                                 [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT,
                                                                [THRESHOLD])],
                                 initializer=[referring_tensor("c_in")])
        branch = helper.make_node("If", ["cond"], ["r"], then_branch=body, else_branch=body)
        model = helper.make_model(helper.make_graph([constant, branch], "g", [], []))
        self.assertEqual(weights.reattach_onnx_initializers(model, {digest: data}), 3)
        self.assertEqual(model.graph.node[0].attribute[0].t.raw_data, data)
        for attribute in model.graph.node[1].attribute:
            self.assertEqual(attribute.g.initializer[0].raw_data, data)

    def test_graph_externalize_then_reattach_is_exact(self):
        graph = make_graph_message()
        original = graph.SerializeToString()
        light = graph_pb2.Graph.FromString(original)
        blobs = weights.externalize_graph_initializers(light)
        self.assertEqual(list(blobs), [sha256_digest(graph.initializers[0].raw_data),
                                       sha256_digest(graph.initializers[1].raw_data)])
        self.assertEqual([t.blob for t in light.initializers], list(blobs) + [""])
        self.assertEqual([len(t.raw_data) for t in light.initializers], [0, 0, 8])
        self.assertEqual(weights.reattach_graph_tensors(light, blobs), 2)
        self.assertEqual(light.SerializeToString(), original)

    def test_graph_reattach_unknown_blob_is_data_loss(self):
        graph = make_graph_message()
        graph.initializers[0].raw_data = b""
        graph.initializers[0].blob = "sha256:" + "0" * 64
        with self.assertRaises(GraphoptError) as caught:
            weights.reattach_graph_tensors(graph, {})
        self.assertEqual(caught.exception.code, "DATA_LOSS")
        self.assertIn("'w'", caught.exception.message)

    def test_chunks_follow_the_contract(self):
        chunk = 1000
        sizes = [0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk, 3 * chunk + 7]
        blobs = [(f"d{i}", bytes([i]) * size) for i, size in enumerate(sizes)]
        chunks = list(weights.iter_blob_chunks(blobs, chunk_bytes=chunk))
        # Reassemble as the server does: a chunk with a digest starts the next blob.
        rebuilt, expected_chunks = [], 0
        for message in chunks:
            self.assertLessEqual(len(message.data), chunk)
            if message.digest:
                rebuilt.append([message.digest, message.total_size, bytearray(message.data)])
            else:
                self.assertEqual(message.total_size, 0)
                self.assertTrue(rebuilt)
                rebuilt[-1][2] += message.data
        for (digest, data), (got_digest, total, got) in zip(blobs, rebuilt):
            self.assertEqual((got_digest, total, bytes(got)), (digest, len(data), data))
            expected_chunks += max(1, -(-len(data) // chunk))
        self.assertEqual(len(rebuilt), len(blobs))
        self.assertEqual(len(chunks), expected_chunks)
        self.assertEqual(weights.CHUNK_BYTES, 1 << 20)
        with self.assertRaises(ValueError):
            next(weights.iter_blob_chunks([("d", b"x")], chunk_bytes=0))


class FakeOptimizer(optimizer_pb2_grpc.GraphOptimizerServicer):
    """graphopt.v1.GraphOptimizer as the contract describes it, minus the optimization: Optimize
    echoes the model (or whatever `transform` makes of it) with one report. It checks chunk
    streams and digests like the real server and refuses references to blobs it lacks."""

    def __init__(self):
        self.lock = threading.Lock()
        self.store = {}
        self.blobs_supported = True
        self.optimize_requests = []
        self.has_blobs_requests = []
        self.put_blobs_calls = []       # per call: [(digest, [chunk sizes])]
        self.optimize_errors = []       # (code, message) to answer the next Optimize calls with
        self.lose_store_on_optimize = False
        self.transform = None           # onnx.ModelProto -> onnx.ModelProto for the response
        self.no_onnx_in_response = False
        self.cost = None                # CostReport answered when a request asks for one

    # --- blobs -------------------------------------------------------------------------------

    def HasBlobs(self, request, context):
        if not self.blobs_supported:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        with self.lock:
            self.has_blobs_requests.append(request)
            missing = [d for d in dict.fromkeys(request.digests) if d not in self.store]
        return optimizer_pb2.HasBlobsResponse(missing=missing, free_bytes=1 << 30)

    def PutBlobs(self, request_iterator, context):
        if not self.blobs_supported:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        uploads, stored, received = [], [], 0
        current = None  # [digest, total_size, bytearray]
        for chunk in request_iterator:
            received += len(chunk.data)
            if chunk.digest:
                if current is not None:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"blob {current[0]} incomplete when {chunk.digest} started")
                if not weights.is_blob_digest(chunk.digest):
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad digest {chunk.digest}")
                current = [chunk.digest, chunk.total_size, bytearray()]
                uploads.append((chunk.digest, []))
            elif current is None or chunk.total_size:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "chunk outside of a blob")
            uploads[-1][1].append(len(chunk.data))
            current[2] += chunk.data
            if len(current[2]) > current[1]:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"blob {current[0]} overruns")
            if len(current[2]) == current[1]:
                data = bytes(current[2])
                if sha256_digest(data) != current[0]:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"blob {current[0]}: received data hashes to "
                                  f"{sha256_digest(data)}")
                with self.lock:
                    self.store[current[0]] = data
                stored.append(current[0])
                current = None
        if current is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"blob {current[0]} incomplete")
        with self.lock:
            self.put_blobs_calls.append(uploads)
        return optimizer_pb2.PutBlobsResponse(stored=stored, bytes_received=received)

    # --- optimize ----------------------------------------------------------------------------

    def Optimize(self, request, context):
        with self.lock:
            self.optimize_requests.append(request)
            error = self.optimize_errors.pop(0) if self.optimize_errors else None
            if self.lose_store_on_optimize:
                self.lose_store_on_optimize = False
                self.store.clear()
        if error:
            context.abort(*error)
        report = optimizer_pb2.PassReport(name="fake_pass", wall_time_us=5, changed=False)
        if request.onnx_model:
            model = onnx.ModelProto.FromString(request.onnx_model)
            for tensor in model.graph.initializer:
                location = external_entries(tensor).get("location", "")
                if location.startswith("graphopt-blob:"):
                    self._require_blob(location[len("graphopt-blob:"):], tensor.name, context)
            if self.transform:
                model = self.transform(model)
            report.nodes_before = report.nodes_after = len(model.graph.node)
            response = optimizer_pb2.OptimizeResponse(reports=[report], total_time_us=42)
            if request.result_format == optimizer_pb2.MODEL_FORMAT_GRAPH:
                response.graph.name = model.graph.name
            elif not self.no_onnx_in_response:
                response.onnx_model = model.SerializeToString()
            return response
        for tensor in request.graph.initializers:
            if tensor.blob:
                self._require_blob(tensor.blob, tensor.name, context)
        report.nodes_before = report.nodes_after = len(request.graph.nodes)
        response = optimizer_pb2.OptimizeResponse(graph=request.graph, reports=[report],
                                                  total_time_us=42)
        if self.cost is not None and request.options.cost_estimate:
            response.cost.CopyFrom(self.cost)
        return response

    def _require_blob(self, digest, name, context):
        with self.lock:
            present = digest in self.store
        if not present:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          f"initializer '{name}' refers to blob {digest}, which the server "
                          "does not hold")

    # --- lists -------------------------------------------------------------------------------

    def ListPasses(self, request, context):
        return optimizer_pb2.ListPassesResponse(passes=[
            optimizer_pb2.PassInfo(name="fake_pass", min_opt_level=1)])

    def ListOps(self, request, context):
        ops = [graphopt_client.op_pb2.OpDescriptor(name="Relu")]
        return optimizer_pb2.ListOpsResponse(
            ops=[op for op in ops if request.name in ("", op.name)])


class ClientTest(unittest.TestCase):

    def setUp(self):
        self.fake = FakeOptimizer()
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4),
                                  options=[("grpc.max_receive_message_length", 64 << 20)])
        optimizer_pb2_grpc.add_GraphOptimizerServicer_to_server(self.fake, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.client = graphopt_client.Client(f"127.0.0.1:{port}", timeout=30)
        self.model = make_onnx_model()
        self.model_bytes = self.model.SerializeToString()

    def tearDown(self):
        self.client.close()
        self.server.stop(None)

    # --- requests and results ----------------------------------------------------------------

    def test_verify_and_no_cache_options(self):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        result = self.client.optimize(self.model_bytes, verify=True, rtol=1e-3, atol=1e-5,
                                      verify_inputs={"x": x}, verify_seed=4, no_cache=True)
        options = self.fake.optimize_requests[-1].options
        self.assertTrue(options.no_cache)
        self.assertTrue(options.verify.enabled)
        self.assertEqual((options.verify.rtol, options.verify.atol, options.verify.seed),
                         (1e-3, 1e-5, 4))
        self.assertEqual(len(options.verify.inputs), 1)
        given = options.verify.inputs[0]
        self.assertEqual((given.name, given.dtype, list(given.dims)),
                         ("x", graphopt_client.graph_pb2.DT_FLOAT32, [2, 3]))
        self.assertEqual(given.raw_data, x.tobytes())
        # The fake answers neither: the defaults.
        self.assertEqual(result.cache, "not_used")
        self.assertIsNone(result.verification)
        self.client.optimize(self.model_bytes)
        self.assertFalse(self.fake.optimize_requests[-1].options.HasField("verify"))
        with self.assertRaises(ValueError):
            self.client.optimize(self.model_bytes, atol=1e-3)
        with self.assertRaises(ValueError):
            self.client.optimize(self.model_bytes, verify=True, rtol=-1)

    def test_onnx_bytes_travel_inline_by_default(self):
        result = self.client.optimize(self.model_bytes, opt_level=1)
        request = self.fake.optimize_requests[-1]
        self.assertEqual(request.onnx_model, self.model_bytes)
        self.assertFalse(request.HasField("graph"))
        self.assertEqual(request.pipeline.opt_level, 1)
        self.assertEqual(self.fake.has_blobs_requests, [])
        self.assertEqual(result.format, "onnx")
        self.assertEqual(result.model, self.model_bytes)
        self.assertIsNone(result.upload)
        self.assertIsNone(result.graph)
        self.assertEqual(result.total_time_us, 42)
        self.assertAlmostEqual(result.total_time_ms, 0.042)
        self.assertEqual(result.reports, [graphopt_client.PassReport(
            name="fake_pass", wall_time_us=5, changed=False, nodes_before=4, nodes_after=4,
            messages=(), added_for="", verify_time_us=0)])
        self.assertEqual((result.nodes_before, result.nodes_after), (4, 4))
        self.assertEqual(result.onnx_model(), self.model)

    def test_cost_estimate(self):
        graph = make_graph_message()
        result = self.client.optimize(graph)
        self.assertEqual(self.fake.optimize_requests[-1].options.cost_estimate,
                         optimizer_pb2.COST_ESTIMATE_NONE)
        self.assertIsNone(result.cost)
        self.fake.cost = optimizer_pb2.CostReport(
            flops=1024, bytes=1152, nodes=2, flops_unknown_nodes=1,
            node_costs=[optimizer_pb2.NodeCost(node="mm", op="MatMul", flops=1024, bytes=896),
                        optimizer_pb2.NodeCost(node="relu", op="Relu", bytes=256)])
        result = self.client.optimize(graph, cost_estimate="per_node")
        self.assertEqual(self.fake.optimize_requests[-1].options.cost_estimate,
                         optimizer_pb2.COST_ESTIMATE_PER_NODE)
        self.assertEqual(result.cost, graphopt_client.CostReport(
            flops=1024, bytes=1152, node_count=2, flops_unknown_nodes=1, bytes_unknown_nodes=0,
            nodes=(graphopt_client.NodeCost(node="mm", op="MatMul", flops=1024, bytes=896),
                   graphopt_client.NodeCost(node="relu", op="Relu", flops=None, bytes=256))))
        self.client.optimize(graph, cost_estimate="totals")
        self.assertEqual(self.fake.optimize_requests[-1].options.cost_estimate,
                         optimizer_pb2.COST_ESTIMATE_TOTALS)
        calls = len(self.fake.optimize_requests)
        with self.assertRaises(ValueError):
            self.client.optimize(graph, cost_estimate="all")
        self.assertEqual(len(self.fake.optimize_requests), calls)

    def test_model_proto_and_graph_inputs(self):
        result = self.client.optimize(self.model)
        self.assertEqual(self.fake.optimize_requests[-1].onnx_model, self.model_bytes)
        self.assertEqual(result.model, self.model_bytes)

        graph = make_graph_message()
        result = self.client.optimize(graph, passes=["dead_code_elimination"])
        request = self.fake.optimize_requests[-1]
        self.assertEqual(request.graph, graph)
        self.assertEqual(request.onnx_model, b"")
        self.assertEqual(result.format, "graph")
        self.assertEqual(result.graph, graph)
        self.assertEqual(result.model, graph.SerializeToString())
        with self.assertRaises(ValueError):
            result.onnx_model()

        with self.assertRaises(TypeError):
            self.client.optimize("model.onnx")

    def test_pipeline_options_bindings_and_format(self):
        self.client.optimize(self.model_bytes,
                             passes=["infer_shape", ("cse", {"max": 3, "strict": True}),
                                     optimizer_pb2.PassSpec(name="dce", options={"a": "b"})],
                             verify_each_pass=True, strip_value_info=True,
                             dim_bindings={"batch": 8}, result_format="graph")
        request = self.fake.optimize_requests[-1]
        self.assertEqual([p.name for p in request.pipeline.passes], ["infer_shape", "cse", "dce"])
        self.assertEqual(dict(request.pipeline.passes[1].options),
                         {"max": "3", "strict": "true"})
        self.assertEqual(dict(request.pipeline.passes[2].options), {"a": "b"})
        self.assertFalse(request.pipeline.HasField("opt_level"))
        self.assertTrue(request.options.verify_each_pass)
        self.assertTrue(request.options.strip_value_info)
        self.assertEqual(dict(request.dim_bindings), {"batch": 8})
        self.assertEqual(request.result_format, optimizer_pb2.MODEL_FORMAT_GRAPH)

        self.client.optimize(self.model_bytes, passes="infer_type, dead_code_elimination")
        request = self.fake.optimize_requests[-1]
        self.assertEqual([p.name for p in request.pipeline.passes],
                         ["infer_type", "dead_code_elimination"])
        self.client.optimize(self.model_bytes, passes={"infer_type": {}, "cse": {"k": "v"}})
        request = self.fake.optimize_requests[-1]
        self.assertEqual([(p.name, dict(p.options)) for p in request.pipeline.passes],
                         [("infer_type", {}), ("cse", {"k": "v"})])
        self.client.optimize(self.model_bytes, opt_level=0)
        request = self.fake.optimize_requests[-1]
        self.assertTrue(request.pipeline.HasField("opt_level"))
        self.assertEqual(request.pipeline.opt_level, 0)
        self.assertEqual(request.result_format, optimizer_pb2.MODEL_FORMAT_UNSPECIFIED)

        calls = len(self.fake.optimize_requests)
        for bad, error in [(dict(passes=[]), ValueError), (dict(passes="a,,b"), ValueError),
                           (dict(passes=[3]), TypeError), (dict(opt_level="1"), TypeError),
                           (dict(dim_bindings={"batch": 2.0}), TypeError),
                           (dict(result_format="pbtxt"), ValueError),
                           (dict(passes=[("p", {"k": [1]})]), TypeError)]:
            with self.subTest(**bad), self.assertRaises(error):
                self.client.optimize(self.model_bytes, **bad)
        self.assertEqual(len(self.fake.optimize_requests), calls, "a bad call reached the server")

    def test_module_level_optimize(self):
        result = graphopt_client.optimize(self.model_bytes, passes=["x"],
                                          address=self.client.address)
        self.assertEqual(result.model, self.model_bytes)
        self.assertEqual(self.fake.optimize_requests[-1].pipeline.passes[0].name, "x")

    def test_lists(self):
        self.assertEqual([p.name for p in self.client.list_passes()], ["fake_pass"])
        self.assertEqual([o.name for o in self.client.list_ops(name="Relu")], ["Relu"])
        self.assertEqual(self.client.list_ops(name="NoSuchOp"), [])
        self.fake.blobs_supported = False
        with self.assertRaises(GraphoptError) as caught:
            self.client.has_blobs(["sha256:" + "0" * 64])
        self.assertEqual((caught.exception.code, caught.exception.rpc),
                         ("UNIMPLEMENTED", "HasBlobs"))

    # --- errors ------------------------------------------------------------------------------

    def test_server_errors_become_graphopt_errors(self):
        self.fake.optimize_errors.append(
            (grpc.StatusCode.NOT_FOUND, "unknown pass 'no_such_pass'"))
        with self.assertRaises(GraphoptError) as caught:
            self.client.optimize(self.model_bytes, passes=["no_such_pass"])
        error = caught.exception
        self.assertEqual((error.code, error.message, error.rpc, error.address),
                         ("NOT_FOUND", "unknown pass 'no_such_pass'", "Optimize",
                          self.client.address))
        self.assertEqual(str(error), "NOT_FOUND: unknown pass 'no_such_pass'")

    def test_unreachable_server(self):
        self.server.stop(None)
        with graphopt_client.Client(self.client.address, timeout=5) as client:
            with self.assertRaises(GraphoptError) as caught:
                client.list_passes()
        self.assertIn(caught.exception.code, ("UNAVAILABLE", "DEADLINE_EXCEEDED"))

    def test_onnx_answer_without_model(self):
        self.fake.no_onnx_in_response = True
        with self.assertRaises(GraphoptError) as caught:
            self.client.optimize(self.model_bytes)
        self.assertEqual(caught.exception.code, "UNIMPLEMENTED")

    def test_malformed_model_with_upload_fails_before_any_call(self):
        with self.assertRaises(GraphoptError) as caught:
            self.client.optimize(b"\xff\xff\xff not a model", upload_weights=True)
        self.assertEqual(caught.exception.code, "INVALID_ARGUMENT")
        self.assertEqual((self.fake.has_blobs_requests, self.fake.optimize_requests), ([], []))

    # --- blob uploads ------------------------------------------------------------------------

    def test_upload_sends_each_missing_blob_once_and_restores_the_weights(self):
        light = onnx.ModelProto.FromString(self.model_bytes)
        blobs = weights.externalize_onnx_initializers(light)

        result = self.client.optimize(self.model_bytes, upload_weights=True)
        # The answer carries references only; the client put the bytes back.
        self.assertEqual(result.model, self.model_bytes)
        self.assertEqual(self.fake.optimize_requests[-1].onnx_model, light.SerializeToString())
        self.assertEqual(list(self.fake.has_blobs_requests[-1].digests), list(blobs))
        self.assertEqual(len(self.fake.put_blobs_calls), 1)
        self.assertEqual([digest for digest, _ in self.fake.put_blobs_calls[0]], list(blobs))
        self.assertEqual(result.upload, graphopt_client.UploadStats(
            blobs=2, blob_bytes=192 * KIB, uploaded_blobs=2, uploaded_bytes=192 * KIB))

        # Again: the server holds both, nothing is uploaded.
        result = self.client.optimize(self.model, upload_weights=True)
        self.assertEqual(result.model, self.model_bytes)
        self.assertEqual(len(self.fake.put_blobs_calls), 1)
        self.assertEqual(result.upload.uploaded_blobs, 0)
        self.assertEqual(result.upload.blobs, 2)

    def test_upload_skips_blobs_the_server_has(self):
        big = next(t for t in self.model.graph.initializer if t.name == "w_big").raw_data
        self.fake.store[sha256_digest(big)] = big
        result = self.client.optimize(self.model_bytes, upload_weights=True)
        self.assertEqual(result.model, self.model_bytes)
        self.assertEqual(len(self.fake.put_blobs_calls[0]), 1)
        self.assertEqual(result.upload.uploaded_blobs, 1)
        self.assertEqual(result.upload.uploaded_bytes, 64 * KIB)

    def test_upload_is_batched(self):
        with mock.patch.object(client_module, "_MAX_BLOBS_PER_CALL", 1):
            result = self.client.optimize(self.model_bytes, upload_weights=True)
        self.assertEqual(result.model, self.model_bytes)
        self.assertEqual([len(r.digests) for r in self.fake.has_blobs_requests], [1, 1])
        self.assertEqual([len(call) for call in self.fake.put_blobs_calls], [1, 1])
        self.assertEqual(result.upload.uploaded_blobs, 2)

    def test_upload_chunks_are_at_most_one_mib(self):
        # One 2.5 MiB weight: three chunks (1 MiB, 1 MiB, 0.5 MiB).
        data = _floats(640 * KIB, seed=8).tobytes()
        model = helper.make_model(helper.make_graph(
            [helper.make_node("Identity", ["w"], ["y"])], "g", [],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [640 * KIB])],
            initializer=[numpy_helper.from_array(np.frombuffer(data, np.float32), "w")]))
        result = self.client.optimize(model, upload_weights=True)
        self.assertEqual(result.onnx_model(), model)
        self.assertEqual(self.fake.put_blobs_calls[-1],
                         [(sha256_digest(data), [1 << 20, 1 << 20, 512 * KIB])])

    def test_upload_of_a_graph_uses_tensor_blob(self):
        graph = make_graph_message()
        result = self.client.optimize(graph, upload_weights=True)
        sent = self.fake.optimize_requests[-1].graph
        self.assertEqual([bool(t.blob) for t in sent.initializers], [True, True, False])
        self.assertEqual([len(t.raw_data) for t in sent.initializers], [0, 0, 8])
        self.assertEqual(result.graph, graph)
        self.assertEqual(result.upload.uploaded_blobs, 2)

    def test_upload_never_modifies_the_callers_model(self):
        before = self.model.SerializeToString()
        self.client.optimize(self.model, upload_weights=True)
        self.assertEqual(self.model.SerializeToString(), before)

    def test_lost_blob_is_uploaded_again_once(self):
        self.fake.lose_store_on_optimize = True
        result = self.client.optimize(self.model_bytes, upload_weights=True)
        self.assertEqual(result.model, self.model_bytes)
        self.assertEqual(len(self.fake.optimize_requests), 2)
        self.assertEqual(len(self.fake.put_blobs_calls), 2)

    def test_other_errors_are_not_retried(self):
        self.fake.optimize_errors.append((grpc.StatusCode.INVALID_ARGUMENT, "bad node 'n'"))
        with self.assertRaises(GraphoptError) as caught:
            self.client.optimize(self.model_bytes, upload_weights=True)
        self.assertEqual(caught.exception.code, "INVALID_ARGUMENT")
        self.assertEqual(len(self.fake.optimize_requests), 1)

    def test_result_referring_to_a_foreign_blob_is_data_loss(self):
        def add_foreign_reference(model):
            tensor = model.graph.initializer.add(name="folded", data_type=onnx.TensorProto.FLOAT,
                                                 dims=[1], data_location=onnx.TensorProto.EXTERNAL)
            set_external(tensor, location="graphopt-blob:sha256:" + "e" * 64,
                                     length=4)
            return model

        self.fake.transform = add_foreign_reference
        with self.assertRaises(GraphoptError) as caught:
            self.client.optimize(self.model_bytes, upload_weights=True)
        self.assertEqual(caught.exception.code, "DATA_LOSS")
        self.assertIn("'folded'", caught.exception.message)

    def test_automatic_upload_above_the_size_limit(self):
        with mock.patch.object(client_module, "AUTO_UPLOAD_MODEL_BYTES", 100 * KIB):
            result = self.client.optimize(self.model_bytes)
        self.assertEqual(result.upload.uploaded_blobs, 2)
        self.assertEqual(result.model, self.model_bytes)
        # Below the limit, and when told not to, the weights travel inline.
        result = self.client.optimize(self.model_bytes)
        self.assertIsNone(result.upload)
        with mock.patch.object(client_module, "AUTO_UPLOAD_MODEL_BYTES", 100 * KIB):
            result = self.client.optimize(self.model_bytes, upload_weights=False)
        self.assertIsNone(result.upload)
        self.assertEqual(len(self.fake.put_blobs_calls), 1)

    def test_without_the_onnx_package(self):
        with mock.patch.dict("sys.modules", {"onnx": None}):
            # ONNX bytes travel inline, also above the automatic upload size.
            with mock.patch.object(client_module, "AUTO_UPLOAD_MODEL_BYTES", 100 * KIB):
                result = self.client.optimize(self.model_bytes)
            self.assertEqual(result.model, self.model_bytes)
            self.assertIsNone(result.upload)
            with self.assertRaises(ImportError):
                self.client.optimize(self.model_bytes, upload_weights=True)
            # A graphopt Graph needs no onnx for its upload.
            graph = make_graph_message()
            self.assertEqual(self.client.optimize(graph, upload_weights=True).graph, graph)

    def test_server_without_blob_store(self):
        self.fake.blobs_supported = False
        # Automatic: falls back to sending the weights inline.
        with mock.patch.object(client_module, "AUTO_UPLOAD_MODEL_BYTES", 100 * KIB):
            result = self.client.optimize(self.model_bytes)
        self.assertIsNone(result.upload)
        self.assertEqual(self.fake.optimize_requests[-1].onnx_model, self.model_bytes)
        # Forced: the server's refusal is the answer.
        with self.assertRaises(GraphoptError) as caught:
            self.client.optimize(self.model_bytes, upload_weights=True)
        self.assertEqual((caught.exception.code, caught.exception.rpc),
                         ("UNIMPLEMENTED", "HasBlobs"))


def new_token() -> str:
    """A token of graphopt's form ("gopt_" + 32 random bytes as unpadded base64url)."""
    return "gopt_" + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


class MetadataRecorder(grpc.ServerInterceptor):
    """Records (method, metadata) of every call the server receives."""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []

    def intercept_service(self, continuation, handler_call_details):
        with self.lock:
            self.calls.append((handler_call_details.method.rsplit("/", 1)[-1],
                               dict(handler_call_details.invocation_metadata)))
        return continuation(handler_call_details)


def dev_certs_script() -> str:
    """scripts/make_dev_certs.sh from the runfiles (or the source tree outside Bazel)."""
    runfiles = os.environ.get("TEST_SRCDIR")
    if runfiles:
        path = os.path.join(runfiles, os.environ.get("TEST_WORKSPACE", "graphopt"),
                            "scripts", "make_dev_certs.sh")
        if os.path.exists(path):
            return path
    here = os.path.dirname(os.path.realpath(__file__))
    return os.path.join(here, "..", "..", "scripts", "make_dev_certs.sh")


def make_dev_certs(directory: str) -> Dict[str, str]:
    """Runs make_dev_certs.sh into `directory`; the paths of what it made."""
    subprocess.run(["bash", dev_certs_script(), directory, "--client"], check=True,
                   stdout=subprocess.DEVNULL)
    return {name: os.path.join(directory, name) for name in os.listdir(directory)}


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class CredentialsTest(unittest.TestCase):
    """Token, tenant and TLS arguments of Client, against FakeOptimizer behind a recorder."""

    def setUp(self):
        self.recorder = MetadataRecorder()
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4),
                                  interceptors=[self.recorder])
        optimizer_pb2_grpc.add_GraphOptimizerServicer_to_server(FakeOptimizer(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.address = f"127.0.0.1:{self.port}"
        self.token = new_token()

    def tearDown(self):
        self.server.stop(None)

    def test_token_and_tenant_go_with_every_call(self):
        with graphopt_client.Client(self.address, timeout=30, token=self.token,
                                    tenant="acme") as client:
            client.list_passes()
            client.list_ops()
            # HasBlobs and the PutBlobs stream too.
            client.optimize(make_onnx_model().SerializeToString(), upload_weights=True)
        methods = [method for method, _ in self.recorder.calls]
        self.assertEqual(methods[:2], ["ListPasses", "ListOps"])
        self.assertIn("HasBlobs", methods)
        self.assertIn("PutBlobs", methods)
        self.assertIn("Optimize", methods)
        for method, metadata in self.recorder.calls:
            self.assertEqual(metadata.get("authorization"), f"Bearer {self.token}", method)
            self.assertEqual(metadata.get("graphopt-tenant"), "acme", method)

    def test_token_defaults_to_the_environment(self):
        with mock.patch.dict(os.environ, {"GRAPHOPT_TOKEN": self.token + "\n"}):
            with graphopt_client.Client(self.address, timeout=30) as client:
                client.list_passes()
            # An explicit empty token sends none.
            with graphopt_client.Client(self.address, timeout=30, token="") as client:
                client.list_passes()
        with mock.patch.dict(os.environ, {}, clear=True):
            with graphopt_client.Client(self.address, timeout=30) as client:
                client.list_passes()
        self.assertEqual(self.recorder.calls[0][1].get("authorization"), f"Bearer {self.token}")
        self.assertNotIn("authorization", self.recorder.calls[1][1])
        self.assertNotIn("authorization", self.recorder.calls[2][1])
        self.assertNotIn("graphopt-tenant", self.recorder.calls[2][1])

    def test_a_malformed_token_is_refused_without_repeating_it(self):
        for token in ("secret-value", "gopt_short", new_token() + "x", "Bearer " + new_token()):
            with self.assertRaises(ValueError) as caught:
                graphopt_client.Client(self.address, token=token)
            self.assertIn("not a graphopt token", str(caught.exception))
            self.assertNotIn(token, str(caught.exception))
        with mock.patch.dict(os.environ, {"GRAPHOPT_TOKEN": "secret-value"}):
            with self.assertRaisesRegex(ValueError, "GRAPHOPT_TOKEN"):
                graphopt_client.Client(self.address)

    def test_contradicting_tls_arguments(self):
        cases = [
            (dict(tls_cert="c.pem", tls_key="k.pem"), "tls_cert needs tls_ca"),
            (dict(tls_server_name="graphopt-server"), "tls_server_name needs tls_ca"),
            (dict(tls_ca="ca.pem", tls_cert="c.pem"), "tls_cert and tls_key go together"),
        ]
        for kwargs, message in cases:
            with self.assertRaisesRegex(ValueError, message):
                graphopt_client.Client(self.address, token="", **kwargs)
        with self.assertRaises(FileNotFoundError):
            graphopt_client.Client(self.address, token="", tls_ca="/nonexistent/ca.pem")
        with tempfile.NamedTemporaryFile() as ca:
            with self.assertRaisesRegex(ValueError, "either credentials or tls_ca"):
                graphopt_client.Client(self.address, token="", tls_ca=ca.name,
                                       credentials=grpc.ssl_channel_credentials())

    def test_plain_text_tokens_to_other_hosts_are_warned_about(self):
        with self.assertLogs("graphopt_client", level="WARNING") as logs:
            graphopt_client.Client("10.1.2.3:50051", token=self.token).close()
        self.assertIn("plain text", logs.output[0])
        self.assertNotIn(self.token, logs.output[0])
        for address in ("127.0.0.1:1", "localhost:1", "[::1]:1", "unix:/tmp/s"):
            self.assertTrue(client_module._is_loopback(address), address)
        for address in ("10.0.0.1:1", "localhost.example.com:1", "[2001:db8::1]:1"):
            self.assertFalse(client_module._is_loopback(address), address)

    def test_repr_never_shows_the_token(self):
        with graphopt_client.Client(self.address, token=self.token) as client:
            self.assertNotIn(self.token, repr(client))


class TlsTest(unittest.TestCase):
    """tls_ca, tls_cert/tls_key and tls_server_name against in-process TLS servers."""

    @classmethod
    def setUpClass(cls):
        if shutil.which("openssl") is None:
            raise unittest.SkipTest("openssl is not installed: no test certificates")
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.cluster = make_dev_certs(os.path.join(cls.tmp, "cluster"))
        cls.foreign = make_dev_certs(os.path.join(cls.tmp, "foreign"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def serve(self, require_client_cert: bool) -> int:
        recorder = MetadataRecorder()
        server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=2),
                             interceptors=[recorder])
        optimizer_pb2_grpc.add_GraphOptimizerServicer_to_server(FakeOptimizer(), server)
        credentials = grpc.ssl_server_credentials(
            [(read(self.cluster["server.key"]), read(self.cluster["server.pem"]))],
            root_certificates=read(self.cluster["ca.pem"]) if require_client_cert else None,
            require_client_auth=require_client_cert)
        port = server.add_secure_port("127.0.0.1:0", credentials)
        server.start()
        self.addCleanup(server.stop, None)
        self.recorder = recorder
        return port

    def list_passes(self, address: str, **kwargs):
        with graphopt_client.Client(address, timeout=10, **kwargs) as client:
            return client.list_passes()

    def test_tls_with_the_servers_ca(self):
        port = self.serve(require_client_cert=False)
        token = new_token()
        for host in ("127.0.0.1", "localhost"):
            self.list_passes(f"{host}:{port}", token=token, tls_ca=self.cluster["ca.pem"])
        self.assertEqual(self.recorder.calls[-1][1].get("authorization"), f"Bearer {token}")
        # The certificate's other name, asked for explicitly.
        self.list_passes(f"127.0.0.1:{port}", token="", tls_ca=self.cluster["ca.pem"],
                         tls_server_name="graphopt-server")

    def test_a_foreign_ca_or_another_name_fails(self):
        port = self.serve(require_client_cert=False)
        for kwargs in (dict(tls_ca=self.foreign["ca.pem"]),
                       dict(tls_ca=self.cluster["ca.pem"], tls_server_name="graphopt-worker"),
                       dict()):
            with self.assertRaises(GraphoptError) as caught:
                self.list_passes(f"127.0.0.1:{port}", token="", **kwargs)
            self.assertEqual(caught.exception.code, "UNAVAILABLE", kwargs)

    def test_client_certificates(self):
        port = self.serve(require_client_cert=True)
        address = f"127.0.0.1:{port}"
        self.list_passes(address, token="", tls_ca=self.cluster["ca.pem"],
                         tls_cert=self.cluster["client.pem"], tls_key=self.cluster["client.key"])
        for kwargs in (dict(), dict(tls_cert=self.foreign["client.pem"],
                                    tls_key=self.foreign["client.key"])):
            with self.assertRaises(GraphoptError) as caught:
                self.list_passes(address, token="", tls_ca=self.cluster["ca.pem"], **kwargs)
            self.assertEqual(caught.exception.code, "UNAVAILABLE")


if __name__ == "__main__":
    unittest.main(verbosity=2)
