#!/usr/bin/env python3
"""PyTorch's side of docs/performance.md's T5 row: HF T5ForConditionalGeneration.generate
(greedy, use_cache, exactly 32 new tokens) on a 32-token random source, fp32, per thread count.
Usage: tools/hf/.venv/bin/python tools/hf/bench_t5.py MODEL_DIR [THREADS...]"""
import statistics
import sys
import time

import torch
from transformers import T5ForConditionalGeneration

model = T5ForConditionalGeneration.from_pretrained(sys.argv[1]).eval()
src = torch.randint(2, model.config.vocab_size, (1, 32), generator=torch.Generator().manual_seed(0))
for threads in [int(t) for t in sys.argv[2:]] or [1, 2]:
    torch.set_num_threads(threads)
    times = []
    with torch.no_grad():
        for _ in range(4):
            t0 = time.perf_counter()
            out = model.generate(src, decoder_start_token_id=model.config.pad_token_id, do_sample=False, num_beams=1, use_cache=True, min_new_tokens=32,
                                 max_new_tokens=32)
            times.append(time.perf_counter() - t0)
    assert out.shape[1] == 33, out.shape
    print(f"torch {torch.__version__}, {threads} thread(s): encoder + 32 decode steps "
          f"{statistics.median(times[1:]) * 1e3:.1f} ms (median of 3 after a warm-up)")
