"""Writes an ONNX model of about SIZE_MB megabytes of float32 weights, inline (raw_data).

  x[1, K] -> MatMul(W[K, N]) -> Identity -> Relu -> y[1, N]

with K*N*4 bytes ~= SIZE_MB MiB and seeded random weights, so every run writes the same bytes.
The Identity is there for -O1 to remove. Usage: make_large_onnx.py OUT.onnx SIZE_MB
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main() -> None:
    out, size_mb = sys.argv[1], int(sys.argv[2])
    k = 4096
    n = size_mb * 1024 * 1024 // (4 * k)
    weights = np.random.default_rng(0).standard_normal((k, n), dtype=np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
            helper.make_node("Identity", ["mm"], ["id"], name="identity"),
            helper.make_node("Relu", ["id"], ["y"], name="relu"),
        ],
        "large",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
        initializer=[numpy_helper.from_array(weights, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="make_large_onnx")
    with open(out, "wb") as f:
        f.write(model.SerializeToString())


if __name__ == "__main__":
    main()
