#!/usr/bin/env python3
"""Decoder speed, PyTorch's side of docs/performance.md's tables (vkformer's is
`vkformer bench model`), on a model of a real shape with random weights.

  make DIR      --shape gpt2-small (the default): GPT2LMHeadModel(GPT2Config()) (12 layers,
                768, 12 heads, vocab 50257, n_positions 1024, seed 0; 498 MB);
                --shape smollm-135m: LlamaForCausalLM of SmolLM-135M's shape (30 layers, 576,
                9 heads / 3 KV heads, d_ff 1536, vocab 49152, tied, 2048 positions) in fp16
                (269 MB); save_pretrained, as HF saves them
  time DIR      transformers' model (fp32 compute) with its own KV cache (past_key_values):
                prefill of --prompt tokens (one forward pass that fills the cache), and one
                decode step (a single token over a cache of P positions) at each --at position;
                median of --repeat runs, --threads torch threads

Usage: tools/hf/.venv/bin/python tools/hf/bench_gpt2.py make build/gpt2-small-random
       tools/hf/.venv/bin/python tools/hf/bench_gpt2.py time build/gpt2-small-random --threads 1
"""
import argparse
import os
import time

os.environ["HF_HUB_OFFLINE"] = "1"
import torch  # noqa: E402
import transformers  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("what", choices=["make", "time"])
ap.add_argument("dir")
ap.add_argument("--prompt", type=int, default=128)
ap.add_argument("--at", type=int, nargs="+", default=[128, 512])
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--repeat", type=int, default=5)
ap.add_argument("--shape", choices=["gpt2-small", "smollm-135m"], default="gpt2-small")
a = ap.parse_args()

if a.what == "make":
    torch.manual_seed(0)
    if a.shape == "gpt2-small":
        transformers.GPT2LMHeadModel(transformers.GPT2Config()).save_pretrained(a.dir)
    else:
        cfg = transformers.LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                                       num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                                       max_position_embeddings=2048, tie_word_embeddings=True, rope_theta=10000.0,
                                       bos_token_id=1, eos_token_id=2)
        transformers.LlamaForCausalLM(cfg).half().save_pretrained(a.dir)
    print(f"wrote {a.dir}")
    raise SystemExit

torch.set_num_threads(a.threads)
m = transformers.AutoModelForCausalLM.from_pretrained(a.dir, torch_dtype=torch.float32).eval()
vocab = m.config.vocab_size
g = torch.Generator().manual_seed(0)


def median_ms(fn):
    times = []
    for _ in range(a.repeat + 1):  # the first run warms up and is dropped
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return sorted(times[1:])[len(times[1:]) // 2]


with torch.no_grad():
    prompt = torch.randint(0, vocab, (1, a.prompt), generator=g)
    ms = median_ms(lambda: m(prompt, use_cache=True))
    print(f"pytorch {a.threads} thread(s): prefill {a.prompt} tokens {ms:.1f} ms, {a.prompt / ms * 1000:.1f} tokens/s")
    for pos in a.at:
        past = m(torch.randint(0, vocab, (1, pos), generator=g), use_cache=True).past_key_values
        token = torch.randint(0, vocab, (1, 1), generator=g)
        # The same cache each run: the step reads P cached positions and returns a new cache.
        ms = median_ms(lambda: m(token, past_key_values=past, use_cache=True))
        print(f"pytorch {a.threads} thread(s): decode step at position {pos}: {ms:.2f} ms, {1000 / ms:.1f} tokens/s")
