"""The Run requests of netns_cluster_test, shared by its client hosts and its checks: a graph
small on the wire but a few milliseconds of work on a worker (so that faults find requests in
flight), a few distinct inputs (equal inputs must give equal outputs on every replica and
worker), and a digest of an answer's outputs."""

import hashlib

from harness import floats, int64s, named, tensor, value
from models import F32, I64, node, opset
from proto import coordinator_pb2, graph_pb2

SEEDS = 8
WIDTH = 64
ROWS = 512    # x[1, WIDTH] is expanded to ROWS rows: the work grows, the request does not
LAYERS = 4
SLOW = {"rows": 32768, "layers": 96}


def _graph(rows, layers):
    g = graph_pb2.Graph(name="netns_mlp")
    opset(g)
    g.inputs.append(value("x", F32, [1, WIDTH]))
    g.initializers.append(tensor("rows", I64, [2], int64s([rows, WIDTH])))
    g.initializers.append(tensor("scale", F32, [1, 1], floats([0.5])))
    node(g, "expand", "Expand", ["x", "rows"], ["wide"])
    node(g, "scaled", "Mul", ["wide", "scale"], ["h"])
    for i in range(LAYERS):
        w = [((i * 7 + j) % 13 - 6) / 50.0 for j in range(WIDTH * WIDTH)]
        g.initializers.append(tensor(f"w{i}", F32, [WIDTH, WIDTH], floats(w)))
    prev = "h"
    for i in range(layers):  # deeper graphs use the same weights again: more work, same bytes
        node(g, f"mm{i}", "MatMul", [prev, f"w{i % LAYERS}"], [f"m{i}"])
        node(g, f"relu{i}", "Relu", [f"m{i}"], [f"a{i}"])
        prev = f"a{i}"
    node(g, "mean", "ReduceMean", [prev], ["y"], axes=[0], keepdims=1)
    g.outputs.append(value("y", F32, [1, WIDTH]))
    return g


_GRAPHS = {}


def run_request(request_id, seed, rows=ROWS, layers=LAYERS):
    """`rows` and `layers` set the work: the defaults take a millisecond or two on a worker;
    SLOW a second or so (a call surely still in flight when a fault strikes)."""
    if (rows, layers) not in _GRAPHS:
        _GRAPHS[rows, layers] = _graph(rows, layers)
    x = floats([(1.0 + seed) * ((j % 7) - 3) / 3.0 for j in range(WIDTH)])
    return coordinator_pb2.RunRequest(graph=_GRAPHS[rows, layers], request_id=request_id,
                                      inputs=[named("x", tensor("x", F32, [1, WIDTH], x))])


def digest(response):
    h = hashlib.sha256()
    for t in sorted(response.outputs, key=lambda t: t.name):
        h.update(t.name.encode())
        h.update(t.tensor.SerializeToString(deterministic=True))
    return h.hexdigest()[:16]
