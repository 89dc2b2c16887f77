"""graphopt's gradients of every corpus model against torch.autograd (float32).

For each model of models/export_corpus.py's MODELS the torch module is rebuilt exactly as the
export built it (same seed, same builder, eval mode), fed the exported test input, and given a
seeded random cotangent for every output. graphopt differentiates the exported ONNX model with
`graphopt grad --outputs <every output> --wrt inputs,params` (the gradient graph optimized at -O2)
and runs it with `graphopt run`, the cotangents fed as the seed inputs '<output>_grad'.

Compared: the gradient of the model input, and of every parameter whose ONNX initializer kept
torch's name (torch.onnx.export names an initializer after the parameter it holds, e.g.
'layers.0.weight', 'fc.bias'; parameters the export transformed lose that name: a BatchNorm
folded into its Conv becomes 'onnx::Conv_NNN' holding the folded weight, and the transformer's
attention projections are re-laid out, so those are not compared). Within 1e-4 relative to the
tensor's largest magnitude (gradtest.relative_error).

A model that does not pass is a failure unless known_failures.txt lists it; a missing gradient
is reported naming the op.

Usage: torch_compare_test.py --graphopt BIN --corpus DIR --export_corpus PY --known_failures F
       --work_dir DIR [--models a,b]
"""

import argparse
import importlib.util
import os
import sys
import time

import numpy as np
import onnx
import onnx.numpy_helper
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gradtest  # noqa: E402

TOLERANCE = 1e-4


def load_export_corpus(path):
    spec = importlib.util.spec_from_file_location("export_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SelfCheck(torch.nn.Module):
    """A model of ops whose gradients the first gradient commit had (rank-2 MatMul, Add, Relu),
    so the comparison itself is exercised even while the corpus models wait for gradients."""

    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(8, 16) * 0.3)
        self.b1 = torch.nn.Parameter(torch.randn(16) * 0.1)
        self.w2 = torch.nn.Parameter(torch.randn(16, 4) * 0.3)

    def forward(self, x):
        return torch.relu(x @ self.w1 + self.b1) @ self.w2


def self_check_spec(corpus):
    return corpus.ModelSpec(build=SelfCheck, inputs=lambda g: (torch.randn(6, 8, generator=g),),
                            opset=13, input_names=["x"], output_names=["y"], seed=11)


def export_self_check(corpus, work_dir):
    """Writes the self-check model in the corpus layout under work_dir/self_check."""
    data, inputs, outputs = corpus.export(self_check_spec(corpus))
    corpus.write_test_case(os.path.join(work_dir, "self_check"), data, inputs, outputs)
    return work_dir


def torch_gradients(spec, cotangents):
    """Torch's gradients of sum(output * cotangent) for the model input and every parameter."""
    torch.manual_seed(spec.seed)
    model = spec.build().eval()
    inputs = spec.inputs(torch.Generator().manual_seed(spec.seed))
    inputs = tuple(t.clone().requires_grad_(True) for t in inputs)
    outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    params = dict(model.named_parameters())
    targets = list(inputs) + list(params.values())
    grads = torch.autograd.grad(outputs, targets,
                                grad_outputs=[torch.from_numpy(c) for c in cotangents],
                                allow_unused=True)
    named = {}
    for i, input_name in enumerate(spec.input_names):
        named[input_name] = grads[i]
    for k, pname in enumerate(params):
        named[pname] = grads[len(inputs) + k]
    feeds = {n: t.detach().numpy() for n, t in zip(spec.input_names, inputs)}
    return feeds, {k: (v.numpy() if v is not None else None) for k, v in named.items()}


def compare_model(spec, graphopt, model_dir, name):
    model = onnx.load(os.path.join(model_dir, name, "model.onnx"), load_external_data=False)
    initializers = {t.name: tuple(t.dims) for t in model.graph.initializer}
    # The exported output shapes, from torch's reference outputs.
    ref_dir = os.path.join(model_dir, name, "test_data_set_0")
    shapes = [onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(ref_dir, f"output_{i}.pb"))).shape
              for i in range(len(spec.output_names))]
    rng = np.random.RandomState(1000 + spec.seed)
    cotangents = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    feeds, want = torch_gradients(spec, cotangents)

    grad_model = os.path.join(graphopt.work_dir, f"{name}_grad.onnx")
    start = time.time()
    graphopt.grad(os.path.join(model_dir, name, "model.onnx"), grad_model,
                  wrt=["inputs", "params"], outputs=spec.output_names)
    grad_s = time.time() - start
    compared = [n for n in spec.input_names]
    compared += sorted(k for k in want if k in initializers and k not in spec.input_names
                       and want[k] is not None and tuple(want[k].shape) == initializers[k])
    inputs = dict(feeds)
    for out, c in zip(spec.output_names, cotangents):
        inputs[out + "_grad"] = c
    start = time.time()
    got = graphopt.run(grad_model, inputs, [c + "_grad" for c in compared], tag=name)
    run_s = time.time() - start
    worst, worst_name = 0.0, ""
    for value in compared:
        err = gradtest.relative_error(got[value + "_grad"], want[value])
        if err > worst:
            worst, worst_name = err, value
    skipped = len([k for k in want if k not in compared])
    summary = (f"{len(compared)} gradients compared ({len(compared) - len(spec.input_names)} "
               f"torch-named parameters, {skipped} parameters renamed by the export), worst "
               f"{worst:.2e} ({worst_name}); grad {grad_s:.1f} s, run {run_s:.1f} s")
    if worst > TOLERANCE:
        raise gradtest.GraphoptError(f"gradient of '{worst_name}' differs: {summary}")
    return summary


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--graphopt", required=True)
    parser.add_argument("--corpus", required=True, help="folder holding <model>/model.onnx")
    parser.add_argument("--export_corpus", required=True)
    parser.add_argument("--known_failures", required=True)
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--models", default="")
    args = parser.parse_args()
    torch.set_num_threads(2)
    corpus = load_export_corpus(args.export_corpus)
    names = args.models.split(",") if args.models else ["self_check"] + list(corpus.MODELS)
    graphopt = gradtest.Graphopt(args.graphopt, args.work_dir)
    results = {}
    cases = [(name, self_check_spec(corpus), export_self_check(corpus, args.work_dir))
             if name == "self_check" else (name, corpus.MODELS[name], args.corpus)
             for name in names]
    for name, spec, model_dir in cases:
        case = f"torch/{name}"
        try:
            print(f"{case}: PASS: {compare_model(spec, graphopt, model_dir, name)}", flush=True)
            results[case] = None
        except gradtest.GraphoptError as e:
            print(f"{case}: FAIL: {e}", flush=True)
            results[case] = str(e)
    passed = [c for c, f in results.items() if f is None]
    print(f"{len(passed)} of {len(results)} models match torch: {', '.join(passed) or 'none'}")
    problems = gradtest.check_against_known(results, args.known_failures)
    for p in problems:
        print("PROBLEM: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
