"""GGUF files as models through the CLI: a tiny llama written here with llama.cpp's own
`gguf` package (GGUFWriter; Q8_0 and Q4_1 blocks from gguf.quants.quantize) runs
(generate on ids, tokenize, chat template), and files that are wrong as models each get
one line naming the file and what is wrong, exit 1, nothing on stdout:
an architecture vkformer has no family for, a missing tensor, a tensor of the wrong
shape, a RoPE width other than the head's, a missing metadata key, a truncated file,
and a tokenizer.chat_template that is not there for `generate --chat`.
(The reader's own refusals, byte by byte, are test_gguf's; SmolLM2 is test_gguf_model's.)
Needs tools/hf/.venv (bash tools/hf/setup-venv.sh). Usage: cli_gguf.py VKFORMER SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

vkformer, src = sys.argv[1], sys.argv[2]
venv = os.path.join(src, "tools", "hf", ".venv")
if os.path.realpath(sys.prefix) != os.path.realpath(venv):
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        sys.exit("cli_gguf: the HF reference venv is missing: run `bash tools/hf/setup-venv.sh`")
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])

import gguf  # noqa: E402
import numpy as np  # noqa: E402

D, FF, HEADS, KV, LAYERS = 64, 96, 4, 2, 2
TOKENS = ["<unk>", "<s>", "</s>"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + [" ", "ab", "abc"]
MERGES = ["a b", "ab c"]
failures = []


def write(path, arch="llama", skip=(), shapes=None, meta=None, template=True):
    """A tiny llama GGUF: Q8_0 embedding (tied head), Q4_1 matrices, F32 norms."""
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
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(TOKENS)
    w.add_token_types([3, 3, 3] + [1] * (len(TOKENS) - 3))
    w.add_token_merges(MERGES)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
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
        x = rng.standard_normal(shape).astype(np.float32) * 0.1
        if kind == "F32":
            w.add_tensor(name, x)
        else:
            t = getattr(gguf.GGMLQuantizationType, kind)
            w.add_tensor(name, gguf.quants.quantize(x, t), raw_shape=gguf.quant_shape_to_byte_shape(x.shape, t),
                         raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


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
    cut = os.path.join(tmp, "cut.gguf")
    with open(good, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[: os.path.getsize(good) // 2])
    refused("a truncated file", ["generate", "--model", cut, "--src-ids", "3"], cut + ":")

if failures:
    sys.exit(f"cli_gguf: {len(failures)} failed:\n" + "\n".join(failures))
print("cli_gguf: all checks passed")
