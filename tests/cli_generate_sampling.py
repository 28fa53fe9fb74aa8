"""`vkformer generate` sampling against a Python reference on tests/models/decoder_only:
the logits of each prefix from `vkformer forward` (the same forward pass generate
--no-cache runs), HF's own logits processors in HF's order (transformers 4.44.2 in
tools/hf/.venv) and the same seeded splitmix64 draws (tools/hf/sampling_reference.py);
one case on the llama family's llama_gqa of `make hf-test-models` too.
Also greedy with the processors, generation_config.json defaults, text prompts with a
char tokenizer (stream, stop strings, the max-new-tokens note) and bad input: one line,
exit 1. Usage: cli_generate_sampling.py VKFORMER SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from hf_venv import run_in_hf_venv  # noqa: E402

vkf, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
run_in_hf_venv(src, "cli_generate_sampling")  # tests/hf_venv.py

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(src, "tools", "hf"))
import sampling_reference as ref  # noqa: E402

MODEL = os.path.join(src, "tests", "models", "decoder_only")
EOS = 2
failures = []


def run(*args, ok=True, env=None):
    p = subprocess.run([vkf, "generate", *args], capture_output=True, text=True,
                       env=dict(os.environ, **env) if env else None)
    if ok and p.returncode != 0:
        sys.exit("vkformer generate %s failed:\n%s" % (" ".join(args), p.stderr))
    return p


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def last_logits(model, ids, tmp):
    out = os.path.join(tmp, "logits.npy")
    subprocess.run([vkf, "forward", "--model", model, "--src-ids", ",".join(map(str, ids)), "--out", out],
                   check=True, capture_output=True)
    return [float(x) for x in np.load(out)[0, -1]]


def reference(model, prompt, o, max_new, seed, tmp, eos=EOS):
    """The tokens HF's processors and the documented draw choose, step by step."""
    rng, history, new = ref.SplitMix64(seed), list(prompt), []
    for _ in range(max_new):
        t = ref.step(o, history, last_logits(model, history, tmp), rng)
        if t == eos:
            break
        new.append(t)
        history.append(t)
    return new


def flags(o):
    out = ["--do-sample"] if o.get("do_sample") else []
    for k in ["temperature", "top_k", "top_p", "min_p", "repetition_penalty", "no_repeat_ngram_size"]:
        if k in o:
            out += ["--" + k.replace("_", "-"), str(o[k])]
    return out


def generated(*args):
    return json.loads(run(*args, "--json").stdout)["sequences"][0]


