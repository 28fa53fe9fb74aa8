#!/usr/bin/env python3
"""Every `vkformer ...` command line in the README's code blocks runs as printed: exit 0
and no validation message, on the models the repository has. DIR is replaced by a
model that fits the command (HF test models get the sentence encoder's tokenizer,
as tests/hf_encoders.py does); a line whose model is not here (models/use-lite,
models/hf/...: `make use-lite`, `make hf-models`) is skipped and said so. Where the
README prints the output (translate), it must be that output. `kernel` and `bench`
get `--repeat 1 --warmup 0` and `tune` `--budget-s 1 --repeat 1` (the same work once:
their timing runs take minutes); `A && B` runs both; a line that tunes has a cache directory of its own.
`serve` is tested by cli_serve.py. Also `profile --src-len 64 --tgt-len 64` on
models/dates, the example of docs/cli.md.
Usage: cli_readme.py VKFORMER SOURCE_DIR HF_MODELS_DIR"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from cli_checks import check, finish

exe, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
hf = os.path.abspath(os.environ.get("VKF_HF_MODELS") or sys.argv[3])
tmp = tempfile.mkdtemp()


def with_tokenizer(name):
    """An HF test model with st_mean_norm's tokenizer (the tiny models share its vocabulary)."""
    d = os.path.join(tmp, name)
    if not os.path.isdir(d):
        shutil.copytree(os.path.join(hf, name), d)
        for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
            shutil.copy(os.path.join(hf, "st_mean_norm", f), d)
    return d


DATES = os.path.join(source, "models", "dates")
DIR_FOR = {  # command -> the model directory DIR stands for
    "classify": lambda: with_tokenizer("bert_seqcls"),
    "fill-mask": lambda: with_tokenizer("bert_mlm"),
    "tokenize": lambda: os.path.join(hf, "st_mean_norm"),
    "forward": lambda: DATES,
    "generate": lambda: DATES,
    "chat": lambda: os.path.join(hf, "llama_chat"),  # also `generate --chat`
}

# The README's code blocks: indented by 4 spaces, or fenced; a command line is
# followed by the output it prints (indented lines that are not commands).
lines = open(os.path.join(source, "README.md")).read().splitlines()
commands = []  # (argv, expected stdout lines or None)
i = 0
while i < len(lines):
    m = re.match(r"^ {4}(build/)?vkformer (.*)$", lines[i])
    i += 1
    if not m:
        continue
    text = re.sub(r"\s+#.*$", "", m.group(2)).rstrip(" &")  # a trailing comment, a background &
    expected = []
    while i < len(lines) and lines[i].startswith("    ") and not re.match(r"^ {4}\S*(vkformer|curl|cmake) ", lines[i]):
        expected.append(lines[i][4:])
        i += 1
    parts = [re.sub(r"^(build/)?vkformer ", "", p.strip()) for p in text.split("&&")]  # A && B: both run
    for n, part in enumerate(parts):
        # A line that tunes gets a cache directory of its own (tune writes its database there).
        commands.append((shlex.split(part), expected if n == len(parts) - 1 and expected else None, "tune" in text))
check(len(commands) >= 10, f"found {len(commands)} command lines in the README")

for argv, expected, own_cache in commands:
    cmd = argv[0]
    if cmd == "serve":
        continue
    args = []
    for a in argv:
        if a == "DIR":
            a = DIR_FOR["chat" if "--chat" in argv else cmd]()
        elif a.startswith("models/"):
            a = os.path.join(source, a)
        args.append(a)
    model = next((args[j + 1] for j, a in enumerate(args[:-1]) if a == "--model"), None)
    if model and not os.path.exists(model):  # a directory, or a GGUF file
        print(f"skipped (no {model}): vkformer {' '.join(argv)}")
        continue
    if cmd in ("kernel", "bench"):
        args += ["--repeat", "1", "--warmup", "0"]
    if cmd == "tune":  # one short search instead of minutes
        args = [a if p != "--budget-s" else "1" for p, a in zip([""] + args, args)] + ["--repeat", "1"]
    env = dict(os.environ, VKFORMER_CACHE_DIR=os.path.join(tmp, "cache")) if own_cache else None
    t0 = time.time()
    r = subprocess.run([exe, "-q", *args], capture_output=True, text=True, cwd=tmp, timeout=300, env=env,
                       stdin=subprocess.DEVNULL)  # `chat` reads its messages from stdin: none
    seconds = time.time() - t0
    what = "vkformer " + " ".join(argv)
    check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    check("validation" not in r.stderr, f"{what}: validation message: {r.stderr[-500:]}")
    if expected:
        check(r.stdout.splitlines() == expected, f"{what}: printed {r.stdout.splitlines()}, the README says {expected}")
    print(("ok" if r.returncode == 0 else "failed") + f" ({seconds:.1f} s): {what}")

r = subprocess.run([exe, "-q", "profile", "--model", DATES, "--src-len", "64", "--tgt-len", "64", "--repeat", "1"],
                   capture_output=True, text=True, timeout=300)
check(r.returncode == 0 and "validation" not in r.stderr, f"profile --src-len 64 --tgt-len 64 on models/dates: {r.stderr[-500:]}")

shutil.rmtree(tmp)
finish()
