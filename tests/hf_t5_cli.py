#!/usr/bin/env python3
"""T5 through the CLI, against the goldens transformers wrote for tools/hf/tiny_t5.py's
t5_text (a gated T5 with a T5TokenizerFast over an spm_train model):

- `vkformer generate --model DIR --prompt TEXT` (and texts as arguments, and stdin):
  the texts and ids of HF generate() (greedy) on each text alone;
- `vkformer forward --src-ids ... --tgt-ids ... --out F.npy`: the logits of each
  (source, decoder input) pair, max |got − want| / max(1, max |want|) ≤ 1e-4;
- bad input: one line naming the file or tensor, exit 1.

Usage: hf_t5_cli.py VKFORMER ROOT   (numpy from /usr/bin/python3; no HF code runs)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

vkformer, root = sys.argv[1], sys.argv[2]
hf = os.environ.get("VKF_HF_MODELS") or os.path.join(root, "build", "hf-models")
d = os.path.join(hf, "t5_text")
if not os.path.exists(os.path.join(d, "golden.json")):
    sys.exit(f"FAIL: {d} is missing: run `make hf-test-models`")
g = json.load(open(os.path.join(d, "golden.json")))
failures = []


def run(*args, stdin=None, ok=True):
    p = subprocess.run([vkformer, *args], capture_output=True, text=True, input=stdin)
    if ok and p.returncode != 0:
        sys.exit(f"FAIL: vkformer {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p


def errors(p):
    return [line for line in p.stderr.splitlines() if line.startswith("vkformer: error:")]


def check(what, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + what + (f": {detail}" if detail and not cond else ""))
    if not cond:
        failures.append(what)


# generate: --prompt, arguments and stdin; --json carries ids and texts.
prompts = sum((["--prompt", t] for t in g["texts"]), [])
j = json.loads(run("generate", "--model", d, *prompts, "--max-new-tokens", "8", "--json").stdout)
check("generate --prompt: ids equal HF generate()", j["sequences"] == g["greedy"], f"{j['sequences']} vs {g['greedy']}")
check("generate --prompt: texts equal HF's decode", j["texts"] == g["greedy_texts"], f"{j['texts']} vs {g['greedy_texts']}")
out = run("generate", "--model", d, *g["texts"], "--max-new-tokens", "8").stdout.splitlines()
check("generate TEXT...: one line per text", out == g["greedy_texts"], f"{out}")
out = run("generate", "--model", d, "--max-new-tokens", "8", stdin="\n".join(g["texts"]) + "\n").stdout.splitlines()
check("generate < stdin", out == g["greedy_texts"], f"{out}")

# forward: logits of each (source, decoder input) pair, in one padded batch.
with tempfile.TemporaryDirectory() as tmp:
    npy = os.path.join(tmp, "logits.npy")
    args = ["forward", "--model", d, "--out", npy]
    for s, t in zip(g["src"], g["tgt"]):
        args += ["--src-ids", ",".join(map(str, s)), "--tgt-ids", ",".join(map(str, t))]
    run(*args)
    got = np.load(npy)
    err = 0.0
    for b, want in enumerate(g["outputs"]["logits"]):
        w = np.array(want)
        err = max(err, float(np.abs(got[b, :len(w)] - w).max() / max(1.0, np.abs(w).max())))
    check(f"forward --src-ids --tgt-ids: logits within 1e-4 (max error {err:.3g})", err <= 1e-4)

    # Bad input: a missing relative_attention_bias names the tensor.
    bad = os.path.join(tmp, "bad")
    shutil.copytree(d, bad)
    cfg = json.load(open(os.path.join(bad, "config.json")))
    cfg["relative_attention_num_buckets"] = 16
    json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
    p = run("generate", "--model", bad, "hello", ok=False)
    check("relative_attention_num_buckets not matching the tensor: exit 1, one line naming the tensor",
          p.returncode == 1 and len(errors(p)) == 1 and "relative_attention_bias" in errors(p)[0]
          and "relative_attention_num_buckets" in errors(p)[0], p.stderr)
    # Without --tgt-ids each target is the decoder start token alone (config.json's).
    start = json.load(open(os.path.join(d, "config.json")))["decoder_start_token_id"]
    x, y = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    p = run("forward", "--model", d, "--src-ids", "1,2", "--out", x, ok=False)
    run("forward", "--model", d, "--src-ids", "1,2", "--tgt-ids", str(start), "--out", y)
    check("forward without --tgt-ids: the decoder start token's logits",
          p.returncode == 0 and np.array_equal(np.load(x), np.load(y)), p.stderr)

print(f"hf_t5_cli: {'all passed' if not failures else f'{len(failures)} FAILED'}")
sys.exit(1 if failures else 0)
