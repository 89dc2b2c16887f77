"""torch.autograd's gradients of the corpus LSTM, for decompose_rnn_corpus_test.

Rebuilds the corpus model 'lstm' exactly as models/export_corpus.py does (same seed, same test
input), checks that it reproduces the corpus's reference outputs, and differentiates
L = sum(logits * r0) + sum(h_n * r1) + sum(c_n * r2) with seeded random r_k. Writes, as ONNX
TensorProtos in --out:
  seed_<k>.pb   r_k, named "<output>_grad" (the gradient pass's seed inputs);
  grad_<i>.pb   dL/d(value), named "<value>_grad", for the graph input and for every weight of
                the exported graph: head.weight, head.bias and each LSTM node's W, R and B (torch's
                per-layer weights mapped to ONNX's layout: gates i, o, f, c instead of torch's
                i, f, g, o, and B = [b_ih, b_hh]).

Run with Debian's /usr/bin/python3 (python3-torch, python3-onnx).
"""

import argparse
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

# ONNX's gate blocks in torch's order: ONNX (i, o, f, c) = torch blocks (0, 3, 1, 2).
ONNX_GATES_FROM_TORCH = (0, 3, 1, 2)


def onnx_gate_order(t: torch.Tensor) -> np.ndarray:
    blocks = torch.chunk(t, 4, dim=0)
    return torch.cat([blocks[i] for i in ONNX_GATES_FROM_TORCH], dim=0).numpy()


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--export_corpus", required=True, help="models/export_corpus.py")
    parser.add_argument("--model_dir", required=True, help="the corpus's lstm/ folder")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    sys.path.insert(0, os.path.dirname(os.path.abspath(args.export_corpus)))
    import export_corpus  # pylint: disable=import-outside-toplevel

    torch.use_deterministic_algorithms(True)
    spec = export_corpus.MODELS["lstm"]
    torch.manual_seed(spec.seed)
    model = spec.build().eval()
    (x,) = spec.inputs(torch.Generator().manual_seed(spec.seed))
    x = x.clone().requires_grad_(True)
    outputs = model(x)

    onnx_model = onnx.load(os.path.join(args.model_dir, "model.onnx"))
    for k, name in enumerate(spec.output_names):
        ref = onnx.numpy_helper.to_array(onnx.load_tensor(
            os.path.join(args.model_dir, "test_data_set_0", f"output_{k}.pb")))
        got = outputs[k].detach().numpy()
        if not np.array_equal(ref, got):
            print(f"error: output {name} differs from the corpus's reference by "
                  f"{np.abs(ref - got).max()}", file=sys.stderr)
            return 1

    rng = np.random.default_rng(7)
    seeds = [rng.uniform(-1, 1, size=o.shape).astype(np.float32) for o in outputs]
    loss = sum((o * torch.from_numpy(r)).sum() for o, r in zip(outputs, seeds))
    loss.backward()

    os.makedirs(args.out, exist_ok=True)
    for k, (name, r) in enumerate(zip(spec.output_names, seeds)):
        onnx.save_tensor(onnx.numpy_helper.from_array(r, f"{name}_grad"),
                         os.path.join(args.out, f"seed_{k}.pb"))

    grads = {spec.input_names[0]: x.grad.numpy(),
             "head.weight": model.head.weight.grad.numpy(),
             "head.bias": model.head.bias.grad.numpy()}
    lstm_nodes = [n for n in onnx_model.graph.node if n.op_type == "LSTM"]
    if len(lstm_nodes) != model.lstm.num_layers:
        print(f"error: {len(lstm_nodes)} LSTM nodes for {model.lstm.num_layers} layers",
              file=sys.stderr)
        return 1
    for layer, node in enumerate(lstm_nodes):
        p = {n: getattr(model.lstm, f"{n}_l{layer}").grad
             for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
        grads[node.input[1]] = onnx_gate_order(p["weight_ih"])[None]
        grads[node.input[2]] = onnx_gate_order(p["weight_hh"])[None]
        grads[node.input[3]] = np.concatenate(
            [onnx_gate_order(p["bias_ih"]), onnx_gate_order(p["bias_hh"])])[None]
    for i, (name, g) in enumerate(grads.items()):
        onnx.save_tensor(onnx.numpy_helper.from_array(np.ascontiguousarray(g), f"{name}_grad"),
                         os.path.join(args.out, f"grad_{i}.pb"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
