"""Graphs for the shared-service tests, built as graphopt.v1.Graph messages: a small real
computation, and poison models that are tiny on the wire but ask a worker for gigabytes or
forever."""

from harness import floats, int64s, named, tensor, value
from proto import graph_pb2, op_pb2

F32, I64, STR, BOOL = (graph_pb2.DT_FLOAT32, graph_pb2.DT_INT64, graph_pb2.DT_STRING,
                       graph_pb2.DT_BOOL)


def opset(g, version=17):
    g.opset_imports.add(domain="", version=version)


def node(g, name, op, inputs, outputs, **attrs):
    n = g.nodes.add(name=name, op_type=op, inputs=inputs, outputs=outputs)
    for key, v in attrs.items():
        a = n.attributes.add(name=key)
        if isinstance(v, graph_pb2.Graph):
            a.g.CopyFrom(v)
        elif isinstance(v, graph_pb2.Tensor):
            a.t.CopyFrom(v)
        elif isinstance(v, int):
            a.i = v
        elif isinstance(v, (list, tuple)):
            a.ints.values.extend(v)
        else:
            raise TypeError(key)
    return n


def custom_op(name, domain="com.test"):
    """An elementwise custom op with a body (x * sigmoid(x)), as examples/custom_ops.pbtxt."""
    d = op_pb2.OpDescriptor(domain=domain, name=name, version=1)
    d.inputs.add(name="X", type_constraint="T")
    d.outputs.add(name="Y", type_constraint="T")
    d.type_constraints.add(name="T", allowed=[graph_pb2.DT_FLOAT32])
    d.body.inputs.add(name="x")
    d.body.outputs.add(name="y")
    d.body.nodes.add(name="sigmoid", op_type="Sigmoid", inputs=["x"], outputs=["s"])
    d.body.nodes.add(name="mul", op_type="Mul", inputs=["x", "s"], outputs=["y"])
    return d


def mlp(width=256, depth=4):
    """x[1, width] through `depth` MatMul+Relu layers with constant weights: a few ms of work."""
    g = graph_pb2.Graph(name="mlp")
    opset(g)
    g.inputs.append(value("x", F32, [1, width]))
    prev = "x"
    for i in range(depth):
        w = [((i * 7 + j) % 13 - 6) / 50.0 for j in range(width * width)]
        g.initializers.append(tensor(f"w{i}", F32, [width, width], floats(w)))
        node(g, f"mm{i}", "MatMul", [prev, f"w{i}"], [f"h{i}"])
        node(g, f"relu{i}", "Relu", [f"h{i}"], [f"a{i}"])
        prev = f"a{i}"
    g.outputs.append(value(prev, F32, [1, width]))
    return g


def mlp_input(width=256, seed=1.0):
    return [named("x", tensor("x", F32, [1, width], floats([seed * ((j % 7) - 3) / 3.0
                                                          for j in range(width)])))]


def constant_of_shape(elements=2 ** 31):
    """ConstantOfShape of `elements` floats (8 GiB at 2^31) from a 1-element shape input."""
    g = graph_pb2.Graph(name="big_constant")
    opset(g)
    g.inputs.append(value("shape", I64, [1]))
    node(g, "fill", "ConstantOfShape", ["shape"], ["big"],
         value=tensor("value", F32, [1], floats([1.0])))
    node(g, "sum", "ReduceSum", ["big"], ["total"], keepdims=0)
    g.outputs.append(value("total", F32, []))
    return g, [named("shape", tensor("shape", I64, [1], int64s([elements])))]


