#!/usr/bin/python3
"""Exports a corpus of real architectures with random weights to ONNX.

Each model is written in the ONNX backend-test layout (as in Debian's libonnx-testdata):

    <out>/<name>/model.onnx
    <out>/<name>/test_data_set_0/input_<i>.pb    serialized onnx.TensorProto, one per graph input
    <out>/<name>/test_data_set_0/output_<i>.pb   torch's outputs for those inputs

Weights and inputs come from fixed seeds (nothing is downloaded), so every run writes the same
bytes. The opset versions are spread over the models so that opsets 11 to 17 are all covered, and
two models (mlp, lstm) have a symbolic "batch" dimension.

Needs Debian's python3-torch, python3-torchvision and python3-onnx: run it with /usr/bin/python3.

    /usr/bin/python3 models/export_corpus.py --out /tmp/corpus [--models mlp,resnet18]
"""

import argparse
import dataclasses
import io
import os
import sys
import time
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torchvision

# Spatial size of the CNN inputs: the standard ImageNet size.
IMAGE_SIZE = 224


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """How to build, feed and export one corpus model."""

    build: Callable[[], nn.Module]  # the model, weights drawn from torch's global RNG
    inputs: Callable[[torch.Generator], Tuple[torch.Tensor, ...]]
    opset: int
    input_names: Sequence[str]
    output_names: Sequence[str]
    dynamic_axes: Dict[str, Dict[int, str]] = dataclasses.field(default_factory=dict)
    # Keep BatchNormalization nodes: export the eval model with PRESERVE and no constant folding
    # (otherwise torch folds BatchNorm into the preceding Conv).
    keep_batchnorm: bool = False
    seed: int = 0


class Mlp(nn.Module):
    """A small classifier head: Linear+ReLU blocks, a GELU and a LayerNorm."""

    def __init__(self, features: int = 256, hidden: int = 512, classes: int = 10):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(features, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.LayerNorm(hidden),
            nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class LstmModel(nn.Module):
    """A two-layer batch-first LSTM with a linear head on the last time step."""

    def __init__(self, features: int = 32, hidden: int = 64, classes: int = 8):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor):
        sequence, (h_n, c_n) = self.lstm(x)
        return self.head(sequence[:, -1, :]), h_n, c_n


def transformer_encoder() -> nn.Module:
    layer = nn.TransformerEncoderLayer(
        d_model=64, nhead=4, dim_feedforward=256, dropout=0.1, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2)


def randomize_batchnorm(model: nn.Module) -> nn.Module:
    """Gives every BatchNorm non-trivial statistics and affine parameters.

    Freshly constructed BatchNorm layers are identities (mean 0, variance 1, scale 1, shift 0),
    which would make BatchNorm folding and BatchNorm handling untestable. Draws from torch's
    global RNG, so it is as deterministic as the weights.
    """
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.normal_(0.0, 0.1)
                module.running_var.uniform_(0.5, 1.5)
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.1)
    return model


def damp_residual_branches(model: nn.Module, scale: float = 0.5) -> nn.Module:
    """Scales the last BatchNorm of every ResNet residual branch by `scale`.

    With random weights each residual block adds a branch as large as its input, so activations
    grow block after block: resnet50's logits reach ~500, where float32 rounding alone exceeds the
    corpus tests' absolute tolerance. Trained ResNets keep these branches small (torchvision's
    zero_init_residual starts them at zero); halving them keeps resnet50's logits at a few units.
    """
    last_norms = {torchvision.models.resnet.BasicBlock: "bn2",
                  torchvision.models.resnet.Bottleneck: "bn3"}
    with torch.no_grad():
        for module in model.modules():
            if type(module) in last_norms:
                getattr(module, last_norms[type(module)]).weight.mul_(scale)
    return model


def torchvision_model(name: str) -> Callable[[], nn.Module]:
    # weights=None: random initialization, no download.
    return lambda: damp_residual_branches(
        randomize_batchnorm(getattr(torchvision.models, name)(weights=None)))


def image_input(generator: torch.Generator) -> Tuple[torch.Tensor, ...]:
    return (torch.randn(1, 3, IMAGE_SIZE, IMAGE_SIZE, generator=generator),)


MODELS: Dict[str, ModelSpec] = {
    "mlp": ModelSpec(
        build=Mlp,
        inputs=lambda g: (torch.randn(4, 256, generator=g),),
        opset=11,
        input_names=["x"],
        output_names=["logits"],
        dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
        seed=1,
    ),
    "resnet18": ModelSpec(
        build=torchvision_model("resnet18"),
        inputs=image_input,
        opset=12,
        input_names=["image"],
        output_names=["logits"],
        seed=2,
    ),
    "resnet50": ModelSpec(
        build=torchvision_model("resnet50"),
        inputs=image_input,
        opset=13,
        input_names=["image"],
        output_names=["logits"],
        seed=3,
    ),
    "lstm": ModelSpec(
        build=LstmModel,
        inputs=lambda g: (torch.randn(2, 16, 32, generator=g),),
        opset=14,
        input_names=["sequence"],
        output_names=["logits", "h_n", "c_n"],
        dynamic_axes={
            "sequence": {0: "batch"},
            "logits": {0: "batch"},
            "h_n": {1: "batch"},
            "c_n": {1: "batch"},
        },
        seed=4,
    ),
    "mobilenet_v2": ModelSpec(
        build=torchvision_model("mobilenet_v2"),
        inputs=image_input,
        opset=15,
        input_names=["image"],
        output_names=["logits"],
        seed=5,
    ),
    "mobilenet_v2_bn": ModelSpec(
        build=torchvision_model("mobilenet_v2"),
        inputs=image_input,
        opset=16,
        input_names=["image"],
        output_names=["logits"],
        keep_batchnorm=True,
        seed=6,
    ),
    "transformer_encoder": ModelSpec(
        build=transformer_encoder,
        inputs=lambda g: (torch.randn(1, 16, 64, generator=g),),
        opset=17,
        input_names=["tokens"],
        output_names=["encoded"],
        seed=7,
    ),
}


