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
are matched by value where the change is known: a BatchNorm folded into its Conv (eval export)
leaves 'onnx::Conv_NNN' holding W * s per output channel, compared with torch's gradient of W
divided by s (folded_conv_weight); the folded biases and the LSTM's re-laid-out weights are not
compared. The reference is torch in float64 (the
float32 weights and inputs converted); graphopt (float32) must be within 1e-4 relative to the
tensor's largest magnitude (gradtest.relative_error), or, where torch's own float32 gradients
of the model are further than that from the float64 ones (resnet50, whose ReLU kinks float32
rounding crosses: see TORCH_FACTOR), within 1.5 times torch's worst float32 error, and then the
same model widened to float64 must be within 1e-4 of torch's float64 gradients; the output
prints each.

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
# Where torch's own float32 gradients of a model are further than TOLERANCE from its float64
# ones, graphopt's may be as far as this many times torch's worst. Found on resnet50: a ReLU
# input within float32 rounding of zero (layer4.0's bn1, channel 333: 4.2e-6 in float64) falls
# on the other side of zero in one float32 run, so that run's gradient flows where the other's
# does not; torch float32 differs from float64 by 2.9e-3 (input gradient), graphopt by 2.5e-3,
# by 2.1e-3 in the weight of the Conv reading that channel's ReLU.
TORCH_FACTOR = 1.5


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


def torch_gradients(spec, cotangents, dtype=torch.float32):
    """Torch's gradients of sum(output * cotangent) for the model input and every parameter,
    the model built in float32 (as exported) and then run in `dtype`."""
    torch.manual_seed(spec.seed)
    model = spec.build().eval().to(dtype)
    inputs = spec.inputs(torch.Generator().manual_seed(spec.seed))
    inputs = tuple(t.clone().to(dtype).requires_grad_(True) for t in inputs)
    outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    params = dict(model.named_parameters())
    targets = list(inputs) + list(params.values())
    grads = torch.autograd.grad(outputs, targets,
                                grad_outputs=[torch.from_numpy(c).to(dtype) for c in cotangents],
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
            else:
                folded = folded_conv_weight(inits, values, value)
                if folded is not None:
                    n, scale = folded
                    expected[n] = want[q] / scale
                    merged[n] = [q]
    return expected, merged


def folded_conv_weight(inits, values, weight):
    """The initializer holding `weight` with a BatchNorm folded in, and the fold's scale.

    Eval-mode export folds BatchNorm into the Conv before it: the initializer ('onnx::Conv_NNN')
    is W * s, s = gamma / sqrt(var + eps) per output channel, so the gradient with respect to
    it is torch's gradient of W divided by s. Found by value: the initializer of W's shape whose
    every output channel is W's times one factor.
    """
    if weight.ndim != 4:
        return None
    w = weight.reshape(weight.shape[0], -1).astype(np.float64)
    norms = np.sum(w * w, axis=1)
    if np.any(norms == 0):
        return None
    for n, init in inits.items():
        if n in values or init.shape != weight.shape:
            continue
        v = init.reshape(init.shape[0], -1).astype(np.float64)
        scale = np.sum(v * w, axis=1) / norms
        if np.all(scale != 0) and np.allclose(v, w * scale[:, None], rtol=1e-5, atol=0):
            return n, scale.reshape(-1, 1, 1, 1)
    return None


def compare_model(spec, graphopt, model_dir, name):
    model = onnx.load(os.path.join(model_dir, name, "model.onnx"), load_external_data=False)
    # The exported output shapes, from torch's reference outputs.
    ref_dir = os.path.join(model_dir, name, "test_data_set_0")
    shapes = [onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(ref_dir, f"output_{i}.pb"))).shape
              for i in range(len(spec.output_names))]
    rng = np.random.RandomState(1000 + spec.seed)
    cotangents = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    # The reference is torch in float64; torch's own float32 run says how close float32 can
    # get on this model.
    feeds, want32, values = torch_gradients(spec, cotangents)
    _, want, _ = torch_gradients(spec, cotangents, torch.float64)
    expected, merged = expected_gradients(model, want, values)
    expected32, _ = expected_gradients(model, want32, values)
    for input_name in spec.input_names:
        expected[input_name] = want[input_name]
        expected32[input_name] = want32[input_name]

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
    worst, worst_name, torch_worst = 0.0, "", 0.0
    for value in compared:
        err = gradtest.relative_error(got[value + "_grad"], expected[value])
        own = gradtest.relative_error(expected32[value], expected[value])
        torch_worst = max(torch_worst, own)
        if err > worst:
            worst, worst_name = err, value
    covered = sum(len(v) for v in merged.values())
    shared = covered - len(merged)
    skipped = len(values) - covered
    summary = (f"{len(compared)} gradients compared ({len(merged)} initializers standing for "
               f"{covered} torch parameters, {shared} of them deduplicated by the export; "
               f"{skipped} parameters not compared), worst "
               f"{worst:.2e} ({worst_name}; torch float32's worst {torch_worst:.2e}); grad "
               f"{grad_s:.1f} s, run {run_s:.1f} s")
    if worst > max(TOLERANCE, TORCH_FACTOR * torch_worst):
        raise gradtest.GraphoptError(f"gradient of '{worst_name}' differs: {summary}")
    if torch_worst > TOLERANCE:
        # float32 cannot meet TOLERANCE on this model (torch's own float32 does not): the same
        # model widened to float64 must meet it against torch's float64.
        worst64, worst64_name = float64_comparison(graphopt, model, name, spec, feeds,
                                                   cotangents, compared, expected)
        summary += f"; in float64 worst {worst64:.2e} ({worst64_name})"
        if worst64 > TOLERANCE:
            raise gradtest.GraphoptError(
                f"float64 gradient of '{worst64_name}' differs: {summary}")
    return summary


def float64_comparison(graphopt, model, name, spec, feeds, cotangents, compared, expected):
    """graphopt's gradients of `model` widened to float64 against torch's float64 ones:
    (worst relative error, its value). The float32 weights widen exactly; the weights the export
    folded (BatchNorm into Conv) keep their float32 rounding, ~1e-7 relative."""
    wide = os.path.join(graphopt.work_dir, f"{name}_f64.onnx")
    onnx.save(gradtest.float64_model(model), wide)
    grad_model = os.path.join(graphopt.work_dir, f"{name}_f64_grad.onnx")
    graphopt.grad(wide, grad_model, wrt=["inputs", "params"], outputs=spec.output_names)
    inputs = {k: v.astype(np.float64) for k, v in feeds.items()}
    for out, c in zip(spec.output_names, cotangents):
        inputs[out + "_grad"] = c.astype(np.float64)
    got = graphopt.run(grad_model, inputs, [c + "_grad" for c in compared], tag=name + "_f64")
    worst, worst_name = 0.0, ""
    for value in compared:
        err = gradtest.relative_error(got[value + "_grad"], expected[value])
        if err > worst:
            worst, worst_name = err, value
    return worst, worst_name


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
