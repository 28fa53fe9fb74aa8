#!/usr/bin/python3
"""USE lite from a converted vkformer directory, in NumPy (float64): the
use_lite family exactly as docs/model-format.md states it. It checks the
converter and the documentation against the TF.js runtime independently of
the Vulkan engine:

    /usr/bin/python3 tools/use_lite/numpy_reference.py models/use-lite < ref.json

reads the output of reference_embeddings.js (its "ids") and prints the largest
difference to its embeddings.
"""
import json
import os
import sys

import numpy as np


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    w = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        w[name] = np.frombuffer(data[b:e], "<f4").reshape(t["shape"]).astype(np.float64)
    return cfg, w


def layernorm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def embed(cfg, w, batch):
    """[n, d_model] embeddings of a batch of id lists."""
    seqs = [s[: cfg["max_positions"]] for s in batch]
    out = []
    for ids in seqs:  # padded keys get no weight, so each sequence alone is the same
        n = len(ids)
        if n == 0:
            pooled = np.zeros(cfg["d_model"])
        else:
            inv = w["timing.inv_timescales"].astype(np.float32)
            angle = (np.arange(n, dtype=np.float32)[:, None] * inv[None, :]).astype(np.float64)
            x = cfg["embedding_scale"] * w["embed.weight"][ids] + np.concatenate([np.sin(angle), np.cos(angle)], 1)
            for i in range(cfg["layers"]):
                p = f"layers.{i}."
                lin = lambda v, name: v @ w[p + name + ".weight"].T + w[p + name + ".bias"]
                h = layernorm(x, w[p + "attn_norm.weight"], w[p + "attn_norm.bias"], cfg["layer_norm_eps"])
                qkv = lin(h, "attn.qkv")
                width = qkv.shape[1] // 3
                hd = width // cfg["n_heads"]
                heads = []
                for j in range(cfg["n_heads"]):
                    q, k, v = (qkv[:, s * width + j * hd: s * width + (j + 1) * hd] for s in range(3))
                    s = q @ k.T / np.sqrt(hd)
                    s = np.exp(s - s.max(1, keepdims=True))
                    heads.append(s / s.sum(1, keepdims=True) @ v)
                r = lin(x, "residual") if p + "residual.weight" in w else x
                x = lin(np.concatenate(heads, 1), "attn.out") + r
                h = layernorm(x, w[p + "ffn_norm.weight"], w[p + "ffn_norm.bias"], cfg["layer_norm_eps"])
                x = lin(np.maximum(lin(h, "ffn.fc1"), 0), "ffn.fc2") + x
            pooled = x.mean(0)
        y = np.tanh(pooled @ w["pooler.dense.weight"].T + w["pooler.dense.bias"])
        out.append(y / np.sqrt(max((y * y).sum(), cfg["l2_eps"])))
    return np.array(out)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    cfg, w = load(sys.argv[1])
    ref = json.load(sys.stdin)
    worst = 0.0
    for b in ref["batches"]:
        got = embed(cfg, w, b["ids"])
        err = float(np.abs(got - np.array(b["embeddings"])).max())
        worst = max(worst, err)
        print(f"batch of {len(b['ids'])}, lengths {[len(s) for s in b['ids']]}: max abs error {err:.3g}")
    print(f"max abs error vs TF.js: {worst:.3g}")


if __name__ == "__main__":
    main()
