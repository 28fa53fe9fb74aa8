"""GGUF files as models through the CLI: a tiny llama written here with llama.cpp's own
`gguf` package (GGUFWriter; Q8_0 and Q4_1 blocks from gguf.quants.quantize) runs
(generate on ids, tokenize, chat template), and files that are wrong as models each get
one line naming the file and what is wrong, exit 1, nothing on stdout:
an architecture vkformer has no family for, a missing tensor, a tensor of the wrong
shape, a RoPE width other than the head's, a missing metadata key, a truncated file,
and a tokenizer.chat_template that is not there for `generate --chat`.
Llama 3.1's rope_freqs.weight: an F32 GGUF written as llama.cpp's converter writes a
checkpoint with rope_scaling "llama3" (Q and K rows permuted, the factors as a tensor) gives
the logits of the same weights as a Hugging Face directory with that rope_scaling, which
test_llama checks against transformers; without the tensor they differ; an F16 one, or one of
the wrong length, is refused.
(The reader's own refusals, byte by byte, are test_gguf's; SmolLM2 is test_gguf_model's.)
Needs tools/hf/.venv (bash tools/hf/setup-venv.sh). Usage: cli_gguf.py VKFORMER SOURCE_DIR"""
import json
import math
import os
import subprocess
import sys
import tempfile

from hf_venv import run_in_hf_venv  # noqa: E402

vkformer, src = sys.argv[1], sys.argv[2]
run_in_hf_venv(src, "cli_gguf")  # tests/hf_venv.py

import gguf  # noqa: E402
import numpy as np  # noqa: E402
import safetensors.numpy  # noqa: E402

D, FF, HEADS, KV, LAYERS = 64, 96, 4, 2, 2
TOKENS = ["<unk>", "<s>", "</s>"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + [" ", "ab", "abc"]
MERGES = ["a b", "ab c"]
failures = []


def add_tokenizer(w):
    """The tiny byte-level BPE vocabulary (TOKENS, MERGES) with BOS 1 and EOS 2."""
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(TOKENS)
    w.add_token_types([3, 3, 3] + [1] * (len(TOKENS) - 3))
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)


