#!/usr/bin/python3
"""Small random use_lite models with their NumPy (float64) embeddings, for tests
that need no npm package: tests/models/use_lite_tiny (embed_dim 8 -> d_model 12,
so the first layer projects its residual) and tests/models/use_lite_square
(embed_dim = d_model = 12, three layers, no projection). Deterministic.

    /usr/bin/python3 tools/use_lite/make_tiny_models.py
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numpy_reference import embed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make(name, e, d, heads, d_ff, layers, vocab, max_pos, seed):
    rng = np.random.default_rng(seed)
    cfg = {"model_type": "use_lite", "vocab_size": vocab, "embed_dim": e, "d_model": d, "n_heads": heads,
           "d_ff": d_ff, "layers": layers, "activation": "relu", "layer_norm_eps": 1e-6,
           "max_positions": max_pos, "embedding_scale": 2.0, "l2_eps": 1e-12}
    w = {"embed.weight": rng.normal(0, 0.5, (vocab, e)),
         "timing.inv_timescales": np.exp(-np.arange(e // 2) * math.log(1e4) / max(e // 2 - 1, 1))}

    def lin(name, out, inp):
        w[name + ".weight"] = rng.normal(0, 1 / math.sqrt(inp), (out, inp))
        w[name + ".bias"] = rng.normal(0, 0.1, out)

    for i in range(layers):
        p, win = f"layers.{i}.", e if i == 0 else d
        w[p + "attn_norm.weight"] = rng.uniform(0.5, 1.5, win)
        w[p + "attn_norm.bias"] = rng.normal(0, 0.1, win)
        lin(p + "attn.qkv", 3 * win, win)
        lin(p + "attn.out", d, win)
        if win != d:
            lin(p + "residual", d, win)
        w[p + "ffn_norm.weight"] = rng.uniform(0.5, 1.5, d)
        w[p + "ffn_norm.bias"] = rng.normal(0, 0.1, d)
        lin(p + "ffn.fc1", d_ff, d)
        lin(p + "ffn.fc2", d, d_ff)
    lin("pooler.dense", d, d)
    w = {k: v.astype(np.float32) for k, v in w.items()}

    # Unequal lengths, one past max_positions (cut), an empty one, id 0 and the last id.
    batch = [[1, 2, 3], [0, vocab - 1], [], list(rng.integers(0, vocab, max_pos + 3)), [5]]
    batch = [[int(t) for t in s] for s in batch]
    got = embed(cfg, {k: v.astype(np.float64) for k, v in w.items()}, batch)

    out = os.path.join(ROOT, "tests", "models", name)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
        f.write("\n")
    header, off = {}, 0
    for k, v in w.items():
        header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + v.nbytes]}
        off += v.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(v.astype("<f4").tobytes() for v in w.values()))
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump({"ids": batch, "embeddings": got.tolist(), "seed": seed,
                   "made_by": "tools/use_lite/make_tiny_models.py (numpy_reference.embed, float64)"}, f)
        f.write("\n")
    print(f"{out}: {sum(v.size for v in w.values())} weights")


make("use_lite_tiny", e=8, d=12, heads=2, d_ff=20, layers=2, vocab=17, max_pos=6, seed=1)
make("use_lite_square", e=12, d=12, heads=3, d_ff=7, layers=3, vocab=11, max_pos=5, seed=2)
