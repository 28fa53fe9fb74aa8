#!/usr/bin/env python3
"""sentence-transformers' time for one batch of B sequences of L tokens (random ids, no
tokenization), as vkformer's `embed --ids` measures it: docs/performance.md compares the two.

Usage: tools/hf/.venv/bin/python tools/hf/bench_sentence_transformers.py DIR [--batch 32] [--len 128]
       [--threads 1] [--repeat 5]   (prints the median ms and sentences/s)
"""
import argparse
import os
import time

os.environ["HF_HUB_OFFLINE"] = "1"
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--batch", type=int, default=32)
ap.add_argument("--len", type=int, default=128)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--repeat", type=int, default=5)
a = ap.parse_args()
torch.set_num_threads(a.threads)
m = SentenceTransformer(a.dir, device="cpu").eval()
g = torch.Generator().manual_seed(0)
ids = torch.randint(1000, 30000, (a.batch, a.len), generator=g)
ids[:, 0], ids[:, -1] = 101, 102
features = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
times = []
with torch.no_grad():
    for _ in range(a.repeat + 1):
        t0 = time.perf_counter()
        m(dict(features))
        times.append((time.perf_counter() - t0) * 1000)
ms = sorted(times[1:])[len(times[1:]) // 2]
print(f"sentence-transformers {a.threads} thread(s): batch {a.batch} x {a.len} tokens: "
      f"{ms:.1f} ms median of {a.repeat} (first {times[0]:.1f} ms), {a.batch / ms * 1000:.1f} sentences/s")
