#!/usr/bin/python3
"""`vkformer forward` end to end: ids in on the command line, an .npy out that
NumPy reads, equal to PyTorch's output (tests/models/*/golden.json) at valid
positions within the forward bound, 1e-4 · max(1, |ref|max)."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

vkf, models = sys.argv[1], sys.argv[2]
failures = 0
for name in ["encdec_preln_gelu", "decoder_only", "encoder_learned"]:
    g = json.load(open(os.path.join(models, name, "golden.json")))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.npy")
        cmd = [vkf, "forward", "--model", os.path.join(models, name), "--out", out]
        for s in g["src"]:
            cmd += ["--src-ids", ",".join(map(str, s))]
        for t in g.get("tgt", []):
            cmd += ["--tgt-ids", ",".join(map(str, t))]
        subprocess.run(cmd, check=True)
        y = np.load(out)
    seqs = g.get("tgt", g["src"])
    assert y.dtype == np.float32 and y.shape == (len(seqs), max(map(len, seqs)), g["dim"]), y.shape
    err, scale = 0.0, 1.0
    for b, s in enumerate(seqs):
        want = np.array(g["forward"][b], dtype=np.float64).reshape(len(s), g["dim"])
        err = max(err, float(np.abs(y[b, : len(s)] - want).max()))
        scale = max(scale, float(np.abs(want).max()))
        if len(s) < y.shape[1]:
            assert not y[b, len(s):].any(), "padded positions must be zero"
    ok = err / scale <= 1e-4
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'}: {name} {y.shape} max error {err / scale:.2e}")
print(f"{3 - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
