#!/usr/bin/env python3
"""The command line's conventions and its reliability (issue 17), many cases in one
process: exit codes (0 success, 1 bad input or device, 2 usage), one clear line per
error, no output file (or PATH.partial) left behind, no clobbered input, no crash on
0 / negative / huge / NaN option values, output refused onto devices, FIFOs,
directories, symlinks and the model's own files, `--out -`, write errors (stdout on
/dev/full), SIGTERM during a write, texts from arguments / --input (file, pipe, JSON) /
stdin / `-`, the ids format shared by tokenize, generate and --src-ids, model warnings
in every model command, embed's table limit, --version, --help defaults, -q.
Usage: cli_reliability.py VKFORMER SOURCE_DIR HF_MODELS_DIR"""
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile

from cli_checks import check, finish
import time

exe, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
hf = os.path.abspath(os.environ.get("VKF_HF_MODELS") or sys.argv[3])
DATES = os.path.join(source, "models", "dates")  # an enc-dec with a tokenizer
ENC = os.path.join(source, "tests", "models", "encdec_postln_relu")
ST = os.path.join(hf, "st_mean_norm")      # an HF sentence encoder with tokenizer.json
BART = os.path.join(hf, "bart_text")       # an enc-dec with a tokenizer: generate --src-ids prints text too
for d in (DATES, ENC, ST, BART):
    if not os.path.isdir(d):
        sys.exit(f"cli_reliability: {d} is missing (make hf-test-models builds build/hf-models)")
tmp = tempfile.mkdtemp()


def run(args, stdin=None, stdout=subprocess.PIPE, input_bytes=None, timeout=120):
    return subprocess.run([exe, "-q", *args], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                          input=input_bytes, timeout=timeout)


def said(r):
    return [l for l in r.stderr.decode(errors="replace").splitlines() if not l.startswith("vkformer: device")]


def leftovers():
    return [f for f in os.listdir(tmp) if f.endswith(".partial") or f == "out.npy"]


def expect(code, pattern, args, **kw):
    """Exit `code`, one line "vkformer: error: ...PATTERN...", no output or partial file in tmp."""
    for f in leftovers():
        os.remove(os.path.join(tmp, f))
    r = run(args, **kw)
    lines = said(r)
    what = f"vkformer {' '.join(args)[:150]}"
    check(r.returncode == code, f"{what}: exit {r.returncode}, expected {code}; said {lines}")
    check(len(lines) == 1 and lines[0].startswith("vkformer: error: ") and pattern in lines[0],
          f"{what}: expected one error line with {pattern!r}, got {lines}")
    check(not leftovers(), f"{what}: left {leftovers()}")
    return r


OUT = os.path.join(tmp, "out.npy")
fwd = ["forward", "--model", DATES, "--src-ids", "3,4", "--tgt-ids", "1"]

# --- Usage errors: exit 2, one line (CLI11's own codes are mapped).
expect(2, "--bogus", ["--bogus", "devices"])
expect(2, "--out", ["forward", "--model", DATES, "--src-ids", "3"])               # a required option missing
expect(2, "--m", ["kernel", "gemm", "--m", "abc"])
for opt, val in (("--n", "0"), ("--m", "-5"), ("--k", "0"), ("--topk", "0"), ("--q-len", "0")):
    expect(2, opt + " must be at least 1", ["kernel", "embedding" if opt == "--n" else "gemm", opt, val])
expect(2, "--heads: must not be negative", ["kernel", "attention", "--heads", "-1"])
expect(2, "--seed: must be from 0 to 18446744073709551615", ["generate", "--model", DATES, "--src-ids", "3", "--seed", "-1"])
expect(2, "--repeat must be from 1 to", ["bench", "ops", "--op", "gemm", "--repeat", "0"])
expect(2, "--warmup must be from 0 to", ["kernel", "gemm", "--warmup", "-1"])
expect(2, "--repeat must be from 1 to", ["kernel", "gemm", "--repeat", "2000000000", "--warmup", "2000000000"])
for cmd in (["translate", "--model", DATES, "--length-penalty", "nan", "x"],
            ["soak", "--model", DATES, "--max-rss-growth", "nan"],
            ["generate", "--model", DATES, "--src-ids", "3", "--temperature", "inf"],
            ["generate", "--model", DATES, "--src-ids", "3", "--top-p", "-inf"]):
    expect(2, "must be a finite number", cmd)