with tempfile.TemporaryDirectory() as tmp:
    prompt = [1, 5, 6, 7]
    cases = [({"do_sample": True}, 1),
             ({"do_sample": True, "temperature": 0.7, "top_k": 10, "top_p": 0.9}, 8),
             ({"do_sample": True, "temperature": 1.3, "repetition_penalty": 1.5, "no_repeat_ngram_size": 2,
               "min_p": 0.1, "top_k": 0}, 123),
             ({"do_sample": False, "repetition_penalty": 1.8, "no_repeat_ngram_size": 2}, 0)]
    for o, seed in cases:
        want = reference(MODEL, prompt, o, 10, seed, tmp)
        args = ["--model", MODEL, "--src-ids", ",".join(map(str, prompt)), "--seed", str(seed),
                "--max-new-tokens", "10", *flags(o)]
        check(generated(*args, "--no-cache") == want, "%s seed %d, no cache: %s" % (o, seed, want))
        check(generated(*args) == want, "%s seed %d, KV cache" % (o, seed))

    # The llama family (a tiny HF Llama with grouped-query attention and RoPE): the
    # same processors and draws, with and without the (fp32) KV cache.
    llama = os.path.join(os.environ.get("VKF_HF_MODELS", os.path.join(src, "build", "hf-models")), "llama_gqa")
    llama_eos = json.load(open(os.path.join(llama, "config.json")))["eos_token_id"]
    o, seed, llama_prompt = {"do_sample": True, "temperature": 0.7, "top_k": 10, "top_p": 0.9}, 8, [5, 17, 42, 9]
    want = reference(llama, llama_prompt, o, 10, seed, tmp, llama_eos)
    args = ["--model", llama, "--src-ids", ",".join(map(str, llama_prompt)), "--seed", str(seed),
            "--max-new-tokens", "10", "--kv-cache", "f32", *flags(o)]
    check(generated(*args, "--no-cache") == want, "llama_gqa %s seed %d, no cache: %s" % (o, seed, want))
    check(generated(*args) == want, "llama_gqa %s seed %d, KV cache" % (o, seed))

    # An fp16 KV cache: greedy gives the fp32 cache's tokens here; auto is fp32 (the
    # transformer family does not ask for fp16; the llama family does); without fp16
    # storage (the no-fp16 profile) auto stays fp32 and f16 is refused.
    greedy = ["--model", MODEL, "--src-ids", ",".join(map(str, prompt)), "--max-new-tokens", "10"]
    want = generated(*greedy, "--kv-cache", "f32")
    check(generated(*greedy, "--kv-cache", "f16") == want, "--kv-cache f16 greedy equals f32: %s" % want)
    check(generated(*greedy) == want and generated(*greedy, "--kv-cache", "auto") == want, "--kv-cache auto")
    no_fp16 = {"VKFORMER_DEVICE_PROFILE": "no-fp16"}
    check(json.loads(run(*greedy, "--json", env=no_fp16).stdout)["sequences"][0] == want, "auto under no-fp16")
    p = run(*greedy, "--kv-cache", "f16", ok=False, env=no_fp16)
    check(p.returncode == 1 and "vkformer: error: an fp16 KV cache needs fp16 tensors, which the device (profile "
          "no-fp16) cannot store" in p.stderr, "--kv-cache f16 under no-fp16 is refused: %s" % p.stderr.strip())

    # generation_config.json gives the defaults; the command line overrides them.
    cfg_dir = os.path.join(tmp, "with_config")
    shutil.copytree(MODEL, cfg_dir)
    with open(os.path.join(cfg_dir, "generation_config.json"), "w") as f:
        json.dump({"do_sample": True, "temperature": 0.8, "top_k": 6, "max_new_tokens": 9, "eos_token_id": [2],
                   "bos_token_id": 1, "pad_token_id": 0}, f)
    base = ["--src-ids", "1,9,9", "--seed", "5"]
    check(generated("--model", cfg_dir, *base) ==
          generated("--model", MODEL, *base, "--do-sample", "--temperature", "0.8", "--top-k", "6",
                    "--max-new-tokens", "9"), "generation_config.json defaults equal the same options given")
    check(generated("--model", cfg_dir, *base, "--greedy", "--max-new-tokens", "10") ==
          generated("--model", MODEL, *base, "--max-new-tokens", "10"), "--greedy overrides do_sample")

    # Text in and out with a char tokenizer (ids 4.. are a-z, 0-9).
    tok_dir = os.path.join(tmp, "with_tokenizer")
    shutil.copytree(MODEL, tok_dir)
    with open(os.path.join(tok_dir, "tokenizer.json"), "w") as f:
        json.dump({"type": "char", "vocab": ["<pad>", "<bos>", "<eos>", "<unk>"] + list("abcdefghijklmnopqrstuvwxyz0123456789"),
                   "pad_id": 0, "bos_id": 1, "eos_id": 2, "unk_id": 3}, f)
    text_args = ["--model", tok_dir, "--prompt", "bcd", "--do-sample", "--seed", "3", "--temperature", "2",
                 "--top-k", "0", "--max-new-tokens", "14"]
    j = json.loads(run(*text_args, "--json").stdout)
    text = j["texts"][0]
    plain = run(*text_args)
    streamed = run(*text_args, "--stream")
    check(plain.stdout == text + "\n" and streamed.stdout == text + "\n",
          "text out, streamed and not, equals the JSON text %r" % text)
    check(generated("--model", MODEL, "--src-ids", "5,6,7", *text_args[4:]) == j["sequences"][0],
          "--prompt bcd equals --src-ids 5,6,7")
    if len(j["sequences"][0]) == 14:
        check("was cut at --max-new-tokens 14" in plain.stderr, "the max-new-tokens note on stderr")
    starts = [i for i in range(2, len(text) - 1) if text[i:i + 2].isalnum()]
    if starts:
        stop = text[starts[0]:starts[0] + 2]
        cut = text[:text.find(stop)]
        for extra in [[], ["--stream"]]:
            p = run(*text_args, "--stop", stop, "--stop", "never-produced", *extra)
            check(p.stdout == cut + "\n" and "cut at" not in p.stderr,
                  "--stop %r %s ends the text before it: %r" % (stop, " ".join(extra), p.stdout))
    else:
        check(False, "the sampled text %r is long enough to test --stop" % text)
    p = run(*text_args, "--stop", "zzzzzzzz")
    check(p.stdout == text + "\n", "a stop string never produced is not an error")

    # Bad input: one error line, exit 1 (2 for a bad option value: a usage error).
    bad_cfg = os.path.join(tmp, "bad_config")
    shutil.copytree(MODEL, bad_cfg)
    with open(os.path.join(bad_cfg, "generation_config.json"), "w") as f:
        f.write('{"top_k": "many"}')
    ids = ["--src-ids", "1,5"]
    for args, msg, code in [  # 2: a bad option value (a usage error); 1: bad input
            (["--model", MODEL, *ids, "--do-sample", "--top-p", "0"], "top_p (--top-p) must be in (0, 1], got 0", 2),
            (["--model", MODEL, *ids, "--top-p", "1.5"], "top_p (--top-p) must be in (0, 1], got 1.5", 2),
            (["--model", MODEL, *ids, "--temperature", "-1"], "temperature (--temperature) must be a finite number > 0, got -1", 2),
            (["--model", MODEL, *ids, "--temperature", "nan"], "got nan", 2),
            (["--model", MODEL, *ids, "--top-k", "-2"], "top_k (--top-k) must be >= 0 (0: off), got -2", 2),
            (["--model", MODEL, *ids, "--kv-cache", "bf16"], "--kv-cache: bf16 not in {auto,f32,f16}", 2),
            (["--model", MODEL, *ids, "--do-sample", "--beam", "2"], "beam sampling is not supported", 2),
            (["--model", bad_cfg, *ids], bad_cfg + "/generation_config.json: \"top_k\" must be an integer", 1),
            (["--model", tok_dir, "--prompt", ""], "prompt #1 is empty and the model has no bos_token_id", 1),
            (["--model", MODEL, "--prompt", "abc"], "has no tokenizer", 1),
            (["--model", MODEL, *ids, "--stop", "x"], "--stop needs a tokenizer", 1)]:
        p = run(*args, ok=False)
        errors = [l for l in p.stderr.splitlines() if not l.startswith("vkformer: device")]
        check(p.returncode == code and len(errors) == 1 and errors[0].startswith("vkformer: error: ") and msg in errors[0],
              "%s -> %s" % (" ".join(args[2:]), errors))

sys.exit("%d failure(s)" % len(failures) if failures else 0)