def write(path, arch="llama", skip=(), shapes=None, meta=None, template=True, kinds=None, dequantized=False):
    """A tiny llama GGUF: Q8_0 embedding (tied head), Q4_1 matrices, F32 norms. `kinds`: other
    types by tensor ("attn_v": "Q8_0"); `dequantized`: every block tensor's values as F32."""
    rng = np.random.default_rng(1)
    w = gguf.GGUFWriter(path, arch)
    meta = dict(meta or {})
    keys = {f"{arch}.block_count": LAYERS, f"{arch}.context_length": 64, f"{arch}.embedding_length": D,
            f"{arch}.feed_forward_length": FF, f"{arch}.attention.head_count": HEADS,
            f"{arch}.attention.head_count_kv": KV, f"{arch}.rope.dimension_count": D // HEADS}
    keys.update({k: v for k, v in meta.items() if v is not None})
    for k, v in keys.items():
        if k in meta and meta[k] is None:
            continue
        w.add_uint32(k, v)
    if f"{arch}.attention.layer_norm_rms_epsilon" not in meta:
        w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_float32(f"{arch}.rope.freq_base", 10000.0)
    add_tokenizer(w)
    if template:
        w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    tensors = {"token_embd.weight": ([len(TOKENS), D], "Q8_0"), "output_norm.weight": ([D], "F32")}
    for i in range(LAYERS):
        b = f"blk.{i}."
        tensors.update({b + "attn_norm.weight": ([D], "F32"), b + "ffn_norm.weight": ([D], "F32"),
                        b + "attn_q.weight": ([D, D], "Q4_1"), b + "attn_k.weight": ([D * KV // HEADS, D], "Q4_1"),
                        b + "attn_v.weight": ([D * KV // HEADS, D], "Q4_1"), b + "attn_output.weight": ([D, D], "Q4_1"),
                        b + "ffn_gate.weight": ([FF, D], "Q4_1"), b + "ffn_up.weight": ([FF, D], "Q4_1"),
                        b + "ffn_down.weight": ([D, FF], "Q8_0")})
    for name, (shape, kind) in tensors.items():
        if name in skip:
            continue
        shape = (shapes or {}).get(name, shape)
        kind = (kinds or {}).get(name.split(".")[-2], kind)
        x = rng.standard_normal(shape).astype(np.float32) * 0.1
        if kind != "F32" and dequantized:
            t = getattr(gguf.GGMLQuantizationType, kind)
            w.add_tensor(name, gguf.quants.dequantize(gguf.quants.quantize(x, t), t).reshape(shape))
        elif kind == "F32":
            w.add_tensor(name, x)
        else:
            t = getattr(gguf.GGMLQuantizationType, kind)
            w.add_tensor(name, gguf.quants.quantize(x, t), raw_shape=gguf.quant_shape_to_byte_shape(x.shape, t),
                         raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# Llama 3.1's scaling on a head of 16 (theta 10000: wavelengths 6.3 to 19869) with an
# original context of 64: one frequency kept, two smoothed, five divided by the factor.
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 64}


def llama3_rope_factors(head_dim, theta, s):
    """What llama.cpp's converter writes as rope_freqs.weight for rope_scaling s: per
    frequency, the number ggml's rope divides it by (1, the factor, or between them)."""
    freqs = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim)
    low_wavelen = s["original_max_position_embeddings"] / s["low_freq_factor"]
    high_wavelen = s["original_max_position_embeddings"] / s["high_freq_factor"]
    out = []
    for f in freqs:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(s["factor"])
        else:
            smooth = (s["original_max_position_embeddings"] / wavelen - s["low_freq_factor"]) / (
                s["high_freq_factor"] - s["low_freq_factor"])
            out.append(1 / ((1 - smooth) / s["factor"] + smooth))
    return np.array(out, dtype=np.float32)


def write_llama3_pair(tmp, factors_dtype="F32", with_factors=True, drop_factors=0):
    """The same random F32 weights as an HF directory with rope_scaling LLAMA3 and as a GGUF
    with rope_freqs.weight: Q and K rows permuted as llama.cpp's converter does (pairs
    (2i, 2i+1) instead of HF's halves), the rest as stored. Returns (hf_dir, gguf_path)."""
    rng = np.random.default_rng(7)
    hd = D // HEADS
    hf = {"model.embed_tokens.weight": [len(TOKENS), D], "model.norm.weight": [D]}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        hf.update({p + "input_layernorm.weight": [D], p + "post_attention_layernorm.weight": [D],
                   p + "self_attn.q_proj.weight": [D, D], p + "self_attn.k_proj.weight": [KV * hd, D],
                   p + "self_attn.v_proj.weight": [KV * hd, D], p + "self_attn.o_proj.weight": [D, D],
                   p + "mlp.gate_proj.weight": [FF, D], p + "mlp.up_proj.weight": [FF, D],
                   p + "mlp.down_proj.weight": [D, FF]})
    hf = {k: (rng.standard_normal(v).astype(np.float32) * (0.3 if len(v) == 2 else 1.0)) for k, v in hf.items()}
    d = os.path.join(tmp, "llama3_hf")
    os.makedirs(d, exist_ok=True)
    safetensors.numpy.save_file(hf, os.path.join(d, "model.safetensors"))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": D,
                   "intermediate_size": FF, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
                   "num_key_value_heads": KV, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
                   "rope_theta": 10000.0, "rope_scaling": LLAMA3, "vocab_size": len(TOKENS),
                   "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2}, f)

    def permute(w, heads):  # llama.cpp's LlamaModel.permute
        return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}
    parts = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for i in range(LAYERS):
        for hp, gp in parts.items():
            names[f"model.layers.{i}.{hp}.weight"] = f"blk.{i}.{gp}.weight"
    path = os.path.join(tmp, "llama3.gguf" if with_factors else "llama3_nofactors.gguf")
    w = gguf.GGUFWriter(path, "llama")
    for k, v in {"block_count": LAYERS, "context_length": 64, "embedding_length": D, "feed_forward_length": FF,
                 "attention.head_count": HEADS, "attention.head_count_kv": KV, "rope.dimension_count": hd}.items():
        w.add_uint32("llama." + k, v)
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_float32("llama.rope.freq_base", 10000.0)
    add_tokenizer(w)
    for k, t in hf.items():
        if k.endswith("q_proj.weight"):
            t = permute(t, HEADS)
        elif k.endswith("k_proj.weight"):
            t = permute(t, KV)
        w.add_tensor(names[k], np.ascontiguousarray(t))
    if with_factors:
        factors = llama3_rope_factors(hd, 10000.0, LLAMA3)[: hd // 2 - drop_factors]
        w.add_tensor("rope_freqs.weight", factors.astype(np.float16 if factors_dtype == "F16" else np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return d, path


def run(*args):
    return subprocess.run([vkformer, *args], capture_output=True, text=True, timeout=300)


def check(what, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what + ("\n" + detail if detail else ""))


def refused(what, args, needle):
    r = run(*args)
    # One error line (the device line that loading prints first is not an error).
    lines = [x for x in r.stderr.strip().splitlines() if not x.startswith("vkformer: device ")]
    check(what, r.returncode == 1 and r.stdout == "" and len(lines) == 1 and needle in lines[0],
          f"exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}, wanted {needle!r}")


with tempfile.TemporaryDirectory() as tmp:
    good = os.path.join(tmp, "tiny.gguf")
    write(good)
    r = run("generate", "--model", good, "--src-ids", "3,4,5", "--max-new-tokens", "4")
    check("a tiny Q4_1/Q8_0 llama GGUF generates", r.returncode == 0 and r.stdout.strip() != "", r.stderr)
    r = run("tokenize", "--model", good, "abcab")
    check("its tokenizer: 'abcab' -> abc ab", r.returncode == 0 and r.stdout.strip() == "31,30",
          r.stdout + r.stderr)
    r = run("generate", "--model", good, "--chat", "abc", "--max-new-tokens", "2")
    check("generate --chat renders tokenizer.chat_template", r.returncode == 0, r.stderr)

    def bad(name, **kw):
        p = os.path.join(tmp, name + ".gguf")
        write(p, **kw)
        return p

    p = bad("arch", arch="gpt2")
    refused("another architecture", ["generate", "--model", p, "--src-ids", "3"],
            f"{p}: general.architecture \"gpt2\" is not supported (llama, qwen2)")
    p = bad("missing", skip=("blk.1.attn_v.weight",))
    refused("a missing tensor (named as transformers names it)", ["generate", "--model", p, "--src-ids", "3"],
            'missing tensor "model.layers.1.self_attn.v_proj.weight"')
    p = bad("shape", shapes={"blk.0.ffn_up.weight": [FF + 32, D]})
    refused("a tensor of the wrong shape", ["generate", "--model", p, "--src-ids", "3"], "has shape")
    p = bad("rope", meta={"llama.rope.dimension_count": 8})
    refused("a RoPE width other than the head's", ["generate", "--model", p, "--src-ids", "3"],
            "llama.rope.dimension_count 8 is not embedding_length / head_count (16)")
    p = bad("nokey", meta={"llama.block_count": None})
    refused("a missing metadata key", ["generate", "--model", p, "--src-ids", "3"], "llama.block_count")
    p = bad("notemplate", template=False)
    refused("no chat template", ["generate", "--model", p, "--chat", "abc"], "has no tokenizer.chat_template")
    # 24 positions, past the original context's shortest smoothed wavelength.
    ids = ",".join(str(3 + (7 * i) % (len(TOKENS) - 3)) for i in range(24))

    def logits(model):
        out = os.path.join(tmp, "logits.npy")
        r = run("forward", "--model", model, "--src-ids", ids, "--out", out)
        return np.load(out).astype(np.float64) if r.returncode == 0 else r.stderr

    hf_dir, g3 = write_llama3_pair(tmp)
    want, got = logits(hf_dir), logits(g3)
    ok = isinstance(want, np.ndarray) and isinstance(got, np.ndarray)
    err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max())) if ok else float("inf")
    check(f"rope_freqs.weight gives rope_scaling llama3's logits (max error {err:.1e} ≤ 1e-4)", err <= 1e-4,
          f"{want}\n{got}")
    _, plain = write_llama3_pair(tmp, with_factors=False)
    other = logits(plain)
    diff = float(np.abs(other - want).max() / max(1.0, np.abs(want).max())) if ok else 0.0
    check(f"without rope_freqs.weight the logits differ ({diff:.1e} > 1e-2)", diff > 1e-2)
    _, f16 = write_llama3_pair(tmp, factors_dtype="F16")
    refused("rope_freqs.weight in F16", ["generate", "--model", f16, "--src-ids", "3"],
            f"{f16}: tensor \"rope_freqs.weight\" (Llama 3.1's RoPE frequency factors) is F16, expected F32 [8]")
    _, short = write_llama3_pair(tmp, drop_factors=1)
    refused("rope_freqs.weight of 7 factors for a head of 16", ["generate", "--model", short, "--src-ids", "3"],
            'tensor "rope_freqs.weight" has shape [7], expected [8] = [head_dim / 2]')
    # Q4_K_M-like mixtures: a layer's V in another block format than Q and K. They stay apart,
    # each as stored (not dequantized into an f32 stack), and give the logits of the same
    # values stored as F32.
    mixed, plain32 = os.path.join(tmp, "mixed.gguf"), os.path.join(tmp, "mixed-f32.gguf")
    write(mixed, kinds={"attn_v": "Q8_0"})
    write(plain32, kinds={"attn_v": "Q8_0"}, dequantized=True)
    want, got = logits(plain32), logits(mixed)
    ok = isinstance(want, np.ndarray) and isinstance(got, np.ndarray)
    err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max())) if ok else float("inf")
    check(f"Q4_1 Q/K beside a Q8_0 V: the logits of the same values in F32 (max error {err:.1e} ≤ 1e-5)",
          err <= 1e-5, f"{want}\n{got}")
    bj = os.path.join(tmp, "mixed.json")
    r = run("bench", "model", "--model", mixed, "--batch", "1", "--src-len", "4", "--tgt-len", "0", "--repeat", "1",
            "--json", bj)
    stored = json.load(open(bj)).get("weight_bytes", {}) if r.returncode == 0 else {}
    check(f"... stored as blocks, not an f32 stack: {stored}", r.returncode == 0 and
          stored.get("f32", 0) < D * D * 4 and "q8_0" in stored and "q4_1" in stored, r.stderr)
    cut = os.path.join(tmp, "cut.gguf")
    with open(good, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[: os.path.getsize(good) // 2])
    refused("a truncated file", ["generate", "--model", cut, "--src-ids", "3"], cut + ":")

if failures:
    sys.exit(f"cli_gguf: {len(failures)} failed:\n" + "\n".join(failures))
print("cli_gguf: all checks passed")