def export(spec: ModelSpec) -> Tuple[bytes, List[np.ndarray], List[np.ndarray]]:
    """Returns the serialized model, its inputs and torch's reference outputs."""
    torch.manual_seed(spec.seed)
    model = spec.build().eval()
    inputs = spec.inputs(torch.Generator().manual_seed(spec.seed))

    # Both the reference run and the export keep autograd enabled: under torch.no_grad()
    # nn.TransformerEncoder takes its fused fast path, which torch.onnx.export cannot trace, and
    # the reference must come from the same code path as the exported graph.
    outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    reference = [t.detach().numpy().copy() for t in outputs]

    buffer = io.BytesIO()
    extra = {}
    if spec.keep_batchnorm:
        extra = dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    torch.onnx.export(
        model,
        inputs,
        buffer,
        opset_version=spec.opset,
        input_names=list(spec.input_names),
        output_names=list(spec.output_names),
        dynamic_axes=spec.dynamic_axes or None,
        **extra,
    )
    return buffer.getvalue(), [t.numpy().copy() for t in inputs], reference


def write_test_case(directory: str, model_bytes: bytes, inputs: List[np.ndarray],
                    outputs: List[np.ndarray]) -> onnx.ModelProto:
    """Writes model.onnx and test_data_set_0/ and returns the parsed model."""
    model = onnx.load_from_string(model_bytes)
    graph_inputs = [i.name for i in model.graph.input]
    graph_inputs = [n for n in graph_inputs if n not in {t.name for t in model.graph.initializer}]
    graph_outputs = [o.name for o in model.graph.output]
    if len(graph_inputs) != len(inputs) or len(graph_outputs) != len(outputs):
        raise RuntimeError(
            f"exported graph has {len(graph_inputs)} inputs and {len(graph_outputs)} outputs, "
            f"torch used {len(inputs)} and produced {len(outputs)}")

    data_dir = os.path.join(directory, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    with open(os.path.join(directory, "model.onnx"), "wb") as f:
        f.write(model_bytes)
    for prefix, names, arrays in (("input", graph_inputs, inputs),
                                  ("output", graph_outputs, outputs)):
        for i, (name, array) in enumerate(zip(names, arrays)):
            tensor = onnx.numpy_helper.from_array(array, name)
            with open(os.path.join(data_dir, f"{prefix}_{i}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())
    return model


def main(argv: Sequence[str], models: Dict[str, ModelSpec] = MODELS, doc: str = __doc__) -> int:
    """Exports `models` (the corpus by default; models/export_zoo.py passes the zoo)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory to write <name>/ folders into")
    parser.add_argument("--models", default=",".join(models),
                        help=f"comma-separated subset of: {', '.join(models)} (default: all)")
    parser.add_argument("--expect_files", metavar="INPUTS,OUTPUTS",
                        help="with a single model: fail unless it has exactly this many graph "
                             "inputs and outputs (the files a build rule declared)")
    args = parser.parse_args(argv)

    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in models]
    if unknown or not names:
        parser.error(f"unknown model(s) {', '.join(unknown) or '(none given)'}; "
                     f"known: {', '.join(models)}")
    expected_files = None
    if args.expect_files:
        if len(names) != 1:
            parser.error("--expect_files needs exactly one model in --models")
        expected_files = tuple(int(n) for n in args.expect_files.split(","))

    # Same bytes on every run (torch reads OMP_NUM_THREADS itself for the forward passes).
    torch.use_deterministic_algorithms(True)

    print(f"{'model':<20} {'opset':>5} {'nodes':>6} {'size':>10} {'seconds':>8} {'max|out|':>9}")
    for name in names:
        spec = models[name]
        start = time.monotonic()
        model_bytes, inputs, outputs = export(spec)
        if expected_files and expected_files != (len(inputs), len(outputs)):
            print(f"error: {name} has {len(inputs)} inputs and {len(outputs)} outputs, "
                  f"--expect_files says {expected_files[0]} and {expected_files[1]}",
                  file=sys.stderr)
            return 1
        model = write_test_case(os.path.join(args.out, name), model_bytes, inputs, outputs)
        seconds = time.monotonic() - start
        size_mib = len(model_bytes) / (1 << 20)
        print(f"{name:<20} {spec.opset:>5} {len(model.graph.node):>6} {size_mib:>6.1f} MiB "
              f"{seconds:>8.1f} {max(float(np.abs(o).max()) for o in outputs):>9.3g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
