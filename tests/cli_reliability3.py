#!/usr/bin/env python3
"""The command line's defects of issue 29 (reliability round 3), many cases in one
process: text arguments reach the tokenizer byte for byte (CLI11's "[a,b]" list
syntax), --seed's range, serve's usage errors exit 2, a closed stdout pipe is a
write error (exit 1), not SIGPIPE.
Usage: cli_reliability3.py VKFORMER SOURCE_DIR HF_MODELS_DIR"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from cli_checks import check, finish

exe, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
hf = os.path.abspath(os.environ.get("VKF_HF_MODELS") or sys.argv[3])
DATES = os.path.join(source, "models", "dates")  # an enc-dec with a tokenizer
ST = os.path.join(hf, "st_mean_norm")      # an HF sentence encoder with tokenizer.json
for d in (DATES, ST):
    if not os.path.isdir(d):
        sys.exit(f"cli_reliability3: {d} is missing (make hf-test-models builds build/hf-models)")
tmp = tempfile.mkdtemp()


def run(args, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("timeout", 120)
    return subprocess.run([exe, "-q", *args], **kw)


def said(r):
    return [l for l in r.stderr.decode(errors="replace").splitlines() if not l.startswith("vkformer: device")]


def expect(code, pattern, args, **kw):
    """Exit `code`, one line "vkformer: error: ...PATTERN..."."""
    r = run(args, **kw)
    lines = said(r)
    what = f"vkformer {' '.join(args)[:150]}"
    check(r.returncode == code, f"{what}: exit {r.returncode}, expected {code}; said {lines}")
    check(len(lines) == 1 and lines[0].startswith("vkformer: error: ") and pattern in lines[0],
          f"{what}: expected one error line with {pattern!r}, got {lines}")
    return r


def with_tokenizer(name):
    """An HF test model with st_mean_norm's tokenizer (the tiny models share its vocabulary)."""
    d = os.path.join(tmp, name)
    if not os.path.isdir(d):
        shutil.copytree(os.path.join(hf, name), d)
        for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
            shutil.copy(os.path.join(hf, "st_mean_norm", f), d)
    return d


# --- #13: CLI11 reads "[a, b]" as a list and "[]" as nothing; texts must arrive as given.
TEXTS = ["[3 May 2001, 4 June 2002]", "[]", "[MASK]", "\x1f[x]", "plain, text"]
texts_file = os.path.join(tmp, "texts.json")
json.dump(TEXTS, open(texts_file, "w"))


def same_as_input_file(cmd, model, extra=(), texts=TEXTS):
    """`cmd` on the texts as arguments prints what it prints on the same texts from --input."""
    json.dump(texts, open(texts_file, "w"))
    a = run([cmd, "--model", model, *extra, "--", *texts])
    b = run([cmd, "--model", model, *extra, "--input", texts_file])
    check(a.returncode == 0 and b.returncode == 0, f"{cmd}: exit {a.returncode}/{b.returncode}: {said(a)} {said(b)}")
    check(a.stdout == b.stdout, f"{cmd}: texts as arguments give {a.stdout[:300]!r}, from --input {b.stdout[:300]!r}")
    return a


r = same_as_input_file("tokenize", ST, ["--json"])
ids = json.loads(r.stdout) if r.returncode == 0 else []
check(len(ids) == len(TEXTS), f"tokenize: {len(TEXTS)} texts give {len(ids)} id lists")
mask = json.load(open(os.path.join(ST, "tokenizer.json")))["model"]["vocab"]["[MASK]"]
check(len(ids) > 2 and len(ids[2]) == 3 and ids[2][1] == mask, f"tokenize \"[MASK]\" is [CLS] [MASK] [SEP]: {ids[2:3]}")
r = run(["tokenize", "--model", ST, "--json", "[MASK]"])  # without -- too
check(r.returncode == 0 and json.loads(r.stdout) == ids[2:3], f"tokenize [MASK]: {r.stdout!r}")
r = same_as_input_file("embed", ST, ["--json"])
check(r.returncode == 0 and len(json.loads(r.stdout)["embeddings"]) == len(TEXTS), "embed: one embedding per text")
same_as_input_file("classify", with_tokenizer("bert_seqcls"), ["--json"])
r = same_as_input_file("fill-mask", with_tokenizer("bert_mlm"), ["--json"], ["[MASK]", "[a, [MASK]]"])
check(r.returncode == 0 and len(json.loads(r.stdout)) == 2, f"fill-mask: two results: {r.stdout[:200]!r}")
r = same_as_input_file("translate", DATES, [], ["[3 May 2001, 4 June 2002]", "[]", "nov 3rd 1999"])
check(r.returncode == 0 and len(r.stdout.decode().splitlines()) == 3, f"translate: 3 lines: {r.stdout!r}")
r = same_as_input_file("generate", DATES, ["--json", "--max-new-tokens", "3"], ["[3 May 2001, 4 June 2002]", "[]"])
a = run(["generate", "--model", DATES, "--json", "--max-new-tokens", "3",
         "--prompt", "[3 May 2001, 4 June 2002]", "--prompt=[]"])
