"""Running plans on the service's workers (graphopt.v1.Coordinator), and training sessions.

    with graphopt_client.Client(address) as client:
        step = client.grad(...)   # or client.optimize(..., passes=[..., "training_step"])
        with client.session("run-1", step_graph) as s:
            for x, t in batches:
                loss = s.step({"x": x, "t": t})["loss"]
            weights = s.fetch_state()          # {name: numpy array}

A session's state (weights, optimizer state) lives on one worker; its steps run there one at
a time. When that worker is lost, step() raises GraphoptError with code "ABORTED": start a new
session from the last fetched state. See docs/training.md.
"""

from typing import Dict, Iterable, Mapping, Optional, Union

from ._proto import coordinator_pb2, graph_pb2, worker_pb2

# numpy dtype names <-> the wire's DataType.
_DTYPES = {
    "float32": graph_pb2.DT_FLOAT32, "float64": graph_pb2.DT_FLOAT64,
    "float16": graph_pb2.DT_FLOAT16, "int8": graph_pb2.DT_INT8, "uint8": graph_pb2.DT_UINT8,
    "int16": graph_pb2.DT_INT16, "uint16": graph_pb2.DT_UINT16, "int32": graph_pb2.DT_INT32,
    "uint32": graph_pb2.DT_UINT32, "int64": graph_pb2.DT_INT64, "uint64": graph_pb2.DT_UINT64,
    "bool": graph_pb2.DT_BOOL,
}
_NUMPY = {number: name for name, number in _DTYPES.items()}

# What step() and Client.run() take as a tensor: a numpy array (or anything numpy.asarray
# takes) or a graphopt Tensor message.
TensorLike = Union[graph_pb2.Tensor, object]


def to_tensor(value: TensorLike, name: str = "") -> graph_pb2.Tensor:
    """A numpy array (little-endian, row-major) as a graphopt Tensor; a Tensor as it is."""
    if isinstance(value, graph_pb2.Tensor):
        return value
    import numpy as np  # pylint: disable=import-outside-toplevel

    array = np.asarray(value)
    dtype = _DTYPES.get(array.dtype.name)
    if dtype is None:
        raise ValueError(f"tensor '{name}': dtype {array.dtype} has no graphopt DataType")
    # astype, not ascontiguousarray: that one makes a scalar one-dimensional.
    array = array.astype(array.dtype.newbyteorder("<"), order="C", copy=False)
    return graph_pb2.Tensor(name=name, dtype=dtype, dims=list(array.shape),
                            raw_data=array.tobytes())


def from_tensor(tensor: graph_pb2.Tensor):
    """A graphopt Tensor (raw_data) as a numpy array."""
    import numpy as np  # pylint: disable=import-outside-toplevel

    name = _NUMPY.get(tensor.dtype)
    if name is None:
        raise ValueError(f"tensor '{tensor.name}': dtype "
                         f"{graph_pb2.DataType.Name(tensor.dtype)} is not supported here")
    return np.frombuffer(tensor.raw_data, dtype=np.dtype(name).newbyteorder("<")).reshape(
        tuple(tensor.dims))


def named_tensors(inputs: Optional[Mapping[str, TensorLike]]):
    """{name: tensor} as NamedTensor messages, in name order (deterministic requests)."""
    return [worker_pb2.NamedTensor(name=name, tensor=to_tensor(value, name))
            for name, value in sorted((inputs or {}).items())]


class Session:
    """A training session: a stateful plan (a graph with state_updates, such as a training
    step) run step by step on one worker, which keeps its state. Make it with
    Client.session(name, graph); end it with end() (or use it as a context manager)."""

    def __init__(self, client, name: str, graph: graph_pb2.Graph):
        self._client = client
        self.name = name
        self._graph = graph
        self._started = False
        # Steps applied to the state, as of the last step() or fetch_state().
        self.state_version = 0
        # The last step's RunResponse (worker, timings, ...).
        self.last_response: Optional[coordinator_pb2.RunResponse] = None

    def step(self, inputs: Mapping[str, TensorLike], *, request_id: str = "",
             timeout: Optional[float] = None) -> Dict[str, object]:
        """Runs one step: feeds `inputs`, updates the state, returns the outputs by name as
        numpy arrays. The first step sends the graph (the server loads it on a worker), later
        ones only the inputs. A step sent again with the same request_id is never applied
        twice."""
        response = self._client.run(None if self._started else self._graph, inputs,
                                    session=self.name, request_id=request_id, timeout=timeout)
        self._started = True
        self.state_version = response.state_version
        self.last_response = response
        return {o.name: from_tensor(o.tensor) for o in response.outputs}

    def fetch_state(self, names: Optional[Iterable[str]] = None, *,
                    timeout: Optional[float] = None) -> Dict[str, object]:
        """The state as of the last step (all of it, or the tensors named), as numpy arrays."""
        response = self._client.fetch_state(self.name, names, timeout=timeout)
        self.state_version = response.state_version
        return {s.name: from_tensor(s.tensor) for s in response.state}

    def end(self, *, timeout: Optional[float] = None) -> bool:
        """Drops the session's state on its worker; False when the server had no such
        session."""
        return self._client.end_session(self.name, timeout=timeout)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info) -> None:
        self.end()

    def __repr__(self) -> str:
        return f"graphopt_client.Session({self.name!r}, state_version={self.state_version})"
