#!/usr/bin/python3
"""Exports the zoo: architectures graphopt was not tuned on, with random weights, to ONNX.

torchvision's swin_t, convnext_tiny, densenet121, efficientnet_b0, googlenet, regnet_y_400mf,
shufflenet_v2_x1_0, squeezenet1_1 and mnasnet1_0, a 4-layer ViT, a GRU and an
nn.TransformerDecoder with symbolic batch and sequence dims (its causal mask computed from the
target's length inside the graph), all at opset 17. The layout, seeds and determinism are
export_corpus.py's (this script uses its export and main); the zoo is a set of its own because
it is larger (about 450 MiB; a few minutes of export on 2 cores) and only its benchmark and
tests need it.

Needs Debian's python3-torch, python3-torchvision and python3-onnx: run it with /usr/bin/python3.

    /usr/bin/python3 models/export_zoo.py --out /tmp/zoo [--models gru,swin_t]
"""

import os
import sys
from typing import Dict

import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_corpus  # noqa: E402
from export_corpus import IMAGE_SIZE, ModelSpec, image_input, torchvision_model  # noqa: E402

# Seeds start after the corpus's, so that no two models share weights.


class GruModel(nn.Module):
    """A two-layer batch-first GRU with a linear head on the last time step."""

    def __init__(self, features: int = 32, hidden: int = 64, classes: int = 8):
        super().__init__()
        self.gru = nn.GRU(features, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor):
        sequence, h_n = self.gru(x)
        return self.head(sequence[:, -1, :]), h_n


class CausalDecoder(nn.Module):
    """nn.TransformerDecoder with a causal mask built from the target's (symbolic) length.

    The mask is computed inside the graph from tgt's shape, as generated code usually does, so
    the exported graph carries Shape -> ConstantOfShape -> Trilu arithmetic on symbolic dims.
    """

    def __init__(self, d_model: int = 64, nhead: int = 4, layers: int = 2):
        super().__init__()
        layer = nn.TransformerDecoderLayer(
            d_model=d_model, nhead=nhead, dim_feedforward=256, dropout=0.1, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, num_layers=layers)

    def forward(self, tgt: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        length = tgt.shape[1]
        mask = torch.triu(torch.full((length, length), float("-inf")), diagonal=1)
        return self.decoder(tgt, memory, tgt_mask=mask)


def small_vit() -> nn.Module:
    """ViT-B/16's width on 4 layers instead of 12: the same ops at a third of the weights.

    torchvision starts the classifier head at zero (all logits 0, which would compare nothing);
    it gets random weights like every other layer.
    """
    model = torchvision.models.vision_transformer.VisionTransformer(
        image_size=IMAGE_SIZE, patch_size=16, num_layers=4, num_heads=12, hidden_dim=768,
        mlp_dim=3072)
    with torch.no_grad():
        model.heads.head.weight.normal_(0.0, 0.05)
        model.heads.head.bias.normal_(0.0, 0.05)
    return model


def calibrate_batchnorm(model: nn.Module, batch: int = 4) -> nn.Module:
    """Sets every BatchNorm's running statistics to those of its inputs on random images.

    With random weights and made-up statistics, activations shrink or grow layer after layer;
    efficientnet_b0's and mnasnet1_0's logits then no longer depend on the image at all (two
    images differ by 1e-7), and comparing outputs would check nothing. A trained network's
    statistics match its activations; running the BatchNorms in training mode (cumulative
    averages, momentum None) over one random batch gives that, while their random affine
    parameters keep folding them non-trivial. Dropout and stochastic depth stay in eval mode.
    Draws from torch's global RNG, so it is as deterministic as the weights.
    """
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if not norms:
        return model
    model.eval()
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None
        norm.train()
    with torch.no_grad():
        model(torch.randn(batch, 3, IMAGE_SIZE, IMAGE_SIZE))
    return model.eval()


def zoo_vision(name: str, seed: int) -> ModelSpec:
    build = torchvision_model(name)
    return ModelSpec(build=lambda: calibrate_batchnorm(build()), inputs=image_input, opset=17,
                     input_names=["image"], output_names=["logits"], seed=seed)


ZOO: Dict[str, ModelSpec] = {
    "swin_t": zoo_vision("swin_t", 101),
    "vit_4l": ModelSpec(build=small_vit, inputs=image_input, opset=17, input_names=["image"],
                        output_names=["logits"], seed=102),
    "convnext_tiny": zoo_vision("convnext_tiny", 103),
    "densenet121": zoo_vision("densenet121", 104),
    "efficientnet_b0": zoo_vision("efficientnet_b0", 105),
    "googlenet": zoo_vision("googlenet", 106),
    "regnet_y_400mf": zoo_vision("regnet_y_400mf", 107),
    "shufflenet_v2_x1_0": zoo_vision("shufflenet_v2_x1_0", 108),
    "squeezenet1_1": zoo_vision("squeezenet1_1", 109),
    "mnasnet1_0": zoo_vision("mnasnet1_0", 110),
    "gru": ModelSpec(
        build=GruModel,
        inputs=lambda g: (torch.randn(2, 16, 32, generator=g),),
        opset=17,
        input_names=["sequence"],
        output_names=["logits", "h_n"],
        dynamic_axes={
            "sequence": {0: "batch", 1: "sequence"},
            "logits": {0: "batch"},
            "h_n": {1: "batch"},
        },
        seed=111,
    ),
    "transformer_decoder": ModelSpec(
        build=CausalDecoder,
        inputs=lambda g: (torch.randn(2, 10, 64, generator=g), torch.randn(2, 12, 64, generator=g)),
        opset=17,
        input_names=["tgt", "memory"],
        output_names=["decoded"],
        dynamic_axes={
            "tgt": {0: "batch", 1: "sequence"},
            "memory": {0: "batch", 1: "memory_sequence"},
            "decoded": {0: "batch", 1: "sequence"},
        },
        seed=112,
    ),
}


if __name__ == "__main__":
    sys.exit(export_corpus.main(sys.argv[1:], ZOO, __doc__))
