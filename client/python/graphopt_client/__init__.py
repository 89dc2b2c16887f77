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
The protobuf messages of the wire contract are here too: graph_pb2 (Graph, Tensor, ...),
op_pb2 (OpDescriptor) and optimizer_pb2 (requests, responses, PassInfo).
"""

from ._proto import graph_pb2, op_pb2, optimizer_pb2, optimizer_pb2_grpc
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
    "OptimizeResult",
    "OutputComparison",
    "PassReport",
    "TOKEN_ENV_VAR",
    "UploadStats",
    "VerifyReport",
    "blob_digest",
    "grad",
    "graph_pb2",
    "op_pb2",
    "optimize",
    "optimizer_pb2",
    "optimizer_pb2_grpc",
]

__version__ = "0.1.0"
