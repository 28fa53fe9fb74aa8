#!/usr/bin/env python3
"""GGUF block formats: vkformer's host reference (ref::dequantize, ref::quantize,
src/reference/quant.cpp) against llama.cpp's own gguf package (gguf==0.19.0,
tools/hf/requirements.txt), bit for bit in fp32.

Writes random blocks of q8_0, q4_0, q4_1, q4_k and q6_k (every byte random,
their scales drawn from fp16's extremes: max, smallest normal, subnormals,
zeros, negatives, infinity) with gguf.quants.dequantize's values, and float rows
(several magnitudes, zero and constant blocks, one outlier, a negative extreme)
with gguf.quants.quantize's blocks for q8_0, q4_0 and q4_1; then runs
tests/quant_check.cpp (the executable given), which compares.

Usage: quant_check.py QUANT_CHECK_EXE SOURCE_DIR. Needs tools/hf/.venv
(`bash tools/hf/setup-venv.sh`); another python with gguf may be named by
VKF_QUANT_PYTHON.
"""
import os
import subprocess
import sys
import tempfile

exe, src = sys.argv[1], sys.argv[2]
venv = os.path.join(src, "tools", "hf", ".venv")
python = os.environ.get("VKF_QUANT_PYTHON") or os.path.join(venv, "bin", "python")
if os.environ.get("VKF_QUANT_CHECK_CHILD") != "1":
    if not os.path.exists(python):
        sys.exit("quant_check: the HF reference venv is missing: run `bash tools/hf/setup-venv.sh`")
    env = dict(os.environ, VKF_QUANT_CHECK_CHILD="1")
    sys.exit(subprocess.call([python, os.path.abspath(__file__)] + sys.argv[1:], env=env))

import numpy as np  # noqa: E402

try:
    from gguf import GGMLQuantizationType as Q  # noqa: E402
    from gguf import quants  # noqa: E402
except ImportError:
    sys.exit("quant_check: the python package gguf is missing: run `bash tools/hf/setup-venv.sh` "
             "(tools/hf/requirements.txt pins gguf==0.19.0)")

FORMATS = {  # name: (type, values per block, bytes per block, offsets of fp16 scale fields)
    "q8_0": (Q.Q8_0, 32, 34, [0]),
    "q4_0": (Q.Q4_0, 32, 18, [0]),
    "q4_1": (Q.Q4_1, 32, 20, [0, 2]),
    "q4_k": (Q.Q4_K, 256, 144, [0, 2]),
    "q6_k": (Q.Q6_K, 256, 210, [208]),
}
EXTREME = [0x7BFF, 0xFBFF, 0x0400, 0x8400, 0x0001, 0x8001, 0x03FF, 0x0000, 0x8000, 0x3C00,
           0xBC00, 0x7C00, 0x1234, 0xA5A5]
rng = np.random.default_rng(27)
out = tempfile.mkdtemp(prefix="vkf_quant_")

for name, (qt, bv, bb, scale_at) in FORMATS.items():
    n_blocks = 300
    blocks = rng.integers(0, 256, size=(n_blocks, bb), dtype=np.uint8)
    blocks[0, :] = 0x00
    blocks[1, :] = 0xFF
    for b in range(n_blocks):
        for k, at in enumerate(scale_at):
            # Half the blocks take extreme scales, in every pairing; the rest random normal ones.
            if b % 2 == 0:
                h = EXTREME[(b // 2 + 5 * k) % len(EXTREME)]
            else:
                h = int(np.float16(rng.uniform(-2.0, 2.0) * 10.0 ** rng.integers(-4, 2)).view(np.uint16))
            blocks[b, at:at + 2] = np.array([h], dtype="<u2").view(np.uint8)
    with np.errstate(all="ignore"):
        deq = quants.dequantize(blocks.reshape(-1), qt).astype(np.float32).reshape(-1)
    assert deq.size == n_blocks * bv
    blocks.tofile(os.path.join(out, name + ".blocks"))
    deq.tofile(os.path.join(out, name + ".deq"))

    if name in ("q8_0", "q4_0", "q4_1"):
        rows = []
        for scale in (1e-3, 0.05, 1.0, 30.0, 1e3, 6e4):
            rows.append(rng.standard_normal(32 * 40) * scale)
        rows.append(rng.uniform(-1, 1, 32 * 40))
        special = np.zeros((6, 32))
        special[1, :] = 0.75                      # constant
        special[2, :] = -3.0                      # constant negative
        special[3, :] = rng.standard_normal(32)
        special[3, 7] = 100.0                     # one outlier
        special[4, :] = rng.uniform(0, 1, 32)
        special[4, 30] = -5.0                     # the extreme is negative
        special[5, :] = np.arange(32) - 16.0      # exact grid
        rows.append(special.reshape(-1))
        x = np.concatenate(rows).astype(np.float32)
        with np.errstate(all="ignore"):
            q = quants.quantize(x.reshape(-1, 32), qt)
        x.tofile(os.path.join(out, name + ".rows"))
        np.asarray(q, dtype=np.uint8).reshape(-1).tofile(os.path.join(out, name + ".quant"))

r = subprocess.run([exe, out])
for f in os.listdir(out):
    os.remove(os.path.join(out, f))
os.rmdir(out)
sys.exit(r.returncode)
