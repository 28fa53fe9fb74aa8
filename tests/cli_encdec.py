"""The bart family through the CLI, against the goldens of tools/hf/tiny_encdec.py:
`vkformer translate` on opus_mt (an OPUS-MT-shaped directory: source.spm, target.spm,
vocab.json, MarianMTModel) greedy and with --beam 3, texts from arguments, --input and
stdin, equal to HF's generate + decode; `vkformer generate --prompt` on bart_text (a BART
with a byte-level BPE tokenizer.json) equal to HF's generate + decode; `vkformer generate --src-ids` on bart_lm and
marian_mt equal to HF's generate(); `vkformer forward --src-ids --tgt-ids --out`
logits within 1e-4 of HF's; bad input (a missing .spm file, a tokenizer whose vocabulary
is not the model's) one line, exit 1.
Usage: cli_encdec.py VKFORMER HF_MODELS_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

vkf, hf = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures = []


def run(*args, ok=True, stdin=None):
    p = subprocess.run([vkf, *args], capture_output=True, text=True, input=stdin)
    if ok and p.returncode != 0:
        sys.exit("vkformer %s failed:\n%s" % (" ".join(args), p.stderr))
    return p


def check(what, got, want):
    if got != want:
        failures.append("%s: got %r, want %r" % (what, got, want))


def ids(seq):
    return ",".join(map(str, seq))


opus = os.path.join(hf, "opus_mt")
g = json.load(open(os.path.join(opus, "golden.json")))
texts = g["texts"]
check("translate (arguments)", run("translate", "--model", opus, "--max-new-tokens", "8", *texts).stdout.splitlines(), g["greedy"])
check("translate --beam 3", run("translate", "--model", opus, "--max-new-tokens", "8", "--beam", "3", *texts).stdout.splitlines(), g["beam"])
with tempfile.TemporaryDirectory() as tmp:
    listing = os.path.join(tmp, "texts.json")
    with open(listing, "w") as f:
        json.dump(texts[:3], f)
    check("translate --input", run("translate", "--model", opus, "--max-new-tokens", "8", "--input", listing, texts[3]).stdout.splitlines(),
          g["greedy"][:4])
    check("translate (stdin)", run("translate", "--model", opus, "--max-new-tokens", "8", stdin="\n".join(texts[4:]) + "\n").stdout.splitlines(),
          g["greedy"][4:])
    check("generate (text)", run("generate", "--model", opus, "--max-new-tokens", "8", *texts).stdout.splitlines(),
          g["greedy"])

    # Bad input: one line naming the file, exit 1.
    broken = os.path.join(tmp, "broken")
    shutil.copytree(opus, broken)
    os.remove(os.path.join(broken, "target.spm"))
    p = run("translate", "--model", broken, "hello", ok=False)
    check("missing target.spm", (p.returncode, p.stderr.strip()),
          (1, "vkformer: error: %s/target.spm: cannot open (a Marian tokenizer needs source.spm, target.spm and "
              "vocab.json)" % broken))
    shutil.copy(os.path.join(opus, "target.spm"), broken)
    cfg = json.load(open(os.path.join(broken, "config.json")))
    cfg["vocab_size"] += 1
    cfg["decoder_vocab_size"] += 1
    json.dump(cfg, open(os.path.join(broken, "config.json"), "w"))
    p = run("translate", "--model", broken, "hello", ok=False)
    check("vocab mismatch", (p.returncode, p.stderr.strip()),
          (1, "vkformer: error: the tokenizer of %s has %d ids, but config.json has a source vocabulary of %d and a "
              "target vocabulary of %d" % (broken, cfg["vocab_size"] - 1, cfg["vocab_size"], cfg["vocab_size"])))

    # BART with its byte-level BPE tokenizer (tokenizer.json): text in, text out.
    bt = os.path.join(hf, "bart_text")
    gb = json.load(open(os.path.join(bt, "golden.json")))
    out = json.loads(run("generate", "--model", bt, "--max-new-tokens", "8", "--json", *gb["texts"]).stdout)
    check("bart_text generate --json sequences", out["sequences"], gb["greedy_ids"])
    check("bart_text generate --json texts", out["texts"], gb["greedy"])
    args = ["generate", "--model", bt, "--max-new-tokens", "8"]
    for t in gb["texts"][:2]:
        args += ["--prompt", t]
    check("bart_text generate --prompt", run(*args).stdout.split("\n")[:2], gb["greedy"][:2])

    for name in ("bart_lm", "marian_mt"):
        d = os.path.join(hf, name)
        gold = json.load(open(os.path.join(d, "golden.json")))
        for case in gold["generate"][:3]:
            o = case["options"]
            args = ["generate", "--model", d, "--max-new-tokens", str(o["max_new_tokens"])]
            for key, flag in (("num_beams", "--beam"), ("length_penalty", "--length-penalty"),
                              ("no_repeat_ngram_size", "--no-repeat-ngram-size")):
                if key in o:
                    args += [flag, str(o[key])]
            for s in gold["src"]:
                args += ["--src-ids", ids(s)]
            got = [[int(x) for x in line.split(",") if x] for line in run(*args).stdout.split("\n")[:len(gold["src"])]]
            check("%s generate %s" % (name, o), got, case["out"])
        out = os.path.join(tmp, name + ".npy")
        args = ["forward", "--model", d, "--out", out]
        for s, t in zip(gold["src"], gold["tgt"]):
            args += ["--src-ids", ids(s), "--tgt-ids", ids(t)]
        run(*args)
        logits = np.load(out)
        err = max(float(np.abs(logits[b, :len(t)] - np.array(w)).max()) / max(1.0, float(np.abs(np.array(w)).max()))
                  for b, (t, w) in enumerate(zip(gold["tgt"], gold["outputs"]["logits"])))
        if not err <= 1e-4:
            failures.append("%s forward: max error %.3g > 1e-4" % (name, err))

for f in failures:
    print("FAIL", f)
print("cli_encdec: %d failures" % len(failures))
sys.exit(1 if failures else 0)
