"""graphopt's gradients of every corpus model against torch.autograd (float32).

For each model of models/export_corpus.py's MODELS the torch module is rebuilt exactly as the
export built it (same seed, same builder, eval mode), fed the exported test input, and given a
seeded random cotangent for every output. graphopt differentiates the exported ONNX model with
`graphopt grad --outputs <every output> --wrt inputs,params` (the gradient graph optimized at -O2)
and runs it with `graphopt run`, the cotangents fed as the seed inputs '<output>_grad'.

Compared: the gradient of the model input, and of every initializer that holds torch
parameters unchanged. The mapping (expected_gradients): torch.onnx.export names an initializer
after the parameter it holds ('layers.0.weight', 'fc.bias'); it keeps one initializer for
parameters of equal value (a TransformerEncoder's layers are deep copies of one layer, so
'layers.0.self_attn.out_proj.weight' also stands for layer 1's; zero biases coincide), whose
gradient is then the sum of theirs; it stores a Linear weight used by MatMul transposed, as
'onnx::MatMul_NNN', compared with the transposed torch gradient. Parameters the export changed
are not compared: a BatchNorm folded into its Conv (eval export) leaves 'onnx::Conv_NNN' holding
the folded weight, which no torch parameter equals. Within 1e-4 relative to the tensor's largest
magnitude (gradtest.relative_error).

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
    values = {k: v.detach().numpy() for k, v in params.items()}
    return feeds, {k: (v.numpy() if v is not None else None) for k, v in named.items()}, values


def expected_gradients(model, want, values):
    """Torch's gradient for each ONNX initializer that kept a torch parameter's name.

    torch.onnx.export keeps one initializer for parameters of equal value (a TransformerEncoder's
    layers are deep copies of one layer; zero biases and unit norm weights coincide): the
    initializer takes the first one's name and every node reads it, so its gradient is the sum
    of all their gradients. Each parameter that has no initializer of its own and equals a named
    initializer element for element is counted there (with the first such initializer). An
    initializer whose value is not its parameter's (the export changed it) is not compared.
    """
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    named = [n for n in inits if n in values and want.get(n) is not None
             and inits[n].shape == values[n].shape and np.array_equal(inits[n], values[n])]
    expected = {n: want[n].astype(np.float64) for n in named}
    merged = {n: [n] for n in named}
    for q, value in values.items():
        if q in inits or want.get(q) is None:
            continue
        for n in named:
            if inits[n].shape == value.shape and np.array_equal(inits[n], value):
                expected[n] = expected[n] + want[q]
                merged[n].append(q)
                break
        else:
            # A Linear weight the export stored transposed for MatMul ('onnx::MatMul_NNN').
            for n, init in inits.items():
                if (n not in values and value.ndim == 2 and init.shape == value.T.shape
                        and np.array_equal(init, value.T)):
                    expected[n] = expected.get(n, 0) + want[q].T
                    merged.setdefault(n, []).append(q)
                    break
    return expected, merged


def compare_model(spec, graphopt, model_dir, name):
    model = onnx.load(os.path.join(model_dir, name, "model.onnx"), load_external_data=False)
    # The exported output shapes, from torch's reference outputs.
    ref_dir = os.path.join(model_dir, name, "test_data_set_0")
    shapes = [onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(ref_dir, f"output_{i}.pb"))).shape
              for i in range(len(spec.output_names))]
    rng = np.random.RandomState(1000 + spec.seed)
    cotangents = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    feeds, want, values = torch_gradients(spec, cotangents)
    expected, merged = expected_gradients(model, want, values)
    for input_name in spec.input_names:
        expected[input_name] = want[input_name]

    grad_model = os.path.join(graphopt.work_dir, f"{name}_grad.onnx")
    start = time.time()
    graphopt.grad(os.path.join(model_dir, name, "model.onnx"), grad_model,
                  wrt=["inputs", "params"], outputs=spec.output_names)
    grad_s = time.time() - start
    compared = list(spec.input_names) + sorted(merged)
    inputs = dict(feeds)
    for out, c in zip(spec.output_names, cotangents):
        inputs[out + "_grad"] = c
    start = time.time()
    got = graphopt.run(grad_model, inputs, [c + "_grad" for c in compared], tag=name)
    run_s = time.time() - start
    worst, worst_name = 0.0, ""
    for value in compared:
        err = gradtest.relative_error(got[value + "_grad"], expected[value])
        if err > worst:
            worst, worst_name = err, value
    covered = sum(len(v) for v in merged.values())
    shared = covered - len(merged)
    skipped = len(values) - covered
    summary = (f"{len(compared)} gradients compared ({len(merged)} initializers standing for "
               f"{covered} torch parameters ({shared} deduplicated by the export), "
               f"{skipped} parameters transformed or renamed by the export), worst "
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