check(a.returncode == 0 and a.stdout == r.stdout, f"generate --prompt: {a.stdout!r} vs {r.stdout!r}")
a = run(["generate", "--model", DATES, "--json", "--max-new-tokens", "3", "--stop", "[a, b]", "--stop=[]", "--src-ids", "3"])
check(a.returncode == 0, f"generate --stop [a, b]: {said(a)}")

# --- #15: a temperature whose division overflows gives greedy's ids (was garbage).
greedy = run(["generate", "--model", DATES, "--src-ids", "3,4,5", "--max-new-tokens", "8", "--json"])
for t in ("1e-308", "5e-324", "1e-300"):
    r = run(["generate", "--model", DATES, "--src-ids", "3,4,5", "--max-new-tokens", "8", "--json", "--do-sample",
             "--temperature", t, "--seed", "5"])
    check(r.returncode == 0 and greedy.returncode == 0 and
          json.loads(r.stdout)["sequences"] == json.loads(greedy.stdout)["sequences"],
          f"--temperature {t}: greedy's ids {greedy.stdout[:80]!r}, got {r.stdout[:80]!r} {said(r)}")

# --- #16: --seed out of range, either side, is the same usage error.
for seed in ("-1", "18446744073709551616", "99999999999999999999999"):
    expect(2, "--seed: must be from 0 to 18446744073709551615", ["generate", "--model", DATES, "--src-ids", "3",
                                                                  "--do-sample", "--seed", seed])
r = run(["generate", "--model", DATES, "--src-ids", "3", "--do-sample", "--seed", "18446744073709551615"])
check(r.returncode == 0, f"--seed 2^64-1 is fine: {said(r)}")

# --- #19: serve's option ranges are usage errors (exit 2).
for flag, val, msg in (("--port", "99999", "--port must be from 0 to 65535"), ("--port", "-1", "--port must be from"),
                       ("--timeout-s", "0", "--timeout-s must be at least 1"),
                       ("--max-queue", "0", "--max-queue must be at least 1"),
                       # #7: 100000 threads were started (2.4 GB) and nothing answered.
                       ("--threads", "100000", "--threads must be from 1 to 256, got 100000"),
                       ("--threads", "257", "--threads must be from 1 to 256, got 257")):
    expect(2, msg, ["serve", "--model", DATES, flag, val], timeout=60)

# --- #20: a closed pipe on stdout is "stdout: write error", exit 1, for streamed and buffered output.
def closed_pipe(args, stdin_text=None):
    """stdout is a pipe whose reader is gone before the first write (as after `| head -c 1`)."""
    rd, wr = os.pipe()
    os.close(rd)
    r = run(args, stdout=wr, input=stdin_text)
    os.close(wr)
    lines = [l for l in said(r) if l.startswith("vkformer: error")]
    check(r.returncode == 1 and len(lines) == 1 and "vkformer: error: stdout: write error" in lines[0],
          f"{args[0]} into a closed pipe: exit {r.returncode} (141 is SIGPIPE), said {lines}")

closed_pipe(["generate", "--model", DATES, "--stream", "--src-ids", "3,4,5", "--max-new-tokens", "0", "--no-cache"])
closed_pipe(["generate", "--model", DATES, "--src-ids", "3,4,5", "--max-new-tokens", "2"])
closed_pipe(["tokenize", "--model", ST, "--json", "hello"])
closed_pipe(["chat", "--model", os.path.join(hf, "llama_chat"), "--max-new-tokens", "4"], b"hello\n")
closed_pipe(["embed", "--model", ST, "--out", "-", "hello"])

# --- #14: one NaN in a query weight (F32, BF16) makes every output NaN, as in
# transformers, and the loader's NaN warning fires (it used to give finite embeddings).
def with_nan_query(name):
    d = os.path.join(tmp, name + "_nan_query")
    shutil.copytree(os.path.join(hf, name), d)
    path = os.path.join(d, "model.safetensors")
    blob = bytearray(open(path, "rb").read())
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    key = next(k for k in sorted(header) if k.endswith("layer.0.attention.self.query.weight"))
    start = 8 + n + header[key]["data_offsets"][0] + 5 * (4 if header[key]["dtype"] == "F32" else 2)
    if header[key]["dtype"] == "F32":
        blob[start:start + 4] = struct.pack("<f", float("nan"))
    else:
        assert header[key]["dtype"] == "BF16", header[key]["dtype"]
        blob[start:start + 2] = struct.pack("<H", 0x7FC0)
    open(path, "wb").write(blob)
    return d


