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
  gguf DIR      --out FILE.gguf: the same weights (of a --shape smollm-135m DIR) as a llama GGUF
                for llama.cpp's llama-bench: F16 matrices, F32 norms, Q and K rows permuted as
                llama.cpp's converter does (tools/hf/gguf_reference.py undoes it), and a dummy
                vocabulary of vocab_size SPM tokens (<unk> <s> </s>, 256 bytes, t<i>): a
                benchmark feeds random ids and never detokenizes

Usage: tools/hf/.venv/bin/python tools/hf/bench_gpt2.py make build/gpt2-small-random
       tools/hf/.venv/bin/python tools/hf/bench_gpt2.py time build/gpt2-small-random --threads 1
       tools/hf/.venv/bin/python tools/hf/bench_gpt2.py gguf build/smollm --out build/smollm.f16.gguf
"""
import argparse
import os
import time

os.environ["HF_HUB_OFFLINE"] = "1"
import torch  # noqa: E402
import transformers  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("what", choices=["make", "time", "gguf"])
ap.add_argument("dir")
ap.add_argument("--prompt", type=int, default=128)
ap.add_argument("--at", type=int, nargs="+", default=[128, 512])
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--repeat", type=int, default=5)
ap.add_argument("--shape", choices=["gpt2-small", "smollm-135m"], default="gpt2-small")
ap.add_argument("--out", help="gguf: the file to write")
a = ap.parse_args()


def write_llama_gguf(src, out):
    """src's LlamaForCausalLM weights as a llama GGUF (see the module's docstring)."""
    import json

    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    for name in ("config.json", "model.safetensors"):
        if not os.path.isfile(os.path.join(src, name)):
            raise SystemExit(f"{src}: no {name} (expected a directory written by `make --shape smollm-135m`)")
    cfg = json.load(open(os.path.join(src, "config.json")))
    if cfg.get("model_type") != "llama":
        raise SystemExit(f"{src}/config.json: model_type {cfg.get('model_type')!r}, expected 'llama'")
    w = load_file(os.path.join(src, "model.safetensors"))
    heads, kv, vocab = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["vocab_size"]

    def permute(t, n):  # llama.cpp's convert_hf_to_gguf permute(): RoPE on adjacent pairs
        return t.reshape(n, 2, t.shape[0] // n // 2, *t.shape[1:]).swapaxes(1, 2).reshape(t.shape)

    def f16(t):
        return np.ascontiguousarray(t.astype(np.float16))

    def f32(t):
        return np.ascontiguousarray(t.astype(np.float32))

    g = gguf.GGUFWriter(out + ".partial", "llama")
    g.add_name(os.path.basename(os.path.normpath(src)))
    g.add_vocab_size(vocab)
    g.add_context_length(cfg["max_position_embeddings"])
    g.add_embedding_length(cfg["hidden_size"])
    g.add_block_count(cfg["num_hidden_layers"])
    g.add_feed_forward_length(cfg["intermediate_size"])
    g.add_head_count(heads)
    g.add_head_count_kv(kv)
    g.add_rope_dimension_count(cfg["hidden_size"] // heads)
    g.add_rope_freq_base(cfg["rope_theta"])
    g.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    g.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    tokens += [f"t{i}" for i in range(vocab - len(tokens))]
    T = gguf.TokenType
    g.add_tokenizer_model("llama")
    g.add_token_list(tokens)
    g.add_token_scores([0.0] * vocab)
    g.add_token_types([T.UNKNOWN, T.CONTROL, T.CONTROL] + [T.BYTE] * 256 + [T.NORMAL] * (vocab - 259))
    g.add_unk_token_id(0)
    g.add_bos_token_id(cfg.get("bos_token_id", 1))
    g.add_eos_token_id(cfg.get("eos_token_id", 2))
    g.add_add_bos_token(False)
    g.add_tensor("token_embd.weight", f16(w["model.embed_tokens.weight"]))
    parts = [("attn_norm", "input_layernorm", f32), ("attn_q", "self_attn.q_proj", f16),
             ("attn_k", "self_attn.k_proj", f16), ("attn_v", "self_attn.v_proj", f16),
             ("attn_output", "self_attn.o_proj", f16), ("ffn_norm", "post_attention_layernorm", f32),
             ("ffn_gate", "mlp.gate_proj", f16), ("ffn_up", "mlp.up_proj", f16), ("ffn_down", "mlp.down_proj", f16)]
    for i in range(cfg["num_hidden_layers"]):
        for name, hf, cast in parts:
            t = w[f"model.layers.{i}.{hf}.weight"]
            if name in ("attn_q", "attn_k"):
                t = permute(t, heads if name == "attn_q" else kv)
            g.add_tensor(f"blk.{i}.{name}.weight", cast(t))
    g.add_tensor("output_norm.weight", f32(w["model.norm.weight"]))
    if not cfg.get("tie_word_embeddings", False):
        g.add_tensor("output.weight", f16(w["lm_head.weight"]))
    g.write_header_to_file()
    g.write_kv_data_to_file()
    g.write_tensors_to_file()
    g.close()
    os.replace(out + ".partial", out)
    print(f"wrote {out}")


if a.what == "gguf":
    if not a.out:
        ap.error("gguf needs --out FILE.gguf")
    write_llama_gguf(a.dir, a.out)
    raise SystemExit

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
