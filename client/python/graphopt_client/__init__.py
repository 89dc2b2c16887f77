"""Python client of the graphopt graph-optimization service (graphopt.v1.GraphOptimizer).

    import graphopt_client

    with graphopt_client.Client("127.0.0.1:50051") as client:
        result = client.optimize(onnx_model_bytes, opt_level=1)
    optimized_bytes = result.model            # a serialized onnx.ModelProto
    for report in result.reports:             # one per pass
        print(report.name, report.nodes_before, report.nodes_after)

A server that requires authentication takes a bearer token (Client's `token`, default the
GRAPHOPT_TOKEN environment variable) and usually TLS (`tls_ca`, the CA of its certificate).
Errors raise GraphoptError with the gRPC status code name (`code`) and the server's message.
Large weights can travel once, as content-addressed blobs (Client.optimize's upload_weights).
Client.grad (and grad) differentiate a model: the gradient pass, then an optimization level.
Client.run runs a graph on the service's workers; Client.session trains: a stateful plan (a
training step) run step by step on one worker, its weights fetched with fetch_state.
The protobuf messages of the wire contract are here too: graph_pb2 (Graph, Tensor, ...),
op_pb2 (OpDescriptor), optimizer_pb2 (requests, responses, PassInfo) and coordinator_pb2.
"""

from ._proto import coordinator_pb2, graph_pb2, op_pb2, optimizer_pb2, optimizer_pb2_grpc
from .client import (
    AUTO_UPLOAD_MODEL_BYTES,
    DEFAULT_ADDRESS,
    DEFAULT_TIMEOUT_S,
    TOKEN_ENV_VAR,
    Client,
    CostReport,
    NodeCost,
    OptimizeResult,
    OutputComparison,
    PassReport,
    UploadStats,
    VerifyReport,
    grad,
    optimize,
)
from .errors import GraphoptError
from .session import Session, from_tensor, to_tensor
from .weights import BLOB_THRESHOLD_BYTES, CHUNK_BYTES, blob_digest

__all__ = [
    "AUTO_UPLOAD_MODEL_BYTES",
    "BLOB_THRESHOLD_BYTES",
    "CHUNK_BYTES",
    "Client",
    "CostReport",
    "DEFAULT_ADDRESS",
    "DEFAULT_TIMEOUT_S",
    "GraphoptError",
    "NodeCost",
    "Session",
    "OptimizeResult",
    "OutputComparison",
    "PassReport",
    "TOKEN_ENV_VAR",
    "UploadStats",
    "VerifyReport",
    "blob_digest",
    "coordinator_pb2",
    "from_tensor",
    "grad",
    "graph_pb2",
    "op_pb2",
    "optimize",
    "optimizer_pb2",
    "optimizer_pb2_grpc",
    "to_tensor",
]

__version__ = "0.1.0"