def nan_warned(r):
    return any(l.startswith("vkformer: warning:") and "NaN" in l for l in said(r))


d = with_nan_query("st_mean_norm")
for t in (d,):
    shutil.copy(os.path.join(ST, "tokenizer.json"), t)
r = run(["embed", "--model", d, "--json", "hello world", "a second, longer text"])
emb = json.loads(r.stdout)["embeddings"] if r.returncode == 0 else [[0.0]]
check(all(v is None for e in emb for v in e), f"embed with a NaN query weight: every value NaN (null in JSON): {str(emb)[:200]}")
check(nan_warned(r), f"embed with a NaN query weight warns: {said(r)}")
for name in ("bert_model", "bert_model_bf16"):
    out = os.path.join(tmp, name + ".npy")
    r = run(["forward", "--model", with_nan_query(name), "--src-ids", "2,5,6,7,3", "--src-ids", "2,9,3",
             "--output", "hidden", "--out", out])
    vals = []
    if r.returncode == 0:
        blob = open(out, "rb").read()
        hl = struct.unpack("<H", blob[8:10])[0]
        data = blob[10 + hl:]
        vals = struct.unpack(f"<{len(data) // 4}f", data)
        vals = vals[:8 * (len(vals) // 10)]  # [2, 5, d]: the second sequence's 2 padded rows are zeros
    check(r.returncode == 0 and vals and all(math.isnan(v) for v in vals),
          f"forward {name} with a NaN query weight: every hidden value NaN "
          f"({sum(map(math.isnan, vals))} of {len(vals)}): {said(r)}")
    check(nan_warned(r), f"forward {name} with a NaN query weight warns: {said(r)}")

# --- #21: a NaN embedding is "nan" in the similarity table (was 0.000, even on the diagonal), null in --json.
r = run(["embed", "--model", d, "hello world", "a second text"])
table = r.stdout.decode()
rows = [l for l in table.splitlines() if l.lstrip().startswith("[1]") or l.lstrip().startswith("[2]")][-2:]
check(r.returncode == 0 and len(rows) == 2 and all(l.split()[1:] == ["nan", "nan"] for l in rows),
      f"embed's table shows nan for NaN embeddings: {rows}")

# --- #21: type_vocab_size 0 would drop BERT's token type embedding: refused, naming the field.
bad = os.path.join(tmp, "bert_types0")
shutil.copytree(os.path.join(hf, "bert_model"), bad)
cfg = json.load(open(os.path.join(bad, "config.json")))
cfg["type_vocab_size"] = 0
json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
expect(1, '"type_vocab_size" 0 leaves no token type embedding', ["forward", "--model", bad, "--src-ids", "2,5,3",
                                                                  "--output", "hidden", "--out", os.path.join(tmp, "t.npy")])
check(not os.path.exists(os.path.join(tmp, "t.npy")), "no output file after the refusal")

# --- #18: sentence-transformers' files: types checked, naming the file and key; paths kept inside the directory.
def st_copy(name, modules=None, pooling=None):
    dst = os.path.join(tmp, name)
    shutil.copytree(ST, dst)
    if modules is not None:
        json.dump(modules, open(os.path.join(dst, "modules.json"), "w"))
    if pooling is not None:
        pc = os.path.join(dst, "1_Pooling", "config.json")
        j = json.load(open(pc))
        j.update(pooling)
        json.dump(j, open(pc, "w"))
    return dst

modules = json.load(open(os.path.join(ST, "modules.json")))
pool_index = next(i for i, m in enumerate(modules) if m["type"].endswith("Pooling"))
d18 = st_copy("st_pool_yes", pooling={"pooling_mode_mean_tokens": "yes"})
expect(1, "1_Pooling/config.json: \"pooling_mode_mean_tokens\" must be true or false, got \"yes\"",
       ["embed", "--model", d18, "hi"])
for name, path, msg in (("st_path_5", 5, '"path" must be a string, got 5'),
                        ("st_path_up", "../1_Pooling", "is not a folder inside the model directory"),
                        ("st_path_abs", os.path.join(ST, "1_Pooling"), "is not a folder inside the model directory")):
    m = json.loads(json.dumps(modules))
    m[pool_index]["path"] = path
    dd = st_copy(name, modules=m)
    if name == "st_path_up":  # a valid Pooling folder just outside the model directory
        shutil.copytree(os.path.join(ST, "1_Pooling"), os.path.join(tmp, "1_Pooling"))
    r = expect(1, msg, ["embed", "--model", dd, "hi"])
    check("modules.json" in said(r)[0] and "config.json:" not in said(r)[0],
          f"modules.json is blamed, not config.json: {said(r)}")

shutil.rmtree(tmp)
finish()
