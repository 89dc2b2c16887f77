"""Tests of graphopt_client's Coordinator calls (Client.run, Client.session) against
FakeCoordinator, an in-process graphopt.v1.Coordinator that keeps a session's state the way
the server's contract says (coordinator.proto): the first Run of a session carries the graph,
later ones may not, each step adds one to state_version; FetchState and EndSession. No
graphopt server needed; tests/training/server_training_test.py runs the real one.

Run with Debian's /usr/bin/python3 (see run_python_test.sh); needs numpy.
"""

import concurrent.futures
import threading
import unittest

import grpc
import numpy as np

import graphopt_client
from graphopt_client import coordinator_pb2, graph_pb2
from graphopt_client._proto import coordinator_pb2_grpc, worker_pb2


class FakeCoordinator(coordinator_pb2_grpc.CoordinatorServicer):
    """A session's state is one float32 tensor "w", which each step adds input "x" to; the
    step's output "y" is the new w."""

    def __init__(self):
        self.mu = threading.Lock()
        self.sessions = {}  # name -> (w, version)
        self.requests = []

    def Run(self, request, context):
        with self.mu:
            self.requests.append(request)
            if request.session not in self.sessions:
                if not request.HasField("graph"):
                    context.abort(grpc.StatusCode.NOT_FOUND, "no such session")
                if not request.graph.state_updates:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no state_updates")
                self.sessions[request.session] = (np.zeros(2, np.float32), 0)
            elif request.HasField("graph"):
                context.abort(grpc.StatusCode.INTERNAL, "the graph was sent again")
            w, version = self.sessions[request.session]
            x = {i.name: graphopt_client.from_tensor(i.tensor) for i in request.inputs}["x"]
            w = w + x
            self.sessions[request.session] = (w, version + 1)
            return coordinator_pb2.RunResponse(
                outputs=[worker_pb2.NamedTensor(name="y", tensor=graphopt_client.to_tensor(w))],
                worker_id="w0", state_version=version + 1, request_id=request.request_id)

    def FetchState(self, request, context):
        with self.mu:
            if request.session not in self.sessions:
                context.abort(grpc.StatusCode.NOT_FOUND, "no such session")
            w, version = self.sessions[request.session]
            if list(request.names) not in ([], ["w"]):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "not state")
            return coordinator_pb2.CoordinatorFetchStateResponse(
                state=[worker_pb2.NamedTensor(name="w", tensor=graphopt_client.to_tensor(w))],
                state_version=version)

    def EndSession(self, request, context):
        with self.mu:
            return coordinator_pb2.EndSessionResponse(
                ended=self.sessions.pop(request.session, None) is not None)


def stateful_graph():
    g = graph_pb2.Graph(name="step")
    g.state_updates.add(state="w", update="w_new")
    return g


class SessionTest(unittest.TestCase):

    def setUp(self):
        self.fake = FakeCoordinator()
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=2))
        coordinator_pb2_grpc.add_CoordinatorServicer_to_server(self.fake, self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.client = graphopt_client.Client(f"127.0.0.1:{port}", timeout=30)

    def tearDown(self):
        self.client.close()
        self.server.stop(None)

    def test_steps_send_the_graph_once_and_keep_the_state(self):
        with self.client.session("s1", stateful_graph()) as s:
            for i in range(3):
                out = s.step({"x": np.array([1.0, 2.0], np.float32)}, request_id=f"r{i}")
                np.testing.assert_array_equal(out["y"], [i + 1.0, 2.0 * (i + 1)])
                self.assertEqual(s.state_version, i + 1)
                self.assertEqual(s.last_response.request_id, f"r{i}")
            state = s.fetch_state()
            np.testing.assert_array_equal(state["w"], [3.0, 6.0])
            self.assertEqual(list(s.fetch_state(["w"])), ["w"])
        sent = self.fake.requests
        self.assertEqual([r.HasField("graph") for r in sent], [True, False, False])
        self.assertEqual({r.session for r in sent}, {"s1"})
        # Leaving the with-block ended it.
        self.assertEqual(self.fake.sessions, {})

    def test_errors_carry_the_servers_code(self):
        s = self.client.session("s1", stateful_graph())
        with self.assertRaises(graphopt_client.GraphoptError) as e:
            s.fetch_state()
        self.assertEqual(e.exception.code, "NOT_FOUND")
        self.assertEqual(e.exception.rpc, "FetchState")
        with self.assertRaises(graphopt_client.GraphoptError) as e:
            self.client.run(graph_pb2.Graph(), {"x": np.zeros(2, np.float32)}, session="s2")
        self.assertEqual(e.exception.code, "INVALID_ARGUMENT")
        self.assertFalse(self.client.end_session("nobody"))

    def test_tensors_round_trip(self):
        for array in (np.arange(6, dtype=np.float64).reshape(2, 3), np.array(7, np.int64),
                      np.array([True, False]), np.zeros((0, 3), np.float32)):
            t = graphopt_client.to_tensor(array, "a")
            self.assertEqual(list(t.dims), list(array.shape))
            back = graphopt_client.from_tensor(t)
            self.assertEqual(back.dtype, array.dtype)
            np.testing.assert_array_equal(back, array)
        with self.assertRaises(ValueError):
            graphopt_client.to_tensor(np.array(["s"]), "strings")


if __name__ == "__main__":
    unittest.main(verbosity=2)
