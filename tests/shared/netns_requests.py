"""The Run requests of netns_cluster_test, shared by its client hosts and its checks: one small
MLP, a few distinct inputs (equal inputs must give equal outputs on every replica and worker),
and a digest of an answer's outputs."""

import hashlib

import models
from proto import coordinator_pb2

SEEDS = 8
WIDTH = 64
GRAPH = models.mlp(width=WIDTH, depth=2)


def run_request(request_id, seed):
    return coordinator_pb2.RunRequest(graph=GRAPH, request_id=request_id,
                                      inputs=models.mlp_input(WIDTH, seed=1.0 + seed))


def digest(response):
    h = hashlib.sha256()
    for t in sorted(response.outputs, key=lambda t: t.name):
        h.update(t.name.encode())
        h.update(t.tensor.SerializeToString(deterministic=True))
    return h.hexdigest()[:16]