def doubling_loop(trips=40):
    """A Loop whose body concatenates its carried tensor with itself: 2^trips elements."""
    body = graph_pb2.Graph(name="double")
    body.inputs.append(value("i", I64, []))
    body.inputs.append(value("cond_in", BOOL, []))
    body.inputs.append(value("acc_in", F32, None))
    node(body, "keep", "Identity", ["cond_in"], ["cond_out"])
    node(body, "twice", "Concat", ["acc_in", "acc_in"], ["acc_out"], axis=0)
    body.outputs.append(value("cond_out", BOOL, []))
    body.outputs.append(value("acc_out", F32, None))
    g = graph_pb2.Graph(name="doubling")
    opset(g)
    g.inputs.append(value("trips", I64, []))
    g.inputs.append(value("seed", F32, [1024]))
    g.initializers.append(tensor("always", BOOL, [], b"\x01"))
    node(g, "loop", "Loop", ["trips", "always", "seed"], ["grown"], body=body)
    node(g, "sum", "ReduceSum", ["grown"], ["total"], keepdims=0)
    g.outputs.append(value("total", F32, []))
    return g, [named("trips", tensor("trips", I64, [], int64s([trips]))),
               named("seed", tensor("seed", F32, [1024], floats([1.0] * 1024)))]


def string_tile(repeats=2 ** 30):
    """A 67-byte string tiled `repeats` times."""
    g = graph_pb2.Graph(name="string_tile")
    opset(g)
    g.inputs.append(value("text", STR, [1]))
    g.inputs.append(value("repeats", I64, [1]))
    node(g, "tile", "Tile", ["text", "repeats"], ["tiled"])
    node(g, "shape", "Shape", ["tiled"], ["n"])
    g.outputs.append(value("n", I64, [1]))
    return g, [named("text", tensor("text", STR, [1], strings=[b"x" * 67])),
               named("repeats", tensor("repeats", I64, [1], int64s([repeats])))]


def endless_loop(trips=2 ** 62):
    """A Loop of `trips` iterations of one Add: never ends in practice."""
    body = graph_pb2.Graph(name="count")
    body.inputs.append(value("i", I64, []))
    body.inputs.append(value("cond_in", BOOL, []))
    body.inputs.append(value("acc_in", F32, [1]))
    body.initializers.append(tensor("one", F32, [1], floats([1.0])))
    node(body, "keep", "Identity", ["cond_in"], ["cond_out"])
    node(body, "inc", "Add", ["acc_in", "one"], ["acc_out"])
    body.outputs.append(value("cond_out", BOOL, []))
    body.outputs.append(value("acc_out", F32, [1]))
    g = graph_pb2.Graph(name="endless")
    opset(g)
    g.inputs.append(value("trips", I64, []))
    g.initializers.append(tensor("always", BOOL, [], b"\x01"))
    g.initializers.append(tensor("zero", F32, [1], floats([0.0])))
    node(g, "loop", "Loop", ["trips", "always", "zero"], ["count"], body=body)
    g.outputs.append(value("count", F32, [1]))
    return g, [named("trips", tensor("trips", I64, [], int64s([trips])))]


def endless_loop_constant(trips=2 ** 62):
    """endless_loop with its trip count as an initializer: constant folding would run it."""
    g, _ = endless_loop(trips)
    del g.inputs[:]
    g.initializers.append(tensor("trips", I64, [], int64s([trips])))
    return g


def long_fold(matmuls=100, size=1024):
    """Constants only: ConstantOfShape [size, size] then a chain of `matmuls` MatMuls and a
    ReduceSum. Constant folding computes every MatMul (each a few tens of ms), so optimizing
    it takes seconds of CPU while the request is a few hundred bytes."""
    g = graph_pb2.Graph(name="long_fold")
    opset(g)
    g.initializers.append(tensor("shape", I64, [2], int64s([size, size])))
    node(g, "fill", "ConstantOfShape", ["shape"], ["c"],
         value=tensor("value", F32, [1], floats([0.001])))
    prev = "c"
    for i in range(matmuls):
        node(g, f"mm{i}", "MatMul", [prev, "c"], [f"m{i}"])
        prev = f"m{i}"
    node(g, "sum", "ReduceSum", [prev], ["total"], keepdims=0)
    g.outputs.append(value("total", F32, []))
    return g