expect(2, "--precision must be fp32, fp16, q8_0, q4_0 or q4_1", [*fwd, "--out", OUT, "--precision", "fp8"])
expect(2, "is not an integer token id", ["forward", "--model", DATES, "--src-ids", "3,x", "--out", OUT])
expect(2, "--src-len and --tgt-len must each be at most the model's max_positions",
       ["profile", "--model", DATES, "--src-len", "100000"])
expect(2, "--max-new-tokens 100000 is more than", ["translate", "--model", DATES, "--max-new-tokens", "100000", "x"])
expect(2, "--batch-size must be at least 1", ["embed", "--model", ST, "--batch-size", "0", "hi"])
expect(2, "--shapes 100000 is more than --iterations 1", ["soak", "--model", DATES, "--shapes", "100000", "--iterations", "1"])

# --- Sizes beyond the device or the host: exit 1 before allocating.
for m in ("100000000000", "3000000"):
    expect(1, "the shape needs about", ["kernel", "gemm", "--m", m])
expect(1, "the shape needs about", ["bench", "ops", "--op", "gemm", "--m", "100000000"])
expect(1, "needs a KV cache", ["translate", "--model", DATES, "--beam", "100000", "x"])

# --- Outputs that must not be written: refused before any work (usage), no file left.
model_copy = os.path.join(tmp, "model")
shutil.copytree(DATES, model_copy)
before = {f: open(os.path.join(model_copy, f), "rb").read() for f in os.listdir(model_copy)}
fwd_copy = ["forward", "--model", model_copy, "--src-ids", "3,4", "--tgt-ids", "1"]
for f in ("config.json", "model.safetensors"):
    expect(2, "the input", [*fwd_copy, "--out", os.path.join(model_copy, f)])
check(before == {f: open(os.path.join(model_copy, f), "rb").read() for f in os.listdir(model_copy)},
      "the model directory is unchanged")
os.symlink(os.path.join(tmp, "target.npy"), os.path.join(tmp, "link.npy"))
expect(2, "symbolic link", [*fwd, "--out", os.path.join(tmp, "link.npy")])
check(not os.path.exists(os.path.join(tmp, "target.npy")), "nothing written through the symlink")
os.mkfifo(os.path.join(tmp, "fifo"))
expect(2, "not a regular file", [*fwd, "--out", os.path.join(tmp, "fifo")])
expect(2, "not a regular file", [*fwd, "--out", "/dev/null"])
expect(2, "is a directory", [*fwd, "--out", tmp])
expect(1, "No such file or directory", [*fwd, "--out", os.path.join(tmp, "no", "out.npy")])
texts = os.path.join(tmp, "texts.txt")
open(texts, "w").write("Sunday, 22 November 2026\nnov 3rd 1999\n")
expect(2, "the input", ["embed", "--model", ST, "--input", texts, "--out", texts])
expect(2, "needs a file name", ["bench", "model", "--model", DATES, "--json", "-"])
# A planted PATH.partial symlink is replaced, never written through.
victim = os.path.join(tmp, "victim")
open(victim, "w").write("keep")
os.symlink(victim, OUT + ".partial")
r = run([*fwd, "--out", OUT])
check(r.returncode == 0 and open(victim).read() == "keep" and not os.path.lexists(OUT + ".partial"),
      f"a symlink at PATH.partial is not written through (exit {r.returncode}, {said(r)})")

# --- --out - is stdout, byte for byte the file.
r_file = run([*fwd, "--out", OUT])
r_std = run([*fwd, "--out", "-"])
check(r_file.returncode == 0 and r_std.returncode == 0 and r_std.stdout == open(OUT, "rb").read()
      and r_std.stdout.startswith(b"\x93NUMPY"), "forward --out - writes the .npy to stdout")

