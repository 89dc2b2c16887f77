"""The one exception type of graphopt_client."""

from typing import Optional

import grpc


class GraphoptError(Exception):
    """A call to a graphopt server failed, or its answer could not be used.

    Attributes:
      code: the gRPC status code name, e.g. "NOT_FOUND", "INVALID_ARGUMENT", "UNAVAILABLE"
        (see docs/wire-protocol.md for when the server answers which). Errors detected by the
        client itself use the code the server would have used for the same problem
        (INVALID_ARGUMENT for a model that does not parse) or DATA_LOSS for a result whose
        weights cannot be restored.
      message: the server's message unchanged (it names the node, pass or option at fault), or
        the client's own description.
      rpc: the RPC that failed ("Optimize", "HasBlobs", ...), None for client-side errors.
      address: the server address the client talked to, when known.
    """

    def __init__(self, code: str, message: str, *, rpc: Optional[str] = None,
                 address: Optional[str] = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.rpc = rpc
        self.address = address

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError, *, rpc: str,
                       address: Optional[str] = None) -> "GraphoptError":
        """Converts the exception gRPC raises for a failed call."""
        code = error.code() if hasattr(error, "code") else None
        name = code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"
        details = error.details() if hasattr(error, "details") else None
        return cls(name, details or str(error), rpc=rpc, address=address)

    def __reduce__(self):
        # Keeps the keyword-only fields when the error crosses process boundaries (pickle).
        return (_rebuild_error, (self.code, self.message, self.rpc, self.address))


def _rebuild_error(code, message, rpc, address):
    return GraphoptError(code, message, rpc=rpc, address=address)
