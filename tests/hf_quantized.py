#!/usr/bin/python3
"""Quantized at load (--precision q8_0 / q4_0 / q4_1), every Hugging Face family.

For tiny random models made here with transformers' own classes (GPT-2, T5, BART, BERT,
Llama; widths that are whole blocks of 32):
- every linear layer's matrix is stored in the block format: the device bytes that
  `bench model --json` reports for it equal the blocks of every nn.Linear / Conv1D
  weight of the PyTorch model that is not tied to an embedding (found from the
  modules, not from vkformer's weight maps);
- `vkformer forward` equals the same model in PyTorch with those matrices through
  gguf's quantize + dequantize (llama.cpp's own package) and its other parameters
  rounded to fp16, as vkformer stores them, within 1e-4 of the largest output;
- `vkformer quantize` writes those matrices once, as U8 rows of gguf.quants.quantize's
  bytes (named in __metadata__), and `forward` on its directory equals `forward` on the
  original quantized at load, bit for bit; a Llama F16 GGUF quantized to a q8_0 GGUF keeps
  every metadata key (general.file_type set to MOSTLY_Q8_0) and tensor, its matrices =
  gguf.quants.quantize, and loads to the same bits. Refusals: one line, exit 1 (2), nothing written.

Usage: hf_quantized.py VKFORMER ROOT   (re-runs itself under tools/hf/.venv's python)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from hf_venv import run_in_hf_venv  # noqa: E402

os.environ["HF_HUB_OFFLINE"] = "1"
vkformer, root = sys.argv[1], sys.argv[2]
run_in_hf_venv(root, "hf_quantized")  # tests/hf_venv.py

import gguf  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers as tf  # noqa: E402
from gguf import GGMLQuantizationType  # noqa: E402
from gguf.quants import dequantize, quantize  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers.pytorch_utils import Conv1D  # noqa: E402

BLOCK_BYTES = {"q8_0": 34, "q4_0": 18, "q4_1": 20}  # per 32 values (GGUF's layouts)
failures = []
tmp = tempfile.mkdtemp(prefix="vkf-hf-quantized-")


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)
    return ok


def models():
    """(name, model, src ids, target ids or None): tiny, random, widths in whole blocks."""
    torch.manual_seed(0)
    yield "gpt2", tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=96, n_embd=64, n_layer=2, n_head=2, n_positions=32,
                                                    bos_token_id=95, eos_token_id=95)), \
        [5, 17, 42, 8, 90, 3], None
    yield "t5", tf.T5ForConditionalGeneration(tf.T5Config(
        vocab_size=96, d_model=64, d_kv=16, num_heads=4, d_ff=96, num_layers=2, feed_forward_proj="gated-gelu",
        tie_word_embeddings=False, decoder_start_token_id=0)), [5, 17, 42, 8, 1], [0, 7, 33]
    yield "bart", tf.BartForConditionalGeneration(tf.BartConfig(
        vocab_size=96, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=32)), \
        [0, 5, 17, 42, 8, 2], [2, 0, 7, 33]
    yield "bert", tf.BertForMaskedLM(tf.BertConfig(
        vocab_size=96, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=80, tie_word_embeddings=False)), [2, 5, 17, 42, 8, 3], None
    yield "llama", tf.LlamaForCausalLM(tf.LlamaConfig(  # 320: room for the GGUF's byte tokens (below)
        vocab_size=320, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=32, tie_word_embeddings=False)), [1, 5, 17, 42, 8], None


def matrices(model):
    """The weight of every nn.Linear / Conv1D not tied to an embedding: (parameter, stored [in, out])."""
    embeddings = {m.weight.data_ptr() for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    found = {}
    for m in model.modules():
        if isinstance(m, (torch.nn.Linear, Conv1D)) and m.weight.data_ptr() not in embeddings:
            found[m.weight.data_ptr()] = (m.weight, isinstance(m, Conv1D))
    return list(found.values())


def same_rounding(model, fmt):
    """The model as vkformer stores it under --precision FMT: the matrices through gguf's
    quantize + dequantize (rows of [out, in], as nn.Linear holds them), the rest fp16."""
    qt = GGMLQuantizationType[fmt.upper()]
    mats = {p.data_ptr(): conv for p, conv in matrices(model)}
    with torch.no_grad():
        for p in model.parameters():
            if p.data_ptr() in mats:
                w = p.detach().numpy().astype(np.float32)
                w = w.T if mats[p.data_ptr()] else w  # Conv1D stores [in, out]
                r = dequantize(quantize(np.ascontiguousarray(w), qt), qt).reshape(w.shape)
                p.copy_(torch.from_numpy(np.ascontiguousarray(r.T if mats[p.data_ptr()] else r)))
            else:
                p.copy_(p.half().float())
    return model


def run(args):
    return subprocess.run([vkformer, "-q"] + args, capture_output=True, text=True, stdin=subprocess.DEVNULL)


for name, model, src, tgt in models():
    model.eval()
    d = os.path.join(tmp, name)
    model.save_pretrained(d)
    values = sum(p.numel() for p, _ in matrices(model))
    for fmt in ("q8_0", "q4_1") if name == "gpt2" else ("q8_0",):
        what = f"{name} {fmt}"
        # The bytes stored in the block format: every matrix, and nothing else.
        out = os.path.join(tmp, f"{name}-{fmt}.json")
        decodes = ["--tgt-len", "2" if tgt else "0"] if name != "bert" else []
        r = run(["bench", "model", "--model", d, "--precision", fmt, "--batch", "1", "--src-len", "4", "--repeat", "1",
                 "--json", out] + decodes)
        if not check(r.returncode == 0, f"{what}: bench model runs ({r.stderr.strip()[-300:]})"):
            continue
        got = json.load(open(out)).get("weight_bytes", {})
        want = values // 32 * BLOCK_BYTES[fmt]
        check(got.get(fmt) == want, f"{what}: {got.get(fmt)} bytes stored in {fmt} = the {values} values of the "
                                    f"{len(matrices(model))} linear matrices in blocks ({want}); all: {got}")
        # The output: the same rounding in PyTorch.
        npy = os.path.join(tmp, f"{name}-{fmt}.npy")
        args = ["forward", "--model", d, "--precision", fmt, "--out", npy, "--src-ids", ",".join(map(str, src))]
        if tgt:
            args += ["--tgt-ids", ",".join(map(str, tgt))]
        r = run(args)
        if not check(r.returncode == 0, f"{what}: forward runs ({r.stderr.strip()[-300:]})"):
            continue
        ref_model = same_rounding(type(model).from_pretrained(d).eval(), fmt)
        with torch.no_grad():
            ids = torch.tensor([src])
            kw = {"decoder_input_ids": torch.tensor([tgt])} if tgt else {}
            ref = ref_model(input_ids=ids, **kw).logits[0].double().numpy()
        vk = np.load(npy)[0].astype(np.float64)
        err = np.abs(vk - ref).max() / max(1.0, np.abs(ref).max()) if vk.shape == ref.shape else float("inf")
        check(err <= 1e-4, f"{what}: logits {vk.shape} = PyTorch with the same rounding {ref.shape}: "
                           f"max error {err:.2e} of max(1, |ref|) (<= 1e-4)")

        # `vkformer quantize`: the same blocks written once, loaded as stored.
        q = os.path.join(tmp, f"{name}-{fmt}-quantized")
        r = run(["quantize", d, q, "--type", fmt])
        if not check(r.returncode == 0 and os.path.exists(os.path.join(q, "config.json")),
                     f"{what}: quantize writes a model directory ({(r.stdout + r.stderr).strip()[-300:]})"):
            continue
        with safe_open(os.path.join(q, "model.safetensors"), "np") as f:
            meta = f.metadata()
            blocks = {k[len("vkformer.format."):]: v for k, v in meta.items() if k.startswith("vkformer.format.")}
            names = {n for n, p in model.named_parameters() if p.data_ptr() in {m.data_ptr() for m, _ in matrices(model)}}
            check(set(blocks) == names and set(blocks.values()) == {fmt.upper()},
                  f"{what}: quantize stores the {len(names)} linear matrices in {fmt} ({len(blocks)} named)")
            qt = GGMLQuantizationType[fmt.upper()]
            exact = 0
            for n, p in model.named_parameters():
                if n in blocks:
                    w = p.detach().numpy().astype(np.float32)
                    w = w.T if isinstance(model.get_submodule(n.rsplit(".", 1)[0]), Conv1D) else w
                    exact += np.array_equal(f.get_tensor(n), quantize(np.ascontiguousarray(w), qt).reshape(w.shape[0], -1))
            check(exact == len(blocks), f"{what}: {exact} of {len(blocks)} matrices' bytes = gguf.quants.quantize's")
        quant_npy = os.path.join(tmp, f"{name}-{fmt}-quantized.npy")
        r = run(args[:2] + [q] + args[3:6] + [quant_npy] + args[7:])
        check(r.returncode == 0 and np.array_equal(np.load(quant_npy), np.load(npy)),
              f"{what}: forward on the quantized directory = on the original quantized at load, bit for bit")

# A GGUF file in, a GGUF file out (as llama.cpp's llama-quantize): the tiny Llama as an F16 GGUF.
f16_gguf, q_gguf = os.path.join(tmp, "llama-f16.gguf"), os.path.join(tmp, "llama-q8_0.gguf")
subprocess.run([sys.executable, os.path.join(root, "tools", "hf", "bench_gpt2.py"), "gguf", os.path.join(tmp, "llama"),
                "--out", f16_gguf], check=True, capture_output=True)
r = run(["quantize", f16_gguf, q_gguf, "--type", "q8_0"])
if check(r.returncode == 0, f"quantize llama F16 GGUF -> q8_0 GGUF ({(r.stdout + r.stderr).strip()[-300:]})"):
    a, b = gguf.GGUFReader(f16_gguf), gguf.GGUFReader(q_gguf)
    fields = lambda g: {k: [bytes(p) for p in f.parts] for k, f in g.fields.items() if not k.startswith("GGUF.")}
    fa, fb = fields(a), fields(b)
    check(set(fa) == set(fb) and all(fa[k] == fb[k] for k in fa if k != "general.file_type") and
          int(b.fields["general.file_type"].parts[-1][0]) == 7,
          f"q8_0 GGUF: the {len(fa)} metadata keys as in the F16 file, general.file_type 7 (MOSTLY_Q8_0)")
    matrices = [t for t in a.tensors if t.name.startswith("blk.") and "norm" not in t.name] + \
        [t for t in a.tensors if t.name == "output.weight"]
    out = {t.name: t for t in b.tensors}
    same = sum(out[t.name].tensor_type == GGMLQuantizationType.Q8_0 and
               np.array_equal(np.asarray(out[t.name].data).reshape(-1),
                              quantize(np.asarray(t.data).astype(np.float32), GGMLQuantizationType.Q8_0).reshape(-1))
               for t in matrices)
    kept = sum(out[t.name].tensor_type == t.tensor_type and np.array_equal(out[t.name].data, t.data)
               for t in a.tensors if t not in matrices)
    check(same == len(matrices) and kept == len(a.tensors) - len(matrices),
          f"q8_0 GGUF: {same} of {len(matrices)} matrices = gguf.quants.quantize, {kept} other tensors as stored")
    x, y = os.path.join(tmp, "gguf-q.npy"), os.path.join(tmp, "gguf-f16.npy")
    rx = run(["forward", "--model", q_gguf, "--precision", "q8_0", "--src-ids", "1,5,17,42", "--out", x])
    ry = run(["forward", "--model", f16_gguf, "--precision", "q8_0", "--src-ids", "1,5,17,42", "--out", y])
    check(rx.returncode == 0 and ry.returncode == 0 and np.array_equal(np.load(x), np.load(y)),
          "forward on the q8_0 GGUF = on the F16 GGUF quantized at load, bit for bit")

# Refusals: one line, exit 1 (2 for usage), nothing written.
out = os.path.join(tmp, "refused")
hf = os.environ.get("VKF_HF_MODELS") or os.path.join(root, "build", "hf-models")
for args, code, needle, what in (
        (["quantize", os.path.join(tmp, "gpt2"), os.path.join(tmp, "gpt2"), "--type", "q8_0"], 1, "already exists",
         "an existing output"),
        (["quantize", os.path.join(tmp, "gpt2"), out, "--type", "f16"], 2, "--type must be", "a float type"),
        (["quantize", os.path.join(hf, "gpt2_lm"), out, "--type", "q4_0"], 1, "blocks of 32 values",
         "rows of 45 values"),
        (["quantize", os.path.join(tmp, "missing"), out, "--type", "q4_0"], 1, "missing", "a missing input"),
        (["quantize", os.path.join(root, "models", "llm", "SmolLM2-135M-Instruct.Q4_1.gguf"), out, "--type", "q4_0"], 1,
         "is stored in Q4_1 already", "requantizing a Q4_1 GGUF")):
    r = run(args)
    lines = r.stderr.strip().splitlines()
    left = [n for n in os.listdir(tmp) if n.startswith("refused")]
    check(r.returncode == code and len(lines) == 1 and needle in r.stderr and not left,
          f"quantize refuses {what}: exit {r.returncode}, {lines}, left {left}")
check(os.path.exists(os.path.join(tmp, "gpt2", "model.safetensors")), "the existing output is untouched")

shutil.rmtree(tmp, ignore_errors=True)
if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")
