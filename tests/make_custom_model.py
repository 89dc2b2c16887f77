"""Turns a real model into one that uses the custom ops of examples/custom_ops.pbtxt.

Every Relu becomes com.example::Swish (known only by its body) and the first MaxPool becomes
com.example::Downsample (known only by its shape rule). Graph inputs/outputs keep their declared
types; value_info is dropped so that graphopt must infer every intermediate shape itself.
Usage: make_custom_model.py IN.onnx OUT.onnx
"""
import sys

import onnx
from onnx import helper


def main() -> None:
    model = onnx.load(sys.argv[1])
    graph = model.graph
    replaced_pool = False
    for node in graph.node:
        if node.op_type == "Relu":
            node.op_type, node.domain = "Swish", "com.example"
        elif node.op_type == "MaxPool" and not replaced_pool:
            node.op_type, node.domain = "Downsample", "com.example"
            del node.attribute[:]
            node.attribute.append(helper.make_attribute("factor", 2))
            replaced_pool = True
    del graph.value_info[:]
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    onnx.save(model, sys.argv[2])


if __name__ == "__main__":
    main()