# --- Write errors: stdout on a full disk is exit 1 with one line, never "wrote" and 0.
with open("/dev/full", "wb") as full:
    for args in ([*fwd, "--out", "-"], ["translate", "--model", DATES, "nov 3rd 1999"],
                 ["tokenize", "--model", ST, "hello"], ["devices"], ["--help"]):
        r = run(args, stdout=full)
        check(r.returncode == 1 and said(r)[-1:] and said(r)[-1].startswith("vkformer: error: stdout: write error")
              and not any("wrote" in l for l in said(r)), f"{args[0]} > /dev/full: exit {r.returncode}, said {said(r)}")

# --- SIGTERM during a write removes PATH.partial (strace holds the process inside fsync).
strace_works = shutil.which("strace") and subprocess.run(["strace", "-o", "/dev/null", "true"]).returncode == 0
if strace_works:  # (a container without ptrace cannot run it)
    p = subprocess.Popen(["strace", "-f", "-o", "/dev/null", "-e", "trace=fsync", "-e",
                          "inject=fsync:delay_enter=1500000", exe, "-q", *fwd, "--out", OUT],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.exists(OUT + ".partial"):
            break
        time.sleep(0.05)
    children = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
    check(os.path.exists(OUT + ".partial") and len(children) == 1, "the write was caught in progress")
    if children:
        os.kill(int(children[0]), signal.SIGTERM)
    p.wait(timeout=30)
    check(not os.path.exists(OUT + ".partial"), "SIGTERM during a write removes out.npy.partial")
else:
    print("skipped: the SIGTERM case needs strace, and ptrace allowed")

# --- Texts: arguments, --input FILE / pipe / JSON, stdin, "-"; directories and devices refused.
def ids_of(args, **kw):
    r = run(["tokenize", "--model", ST, *args], **kw)
    check(r.returncode == 0, f"tokenize {args}: exit {r.returncode}, {said(r)}")
    return r.stdout.decode().splitlines()

direct = ids_of(["a b", "c"])
check(ids_of(["-"], input_bytes=b"a b\nc\n") == direct, "stdin through -")
check(ids_of([], input_bytes=b"a b\nc\n") == direct, "stdin when no text is given")
json_file = os.path.join(tmp, "texts.json")
json.dump(["a b", "c"], open(json_file, "w"))
check(ids_of(["--input", json_file]) == direct, "--input JSON array")
rfd, wfd = os.pipe()
os.write(wfd, b"a b\nc\n")
os.close(wfd)
r = subprocess.run([exe, "tokenize", "--model", ST, "--input", f"/dev/fd/{rfd}"], pass_fds=(rfd,),
                   capture_output=True)
os.close(rfd)
check(r.returncode == 0 and r.stdout.decode().splitlines() == direct, f"--input from a pipe, as <(cmd): {r.stderr}")
big = ("word " * 200_000).encode()  # 1 MB: more than one argument may hold
r = run(["tokenize", "--model", ST, "--input", "-"], input_bytes=big)
check(r.returncode == 0 and r.stdout.count(b",") >= 200_000, "1 MB of text through stdin")
expect(1, "is a directory", ["tokenize", "--model", ST, "--input", tmp])
expect(1, "is a device", ["tokenize", "--model", ST, "--input", "/dev/zero"])
expect(1, "No such file", ["tokenize", "--model", ST, "--input", os.path.join(tmp, "none.txt")])
dir_fd = os.open(tmp, os.O_RDONLY)
expect(1, "stdin: is a directory", ["tokenize", "--model", ST], stdin=dir_fd)
os.close(dir_fd)

# --- One ids format: tokenize's lines are what --src-ids takes; generate prints ids then their text.
ids = direct[0]
check(all(x.isdigit() for x in ids.split(",")), f"tokenize prints comma-separated ids: {ids}")
r = run(["forward", "--model", ENC, "--src-ids", "3,4", "--out", OUT])
check(r.returncode == 0 and any("decoder start token" in l for l in said(r)),
      f"forward on an enc-dec without --tgt-ids: exit {r.returncode}, {said(r)}")
prompt = run(["tokenize", "--model", BART, "hello world"]).stdout.decode().strip()
r = run(["generate", "--model", BART, "--src-ids", prompt, "--max-new-tokens", "3"])
out = r.stdout.decode().splitlines()
check(r.returncode == 0 and len(out) == 2, f"generate --src-ids with a tokenizer prints ids and text: {out} {said(r)}")
if len(out) == 2:
    back = run(["tokenize", "--model", BART, "--decode", out[0]]).stdout.decode().rstrip("\n")
    check(json.loads(out[1]) == back, f"generate's text {out[1]} is its ids' decode {back!r}")
    check(any("was cut at --max-new-tokens 3" in l for l in said(r)) == (len(out[0].split(",")) == 3),
          "the cut notice appears exactly when the limit was reached")

# --- Model warnings reach stderr in every model command (NaN weights).
def with_nan(src, name):
    d = os.path.join(tmp, os.path.basename(src) + "_nan")
    shutil.copytree(src, d)
    path = os.path.join(d, "model.safetensors")
    blob = bytearray(open(path, "rb").read())
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    key = next(k for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32")
    start = 8 + n + header[key]["data_offsets"][0]
    blob[start:start + 4] = struct.pack("<f", float("nan"))
    open(path, "wb").write(blob)
    return d

for args in (["translate", "--model", with_nan(DATES, "dates"), "nov 3rd 1999"],
             ["embed", "--model", with_nan(ST, "st"), "hi"]):
    r = run(args)
    check(any(l.startswith("vkformer: warning:") and "NaN" in l for l in said(r)),
          f"{args[0]} prints the model's NaN warning: {said(r)}")

# --- Hostile tensor names reach stderr escaped, and many warnings are summarised.
def with_extra_tensors(src, names):
    d = os.path.join(tmp, os.path.basename(src) + "_extra")
    shutil.copytree(src, d)
    path = os.path.join(d, "model.safetensors")
    blob = open(path, "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    header, data = json.loads(blob[8:8 + n]), blob[8 + n:]
    for name in names:
        header[name] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}
        data += struct.pack("<f", 1.0)
    h = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
    return d

r = run(["forward", "--model", with_extra_tensors(DATES, [f"evil\x1b[2J\nname{i}" for i in range(30)]),
         "--src-ids", "3", "--out", OUT])
lines = said(r)
check(r.returncode == 0 and b"\x1b" not in r.stderr and any("evil" in l and "name0" in l for l in lines),
      f"control characters in tensor names are escaped: {lines[:3]}")
check(len(lines) <= 25, f"30 unexpected tensors give at most 20 warning lines and a summary, not {len(lines)}")

# --- embed: the similarity table up to 16 texts, a summary beyond.
for n, table in ((16, True), (17, False)):
    r = run(["embed", "--model", ST, *[f"text {i}" for i in range(n)]])
    text = r.stdout.decode()
    check(r.returncode == 0 and ("cosine similarity" in text) == table and (table or "--json" in text),
          f"embed of {n} texts: table {table}")
r_json = run(["embed", "--model", ST, "--json", "a", "b"])
r_npy = run(["embed", "--model", ST, "--out", "-", "a", "b"])
check(r_json.returncode == 0 and r_npy.returncode == 0 and r_npy.stdout.startswith(b"\x93NUMPY")
      and b"cosine" not in r_npy.stdout, "embed --out - writes only the .npy to stdout")
expect(2, "choose one", ["embed", "--model", ST, "--out", "-", "--json", "a"])

# --- --version, --help with defaults, -q.
r = subprocess.run([exe, "--version"], capture_output=True)
check(r.returncode == 0 and r.stdout.startswith(b"vkformer "), f"--version: {r.stdout!r}")
r = subprocess.run([exe, "translate", "--help"], capture_output=True)
check(r.returncode == 0 and b"--batch-size UINT=256" in r.stdout and b"--precision TEXT=fp32" in r.stdout,
      "--help shows the defaults")
r = subprocess.run([exe, "-q", *fwd, "--out", OUT], capture_output=True)
check(r.returncode == 0 and b"vkformer: device" not in r.stderr, "-q silences the device line")

shutil.rmtree(tmp)
finish()
