#!/usr/bin/python3
"""Exports a Llama-style decoder-only language model with a KV cache to ONNX (opset 17).

The architecture of the decoders frameworks send to optimizers today: token embedding, per layer
RMSNorm -> grouped-query attention with rotary position embeddings, a causal mask and past
key/value inputs -> residual -> RMSNorm -> SwiGLU MLP -> residual, then a final RMSNorm and an
untied LM head. Weights are random (seeded), so the model means nothing; its numerics are those
of a real one.

Graph inputs: input_ids int64 [batch, seq], then past_key_<l>, past_value_<l> float32
[batch, kv_heads, past, head_dim] per layer. Outputs: logits [batch, seq, vocab], then
present_key_<l>, present_value_<l> [batch, kv_heads, past + seq, head_dim]. batch, seq and past
are symbolic. Positions start at `past` (read from past_key_0's shape inside the graph), so a
prefill passes past = 0 and each decode step feeds the presents back as the next pasts.

Sizes: `small` (2 layers, hidden 64, ~100k parameters) for tests; `1b` (TinyLlama's shape: 22
layers, hidden 2048, 32 heads, 4 KV heads, MLP 5632, vocab 32000; 1.1 billion parameters, 4.4 GB
in float32) for benchmarks, written with ONNX external data (weights in model.onnx.data beside
the model).

With --reference, also writes reference.npz: torch's logits and presents for a prefill of
--prefill tokens followed by --decode single-token steps, each step feeding its presents back
(token ids seeded, teacher-forced so both sides see the same tokens):
  tokens [batch, prefill + decode]; logits_<step> [batch, seq_of_step, vocab]
  (step 0 is the prefill); present_<key|value>_<l> after the last step.

Needs Debian's python3-torch and python3-onnx: run it with /usr/bin/python3.

    /usr/bin/python3 models/export_llm.py --size small --out /tmp/llm [--reference]
"""

import argparse
import math
import os
import sys
from dataclasses import dataclass
from typing import List, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class Config:
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    mlp: int
    rope_theta: float = 10000.0
    eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


SIZES = {
    "small": Config(vocab=256, hidden=64, layers=2, heads=4, kv_heads=2, mlp=172),
    "1b": Config(vocab=32000, hidden=2048, layers=22, heads=32, kv_heads=4, mlp=5632),
}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        self.q_proj = nn.Linear(c.hidden, c.heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden, c.kv_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden, c.kv_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.heads * c.head_dim, c.hidden, bias=False)

    def forward(self, x, cos, sin, mask, past_k, past_v):
        c = self.c
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, c.heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, c.kv_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, c.kv_heads, c.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.cat((past_k, k), dim=2)
        v = torch.cat((past_v, v), dim=2)
        present_k, present_v = k, v
        # Grouped-query attention: each KV head serves heads / kv_heads query heads.
        rep = c.heads // c.kv_heads
        t = k.shape[2]
        k = k[:, :, None].expand(b, c.kv_heads, rep, t, c.head_dim).reshape(b, c.heads, t,
                                                                             c.head_dim)
        v = v[:, :, None].expand(b, c.kv_heads, rep, t, c.head_dim).reshape(b, c.heads, t,
                                                                             c.head_dim)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(c.head_dim)
        scores = scores + mask
        attn = torch.softmax(scores, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, s, c.heads * c.head_dim)
        return self.o_proj(out), present_k, present_v


