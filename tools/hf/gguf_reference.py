"""The float64 reference for a Llama-architecture GGUF file (tests/test_gguf_model.cpp):
its weights dequantized by llama.cpp's own Python package (gguf.quants.dequantize),
Q and K un-permuted (llama.cpp's converter permutes their rows so that RoPE rotates
adjacent pairs; HF rotates halves), loaded into transformers 4.44's LlamaForCausalLM
in float64 with eager attention.

    tools/hf/.venv/bin/python tools/hf/gguf_reference.py FILE.gguf OUT_DIR

Writes OUT_DIR/golden.json ("gguf": the file's absolute path),
  "texts": each prompt's text (chat ones rendered with the file's own chat_template by
           transformers' apply_chat_template), "ids": its ids (HF tokenizers from the
           file's vocabulary and merges, as transformers' GGUF loading builds them,
           special tokens parsed, no BOS: tokenizer.ggml.add_bos_token is false),
  "greedy": generate(do_sample=False, max_new_tokens=GREEDY_TOKENS), cut before EOS,
  "max_new_tokens": GREEDY_TOKENS,
  "greedy_text": each greedy run decoded by that tokenizer (skip_special_tokens: what a
           chat reply's "content" holds; tests/cli_serve_gguf.py compares /v1/chat/completions),
  "greedy_margins": each run's smallest top-1 − top-2 logit gap (a near-tie shows here),
  "greedy_margin": the smallest of them,
  "logits": {"file": "logits_K.f32", "shape": [T, V]} per prompt (little-endian float32,
           every position), "eos", "vocab_size",
and the logits files. Takes ~1 min on 2 cores."""
import json
import os
import sys

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

GREEDY_TOKENS = 16
TEXTS = ["The capital of France is", "def fibonacci(n):\n    ", "1, 2, 3, 4, 5,"]
CHATS = [[{"role": "user", "content": "What is the capital of France? Answer in one word."}],
         [{"role": "system", "content": "You are a terse assistant."},
          {"role": "user", "content": "Name three colours."}]]


def field(r, key):
    return r.fields[key].contents()


def unpermute(w, heads):
    """Inverse of llama.cpp's convert_hf_to_gguf permute(): rows back to HF's order."""
    rows = w.shape[0]
    return w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load(path):
    r = GGUFReader(path)
    arch = field(r, "general.architecture")
    if arch != "llama":
        sys.exit(f"{path}: general.architecture {arch!r}; this reference reads llama")
    heads, kv = field(r, "llama.attention.head_count"), field(r, "llama.attention.head_count_kv")
    cfg = LlamaConfig(
        vocab_size=len(r.fields["tokenizer.ggml.tokens"].data), hidden_size=field(r, "llama.embedding_length"),
        intermediate_size=field(r, "llama.feed_forward_length"), num_hidden_layers=field(r, "llama.block_count"),
        num_attention_heads=heads, num_key_value_heads=kv, max_position_embeddings=field(r, "llama.context_length"),
        rms_norm_eps=float(np.float32(field(r, "llama.attention.layer_norm_rms_epsilon"))),
        rope_theta=float(field(r, "llama.rope.freq_base")), bos_token_id=field(r, "tokenizer.ggml.bos_token_id"),
        eos_token_id=field(r, "tokenizer.ggml.eos_token_id"), attn_implementation="eager",
        tie_word_embeddings="output.weight" not in {t.name for t in r.tensors})
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    per_block = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
                 "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
                 "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                 "ffn_down": "mlp.down_proj"}
    state = {}
    for t in r.tensors:
        w = dequantize(t.data, t.tensor_type).astype(np.float64)
        w = w.reshape([int(n) for n in reversed(t.shape)])  # GGUF lists dims innermost first
        if t.name in names:
            state[names[t.name]] = w
            continue
        _, block, part, kind = t.name.split(".")
        if part == "attn_q":
            w = unpermute(w, heads)
        elif part == "attn_k":
            w = unpermute(w, kv)
        state[f"model.layers.{block}.{per_block[part]}.{kind}"] = w
    model = LlamaForCausalLM(cfg).double().eval()
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
    missing = [m for m in missing if m != "lm_head.weight" or not cfg.tie_word_embeddings]
    if missing or unexpected:
        sys.exit(f"{path}: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return r, model


def main():
    path, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    r, model = load(path)
    tok = AutoTokenizer.from_pretrained(os.path.dirname(path) or ".", gguf_file=os.path.basename(path))
    template = field(r, "tokenizer.chat_template")
    texts = TEXTS + [tok.apply_chat_template(c, chat_template=template, tokenize=False, add_generation_prompt=True)
                     for c in CHATS]
    eos = model.config.eos_token_id
    g = {"gguf": os.path.abspath(path), "texts": texts, "chats": CHATS, "ids": [], "greedy": [], "logits": [], "eos": eos,
         "vocab_size": model.config.vocab_size, "max_new_tokens": GREEDY_TOKENS, "greedy_text": [], "greedy_margins": []}
    torch.set_num_threads(os.cpu_count() or 1)
    with torch.no_grad():
        for k, text in enumerate(texts):
            ids = tok(text, add_special_tokens=False)["input_ids"]
            x = torch.tensor([ids])
            logits = model(x).logits[0].float().numpy()
            name = f"logits_{k}.f32"
            logits.astype("<f4").tofile(os.path.join(out, name))
            g["logits"].append({"file": name, "shape": list(logits.shape)})
            gen = model.generate(x, max_new_tokens=GREEDY_TOKENS, do_sample=False, eos_token_id=eos,
                                 pad_token_id=eos, output_scores=True, return_dict_in_generate=True)
            new = gen.sequences[0, len(ids):].tolist()
            new = new[:new.index(eos)] if eos in new else new
            tops = [torch.topk(s[0], 2).values for s in gen.scores]
            g["greedy_margins"].append(min(float(top[0] - top[1]) for top in tops))
            g["ids"].append(ids)
            g["greedy"].append(new)
            g["greedy_text"].append(tok.decode(new, skip_special_tokens=True))
            print(f"{k}: {len(ids)} ids, greedy {tok.decode(new)!r}")
    g["greedy_margin"] = min(g["greedy_margins"])
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(g, f, indent=1)


if __name__ == "__main__":
    main()
