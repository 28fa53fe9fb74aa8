#!/usr/bin/python3
"""`vkformer embed` end to end, text in: the C++ tokenizer and the Vulkan model
against the TF.js runtime (tools/use_lite/reference_embeddings.js), which
tokenizes with the npm package's own tokenizer. Also the .npy output, the
similarity table and the command's errors.

    cli_embed.py VKFORMER_BINARY REPO_ROOT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

F32_ABS = 1e-5  # as test_use_lite (fp32 weights; both sides compute in fp32)
F16_ABS = 2e-3  # as test_use_lite (fp16 weights; measured 4.3e-4 on these sentences)

SENTENCES = [
    "Hello world.",
    "How old are you?",
    "What is your age?",
    "",
    "Wait... what?! (Really) — yes; 100% sure: #1 @home & co.",
    "Ça coûte combien ? ¿Dónde está la biblioteca? Привет, мир! 日本語のテキスト ☃",
    " ".join(["The cat sat on the mat."] * 25),  # > 128 tokens: the first 128 count
    "a",
]

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(args, **kw):
    kw.setdefault("stdin", subprocess.DEVNULL)  # no texts given and an empty stdin: nothing to embed
    return subprocess.run([vkformer] + args, capture_output=True, text=True, **kw)


vkformer, root = sys.argv[1], sys.argv[2]
model = os.path.join(root, "models", "use-lite")
script = os.path.join(root, "tools", "use_lite", "reference_embeddings.js")
if not os.path.exists(os.path.join(model, "model.safetensors")) or \
        not os.path.isdir(os.path.join(root, "tools", "use_lite", "node_modules")):
    sys.exit("cli_embed: models/use-lite or tools/use_lite/node_modules is missing: run `make use-lite` first")

tmp = tempfile.mkdtemp(prefix="vkf_cli_embed_")
sent_file = os.path.join(tmp, "sentences.json")
with open(sent_file, "w", encoding="utf-8") as f:
    json.dump(SENTENCES, f, ensure_ascii=False)

ref = subprocess.run(["node", script], input=json.dumps({"batches": [SENTENCES]}), capture_output=True, text=True)
if ref.returncode != 0:
    sys.exit("cli_embed: the TF.js reference failed (run `make use-lite`): " + ref.stderr)
want = np.array(json.loads(ref.stdout)["batches"][0]["embeddings"])

for precision, bound in (("fp32", F32_ABS), ("fp16", F16_ABS)):
    npy = os.path.join(tmp, f"e_{precision}.npy")
    r = run(["embed", "--model", model, "--precision", precision, "--input", sent_file, "--json", "--out", npy])
    check(r.returncode == 0, f"{precision}: exit 0 ({r.stderr.strip()[-300:]})")
    if r.returncode != 0:
        continue
    got = np.array(json.loads(r.stdout)["embeddings"])
    err = float(np.abs(got - want).max())
    print(f"     {precision}: max abs error vs TF.js, text in: {err:.3g}")
    check(got.shape == want.shape and err <= bound, f"{precision}: within {bound} of TF.js")
    arr = np.load(npy)
    check(arr.dtype == np.float32 and arr.shape == (len(SENTENCES), 512), f"{precision}: .npy is float32 [n, 512]")
    check(np.array_equal(arr, got.astype(np.float32)), f"{precision}: .npy equals the JSON")
    check("only the first 128 count" in r.stderr, f"{precision}: says that a sentence was cut at 128 tokens")

# The table: unit diagonal, the paraphrases closer to each other than to the rest.
r = run(["embed", "--model", model, "How old are you?", "What is your age?", "I like pizza."])
check(r.returncode == 0, "table: exit 0")
rows = [line.split()[1:] for line in r.stdout.splitlines() if line.strip().startswith("[") and len(line.split()) == 4
        and line.split()[1][0] in "-0123456789"]
sim = np.array(rows, dtype=float) if rows else np.zeros((0, 0))
check(sim.shape == (3, 3) and np.allclose(np.diag(sim), 1, atol=1e-3), "table: 3x3 with a unit diagonal")
check(sim.shape == (3, 3) and sim[0, 1] > sim[0, 2] + 0.3, "table: the paraphrases are the closest pair")

# --ids bypasses the tokenizer and gives the same numbers.
r = run(["embed", "--model", model, "--ids", "2002,102,311", "--json"])
want_hello = json.loads(subprocess.run(["node", script], input=json.dumps({"batches": [[[2002, 102, 311]]]}),
                                       capture_output=True, text=True).stdout)["batches"][0]["embeddings"][0]
check(r.returncode == 0 and float(np.abs(np.array(json.loads(r.stdout)["embeddings"][0]) - want_hello).max()) <= F32_ABS,
      "--ids: matches TF.js")

# Errors: one line, exit 1 (2 for a usage error), no .npy left behind.
bad_out = os.path.join(tmp, "bad.npy")
for args, needle, code in [
    (["embed", "--model", model], "at least one sentence", 2),
    (["embed", "--model", model, "x", "--ids", "1"], "not both", 2),
    (["embed", "--model", model, "--ids", "1,x"], "not an integer", 2),
    (["embed", "--model", model, "--ids", "9000", "--out", bad_out], "outside the vocabulary", 1),
    (["embed", "--model", model, "x", "--precision", "fp8", "--out", bad_out], "--precision", 2),
    (["embed", "--model", os.path.join(root, "tests", "models", "encoder_learned"), "--ids", "1"], "use_lite", 1),
    (["embed", "--model", os.path.join(tmp, "nope"), "x"], "nope", 1),
    (["embed", "--model", model, "--input", os.path.join(tmp, "missing.json")], "cannot open", 1),
]:
    r = run(args)
    msg = r.stderr.strip()
    check(r.returncode == code and needle in msg and not os.path.exists(bad_out),
          f"error {' '.join(args[3:])!r}: exit {code} naming {needle!r} (got {r.returncode}: {msg[-200:]})")

shutil.rmtree(tmp, ignore_errors=True)
if failures:
    sys.exit(f"cli_embed: {len(failures)} check(s) failed")
print("cli_embed: all checks passed")
