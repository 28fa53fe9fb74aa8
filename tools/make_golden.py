#!/usr/bin/python3
"""Writes tests/golden/torch_ops.json: small inputs and PyTorch's outputs for the
building blocks vkformer's kernels implement, so tests can hold both the CPU
references and the Vulkan kernels to PyTorch itself (torch 1.13, Debian).

Run: /usr/bin/python3 tools/make_golden.py
"""
import json
import math
import os

import torch
import torch.nn.functional as F

torch.manual_seed(0)
out = {"torch_version": torch.__version__}


def t(x):
    return [float(v) for v in x.detach().reshape(-1).tolist()]


# Linear + each activation (nn.Linear weight layout [out, in]).
x = torch.randn(3, 5)
lin = torch.nn.Linear(5, 7)
pre = lin(x)
out["linear"] = {
    "x": t(x), "w": t(lin.weight), "b": t(lin.bias), "M": 3, "N": 7, "K": 5,
    "none": t(pre), "relu": t(F.relu(pre)), "gelu": t(F.gelu(pre)),
    "gelu_tanh": t(F.gelu(pre, approximate="tanh")), "silu": t(F.silu(pre)),
}

# Multi-head self-attention with a key padding mask and a causal mask, batch_first.
B, L, d, h = 2, 5, 8, 2
mha = torch.nn.MultiheadAttention(d, h, batch_first=True).eval()
xa = torch.randn(B, L, d)
pad = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]], dtype=torch.bool)
causal = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
with torch.no_grad():
    y_pad, _ = mha(xa, xa, xa, key_padding_mask=pad, need_weights=False)
    y_both, _ = mha(xa, xa, xa, key_padding_mask=pad, attn_mask=causal, need_weights=False)
out["mha"] = {
    "B": B, "L": L, "d": d, "heads": h, "x": t(xa),
    "in_proj_weight": t(mha.in_proj_weight), "in_proj_bias": t(mha.in_proj_bias),
    "out_proj_weight": t(mha.out_proj.weight), "out_proj_bias": t(mha.out_proj.bias),
    "key_padding": [int(v) for v in pad.reshape(-1).tolist()],
    "out_padding": t(y_pad), "out_padding_causal": t(y_both),
}

# LayerNorm over the last dim, with a residual added first (post-LN).
ln = torch.nn.LayerNorm(7, eps=1e-5)
with torch.no_grad():
    ln.weight.copy_(torch.randn(7))
    ln.bias.copy_(torch.randn(7))
xl, rl = torch.randn(4, 7) * 3 + 5, torch.randn(4, 7)
out["layernorm"] = {"rows": 4, "d": 7, "eps": 1e-5, "x": t(xl), "residual": t(rl),
                    "gamma": t(ln.weight), "beta": t(ln.bias), "y": t(ln(xl + rl))}

# Token embedding × √d plus the paper's sinusoidal positions (the usual PyTorch formula).
V, D, P = 11, 6, 9
emb = torch.nn.Embedding(V, D)
pe = torch.zeros(P, D)
pos = torch.arange(0, P, dtype=torch.float).unsqueeze(1)
div = torch.exp(torch.arange(0, D, 2).float() * (-math.log(10000.0) / D))
pe[:, 0::2] = torch.sin(pos * div)
pe[:, 1::2] = torch.cos(pos * div)
ids = torch.tensor([[1, 4, 10, 0], [3, 3, 7, 2]])
with torch.no_grad():
    ye = emb(ids) * math.sqrt(D) + pe[: ids.shape[1]]
out["embedding"] = {"vocab": V, "d": D, "max_positions": P, "table": t(emb.weight),
                    "ids": [int(v) for v in ids.reshape(-1).tolist()], "batch": 2, "len": 4,
                    "pe": t(pe), "y": t(ye)}

path = os.path.join(os.path.dirname(__file__), "..", "tests", "golden", "torch_ops.json")
with open(path, "w") as f:
    json.dump(out, f, indent=None)
print("wrote", os.path.normpath(path))