class Mlp(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden, c.mlp, bias=False)
        self.up_proj = nn.Linear(c.hidden, c.mlp, bias=False)
        self.down_proj = nn.Linear(c.mlp, c.hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.input_norm = RMSNorm(c.hidden, c.eps)
        self.attn = Attention(c)
        self.post_norm = RMSNorm(c.hidden, c.eps)
        self.mlp = Mlp(c)

    def forward(self, x, cos, sin, mask, past_k, past_v):
        a, pk, pv = self.attn(self.input_norm(x), cos, sin, mask, past_k, past_v)
        x = x + a
        return x + self.mlp(self.post_norm(x)), pk, pv


class Decoder(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c.vocab, c.hidden)
        self.layers = nn.ModuleList([Layer(c) for _ in range(c.layers)])
        self.norm = RMSNorm(c.hidden, c.eps)
        self.lm_head = nn.Linear(c.hidden, c.vocab, bias=False)
        inv_freq = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2).float() / c.head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, input_ids: torch.Tensor, *past: torch.Tensor):
        c = self.c
        s = input_ids.shape[1]
        p = past[0].shape[2]
        positions = torch.arange(s, dtype=torch.float32) + p
        freqs = positions[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        # Causal: query i (at position p + i) sees keys 0 .. p + i.
        key_pos = torch.arange(s + p, dtype=torch.float32)
        mask = torch.where(key_pos[None, :] > positions[:, None],
                           torch.tensor(torch.finfo(torch.float32).min),
                           torch.tensor(0.0))
        x = self.embed(input_ids)
        presents: List[torch.Tensor] = []
        for i, layer in enumerate(self.layers):
            x, pk, pv = layer(x, cos, sin, mask, past[2 * i], past[2 * i + 1])
            presents += [pk, pv]
        return (self.lm_head(self.norm(x)), *presents)


def build(size: str, seed: int) -> Decoder:
    c = SIZES[size]
    torch.manual_seed(seed)
    model = Decoder(c).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.uniform_(0.8, 1.2)  # not all ones: a wrong weight must show
            elif param.dim() == 2:
                param.normal_(0.0, 1.0 / math.sqrt(param.shape[1]))
    return model


def empty_past(c: Config, batch: int, length: int = 0) -> Tuple[torch.Tensor, ...]:
    shape = (batch, c.kv_heads, length, c.head_dim)
    return tuple(torch.zeros(shape) for _ in range(2 * c.layers))


def io_names(c: Config) -> Tuple[List[str], List[str]]:
    kv = [f"{kind}_{l}" for l in range(c.layers) for kind in ("key", "value")]
    return (["input_ids"] + [f"past_{n}" for n in kv], ["logits"] + [f"present_{n}" for n in kv])


def export(model: Decoder, path: str) -> None:
    c = model.c
    inputs, outputs = io_names(c)
    # Traced with a non-empty past and seq > 1, so that neither becomes a constant.
    example = (torch.zeros((1, 3), dtype=torch.int64), *empty_past(c, 1, 2))
    dynamic = {"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    for n in inputs[1:]:
        dynamic[n] = {0: "batch", 2: "past"}
    for n in outputs[1:]:
        dynamic[n] = {0: "batch", 2: "total"}
    large = sum(p.numel() for p in model.parameters()) * 4 >= 2**31 - 2**26
    with torch.no_grad():
        torch.onnx.export(model, example, path, opset_version=17, input_names=inputs,
                          output_names=outputs, dynamic_axes=dynamic, do_constant_folding=True)
    if large:
        gather_external_data(path)


def gather_external_data(path: str) -> None:
    """torch writes a large model's tensors one file each beside it: move them into one data
    file, model.onnx.data, at 4 KiB-aligned offsets, one tensor at a time (never the whole
    model in memory)."""
    import onnx
    folder = os.path.dirname(path)
    data_name = os.path.basename(path) + ".data"
    m = onnx.load(path, load_external_data=False)
    offset = 0
    with open(os.path.join(folder, data_name), "wb") as out:
        for t in m.graph.initializer:
            if t.data_location != onnx.TensorProto.EXTERNAL:
                continue
            entries = {e.key: e.value for e in t.external_data}
            src = os.path.join(folder, entries["location"])
            with open(src, "rb") as f:
                f.seek(int(entries.get("offset", 0)))
                data = f.read(int(entries["length"])) if "length" in entries else f.read()
            os.remove(src)
            pad = -offset % 4096
            out.write(b"\0" * pad)
            offset += pad
            out.write(data)
            del t.external_data[:]
            for k, v in (("location", data_name), ("offset", str(offset)),
                         ("length", str(len(data)))):
                t.external_data.add(key=k, value=v)
            offset += len(data)
    onnx.save(m, path)


def reference(model: Decoder, batch: int, prefill: int, decode: int, seed: int) -> dict:
    c = model.c
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, c.vocab, (batch, prefill + decode), generator=g)
    out = {"tokens": tokens.numpy()}
    past = empty_past(c, batch)
    with torch.no_grad():
        for step in range(decode + 1):
            ids = tokens[:, :prefill] if step == 0 else tokens[:, prefill + step - 1:prefill + step]
            logits, *past = model(ids, *past)
            out[f"logits_{step}"] = logits.numpy()
    _, names = io_names(c)
    for name, t in zip(names[1:], past):
        out[name] = t.numpy()
    return out


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="small")
    p.add_argument("--out", required=True, help="folder to write model.onnx (and data) into")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--reference", action="store_true", help="also write reference.npz")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--prefill", type=int, default=16)
    p.add_argument("--decode", type=int, default=8)
    args = p.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    os.makedirs(args.out, exist_ok=True)
    model = build(args.size, args.seed)
    export(model, os.path.join(args.out, "model.onnx"))
    if args.reference:
        np.savez(os.path.join(args.out, "reference.npz"),
                 **reference(model, args.batch, args.prefill, args.decode, args.seed + 1))
    params = sum(p.numel() for p in model.parameters())
    print(f"llm {args.size}: {params} parameters ({params * 4 / 2**20:.1f} MiB float32), "
          f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
