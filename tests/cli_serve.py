#!/usr/bin/python3
"""`vkformer serve` over loopback: OpenAI's /v1 routes and the Open Inference
Protocol v2 against the CLI's own results for the same inputs, concurrent
requests batched and equal to the same request alone, every bad-input and limit
case (the server keeps serving), the bounded queue (503 + Retry-After), the API
key, and SIGTERM answering every request in flight. No timing is asserted; the
load figures are printed.

    cli_serve.py VKFORMER_BINARY REPO_ROOT   (the tiny sentence-transformers model of
    `make hf-test-models` from $VKF_HF_MODELS, default build/hf-models; models/dates)
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import numpy as np

import serve_harness as harness
from serve_harness import check, failures

cli, root = sys.argv[1:3]
st_dir = os.path.join(os.environ.get("VKF_HF_MODELS", os.path.join(root, "build", "hf-models")), "st_mean_norm")
dates_dir = os.path.join(root, "models", "dates")
servers = []


def Server(*args):
    """A `vkformer serve` (serve_harness.Server) kept for the validation check at the end."""
    srv = harness.Server(cli, *args)
    servers.append(srv)
    return srv


def cli_json(*args):
    p = subprocess.run([cli, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{p.stderr}")
    return p.stdout


TEXTS = ["Hello world.", "A man is eating food.", "The quick brown fox jumps over the lazy dog.", "a",
         "Ça coûte combien ? 日本語", "Numbers 1, 22 and 333."] + [f"sentence number {i} of the load test" for i in range(26)]
DATES = ["March 5, 2021", "5 mar 2021", "2021/03/05", "Tuesday, 7 June 1994"]

st = os.path.basename(os.path.normpath(st_dir))
want_embed = json.loads(cli_json("embed", "--model", st_dir, "--json", "--", *TEXTS))["embeddings"]
want_dates = cli_json("translate", "--model", dates_dir, *DATES).splitlines()

s = Server("--model", st_dir, "--model", "dates=" + dates_dir, "--max-body-kb", "64", "--max-inputs", "40",
           "--max-tokens", "64")

# ---- discovery, health, metadata
status, _, j = s.request("/v1/models")
check(status == 200 and [m["id"] for m in j["data"]] == [st, "dates"], "GET /v1/models lists both models")
check(s.request("/health")[0] == 200, "GET /health")
check(s.request("/v2/health/live")[2] == {"live": True} and s.request("/v2/health/ready")[2] == {"ready": True},
      "GET /v2/health/live and /ready")
check(s.request("/v2")[2]["name"] == "vkformer", "GET /v2: server metadata")
status, _, meta = s.request(f"/v2/models/{st}")
check(status == 200 and meta["outputs"][0]["name"] == "embedding" and meta["outputs"][0]["datatype"] == "FP32",
      "GET /v2/models/{name}: metadata with inputs and outputs")
check(s.request(f"/v2/models/{st}/ready")[0] == 200 and s.request("/v2/models/nope/ready")[0] == 404,
      "GET /v2/models/{name}/ready: 200, and 404 for an unknown model")


# ---- embeddings: OpenAI's shape, equal to `vkformer embed`
def close(a, b, tol=1e-6):
    return np.max(np.abs(np.array(a) - np.array(b))) <= tol


status, _, j = s.request("/v1/embeddings", {"model": st, "input": TEXTS[:3]})
check(status == 200 and j["object"] == "list" and [d["index"] for d in j["data"]] == [0, 1, 2]
      and j["usage"]["prompt_tokens"] == j["usage"]["total_tokens"] > 0, "POST /v1/embeddings: OpenAI's shape")
check(all(close(d["embedding"], want_embed[i]) for i, d in enumerate(j["data"])),
      "embeddings equal `vkformer embed` on the same texts")
_, _, one = s.request("/v1/embeddings", {"model": st, "input": TEXTS[1], "encoding_format": "base64"})
import base64  # noqa: E402
check(close(np.frombuffer(base64.b64decode(one["data"][0]["embedding"]), "<f4"), want_embed[1]),
      "encoding_format base64: little-endian float32")
_, _, v2 = s.request(f"/v2/models/{st}/infer",
                     {"id": "r1", "inputs": [{"name": "text", "datatype": "BYTES", "shape": [2], "data": TEXTS[:2]}]})
out = v2["outputs"][0]
check(v2["id"] == "r1" and out["datatype"] == "FP32" and out["shape"] == [2, len(want_embed[0])]
      and close(np.array(out["data"]).reshape(2, -1), want_embed[:2]), "POST /v2/models/{name}/infer (BYTES text)")

# ---- concurrent embeddings: batched, each equal to the same request alone
solo = [s.request("/v1/embeddings", {"model": st, "input": t})[2]["data"][0]["embedding"] for t in TEXTS]
t0 = time.monotonic()
for t in TEXTS:
    s.request("/v1/embeddings", {"model": st, "input": t})
seq_rate = len(TEXTS) / (time.monotonic() - t0)
results, latencies, lock = [], [], threading.Lock()


def client(c):
    for r in range(25):
        i = (c * 25 + r) % len(TEXTS)
        t = time.monotonic()
        status, _, j = s.request("/v1/embeddings", {"model": st, "input": TEXTS[i]})
        with lock:
            latencies.append(time.monotonic() - t)
            results.append((i, status, j))


t0 = time.monotonic()
threads = [threading.Thread(target=client, args=(c,)) for c in range(16)]
for th in threads:
    th.start()
for th in threads:
    th.join()
elapsed = time.monotonic() - t0
ok = [r for r in results if r[1] == 200]
check(len(results) == 400 and len(ok) == 400, f"16 clients x 25 requests: {len(ok)}/400 answered 200")
# Bit for bit, except that a sequence of at most 4 tokens alone takes the GEMM's gemv
# variant (another summation order), and in a batch the blocked one: fp32 rounding.
diffs = [np.max(np.abs(np.array(j["data"][0]["embedding"]) - solo[i])) for i, _, j in ok]
exact = sum(d == 0 for d in diffs)
check(max(diffs) <= 1e-6, f"every concurrent result equals the same request alone: {exact}/400 bit for bit, "
      f"the largest difference {max(diffs):.2g}")
metrics = s.request("/metrics")[2]
count = float(re.search(r'vkformer_batch_size_count\{kind="embedding"\} (\S+)', metrics).group(1))
total = float(re.search(r'vkformer_batch_size_sum\{kind="embedding"\} (\S+)', metrics).group(1))
check(total / count > 1, f"requests were batched: {total:.0f} sequences in {count:.0f} submissions")
lat = sorted(latencies)
print(f"load: {400 / elapsed:.1f} requests/s with 16 clients vs {seq_rate:.1f} sequential "
      f"({400 / elapsed / seq_rate:.1f}x); p50 {lat[200] * 1000:.1f} ms, p99 {lat[395] * 1000:.1f} ms")

# ---- completions: the dates model as a translator, equal to `vkformer translate`
status, _, j = s.request("/v1/completions", {"model": "dates", "prompt": DATES, "temperature": 0})
check(status == 200 and [c["text"] for c in j["choices"]] == want_dates
      and all(c["finish_reason"] == "stop" for c in j["choices"]), "POST /v1/completions equals `vkformer translate`")
req = urllib.request.Request(s.url + "/v1/completions", data=json.dumps(
    {"model": "dates", "prompt": DATES[0], "stream": True}).encode())
with urllib.request.urlopen(req, timeout=60) as r:
    events = [line[6:] for line in r.read().decode().split("\n") if line.startswith("data: ")]
pieces = [json.loads(e)["choices"][0] for e in events[:-1]]
check(events[-1] == "[DONE]" and "".join(p["text"] for p in pieces) == want_dates[0]
      and pieces[-1]["finish_reason"] == "stop" and len(pieces) > 2,
      f"stream: {len(pieces)} server-sent events whose text is the same, then [DONE]")
_, _, j = s.request("/v1/completions", {"model": "dates", "prompt": DATES[0], "max_tokens": 3})
check(j["choices"][0]["finish_reason"] == "length" and len(j["choices"][0]["tokens"]) == 3, "max_tokens: finish_reason length")
_, _, j = s.request("/v1/completions", {"model": "dates", "prompt": DATES[0], "stop": "-03"})
check(j["choices"][0]["text"] == want_dates[0].split("-03")[0], "a stop string ends the text and is not in it")
_, _, a = s.request("/v1/completions", {"model": "dates", "prompt": DATES[:2], "temperature": 1.5, "seed": 7, "n": 2})
_, _, b = s.request("/v1/completions", {"model": "dates", "prompt": DATES[:2], "temperature": 1.5, "seed": 7, "n": 2})
check(len(a["choices"]) == 4 and a["choices"] == b["choices"], "sampling with a seed and n: 4 choices, reproducible")


# ---- OpenAI's official Node client (npm openai, pinned in tools/openai_client)
node_client = os.path.join(root, "tests", "serve_openai_client.mjs")
p = subprocess.run(["node", node_client, s.url, st, "dates", TEXTS[1], DATES[0]], capture_output=True, text=True,
                   timeout=120)
if p.returncode != 0:
    check(False, "the openai npm client ran (`make openai-client` installs it): " + p.stderr[-500:])
else:
    r = json.loads(p.stdout)
    check(close(r["embedding"], want_embed[1]) and r["usage"]["prompt_tokens"] > 0,
          "openai npm client: embeddings.create equals `vkformer embed`")
    check(r["text"] == want_dates[0] and r["finish"] == "stop", "openai npm client: completions.create")
    check(r["streamed"] == want_dates[0] and r["chunks"] > 2, f"openai npm client: a stream of {r['chunks']} chunks")
    check(r["error"] is not None and r["error"]["status"] == 404 and "no-such-model" in r["error"]["message"],
          "openai npm client: an unknown model is its NotFoundError (404) with our message")

# ---- bad input and limits: a 4xx in OpenAI's error shape, and the server keeps serving
def error_case(what, status_want, path, body=None, raw=None, headers=None):
    status, _, j = s.request(path, body, raw=raw, headers=headers)
    check(status == status_want and isinstance(j, dict) and "error" in j,
          f"{what}: {status} {j.get('error') if isinstance(j, dict) else j!r:.120}")


error_case("malformed JSON", 400, "/v1/embeddings", raw=b'{"input": "x"')
error_case("not an object", 400, "/v1/embeddings", raw=b'["x"]')
error_case("invalid UTF-8", 400, "/v1/embeddings", raw=b'{"model": "%s", "input": "\xff\xfe"}' % st.encode())
error_case("wrong type of input", 400, "/v1/embeddings", {"model": st, "input": 5})
error_case("empty input", 400, "/v1/embeddings", {"model": st, "input": ""})
error_case("empty list", 400, "/v1/embeddings", {"model": st, "input": []})
error_case("unknown model", 404, "/v1/embeddings", {"model": "nope", "input": "x"})
error_case("no model with two served", 400, "/v1/embeddings", {"input": "x"})
error_case("embeddings from a generator", 400, "/v1/embeddings", {"model": "dates", "input": "x"})
error_case("completions from an encoder", 400, "/v1/completions", {"model": st, "prompt": "x"})
error_case("too many inputs", 400, "/v1/embeddings", {"model": st, "input": ["x"] * 41})
error_case("body too large", 413, "/v1/embeddings", {"model": st, "input": "x" * 70000})
error_case("max_tokens above --max-tokens", 400, "/v1/completions", {"model": "dates", "prompt": "x", "max_tokens": 65})
error_case("top_p above 1", 400, "/v1/completions", {"model": "dates", "prompt": "x", "top_p": 1.5})
error_case("ids outside the vocabulary", 400, "/v1/embeddings", {"model": st, "input": [[1, 99999999]]})
error_case("v2: wrong datatype", 400, f"/v2/models/{st}/infer",
           {"inputs": [{"name": "text", "datatype": "FP32", "shape": [1], "data": [1.0]}]})
error_case("v2: shape and data disagree", 400, f"/v2/models/{st}/infer",
           {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [2], "data": ["x"]}]})
deep = b"[" * 15000 + b"]" * 15000  # quoted or copied recursively, deep nesting overflows the stack
as_json = {"Content-Type": "application/json"}
error_case("deeply nested temperature", 400, "/v1/completions",
           raw=b'{"model": "dates", "prompt": "x", "temperature": ' + deep + b'}', headers=as_json)
error_case("v2: deeply nested data", 400, f"/v2/models/{st}/infer",
           raw=b'{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": [' + deep + b']}]}',
           headers=as_json)
# urllib, like curl -d, sends a form's Content-Type: the body is read as JSON whatever its type says, within
# --max-body-kb (cpp-httplib capped form bodies at 8 KiB).
status, _, j = s.request("/v1/embeddings", {"model": st, "input": "x" * 9000},
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
check(status == 200, f"a 9 KB body sent as a form is served as JSON: {status}")
check(s.request("/v1/embeddings", {"model": st, "input": "x" * 9000}, headers=as_json)[0] == 200,
      "the same body as JSON is served")
error_case("unknown route", 404, "/v1/nothing")
check(s.request("/health")[0] == 200 and s.request("/v1/embeddings", {"model": st, "input": "x"})[0] == 200,
      "after every bad request the server still serves")
check(s.stop() == 0, "SIGTERM: exit 0")

# ---- the bounded queue: beyond --max-queue, 503 with Retry-After
q = Server("--model", st_dir, "--max-queue", "1", "--max-batch", "2", "--batch-window-ms", "400")
codes = []


def one(_):
    status, h, _ = q.request("/v1/embeddings", {"input": TEXTS[0]})
    codes.append((status, h.get("Retry-After")))


threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
for th in threads:
    th.start()
for th in threads:
    th.join()
check(any(c == (503, "1") for c in codes) and any(c[0] == 200 for c in codes),
      f"--max-queue 1: {sum(c[0] == 503 for c in codes)} of 8 got 503 with Retry-After, the rest 200")
check(q.stop() == 0, "SIGTERM: exit 0")

# ---- --api-key, and SIGTERM with requests in flight
k = Server("--model", st_dir, "--api-key", "sekrit", "--batch-window-ms", "300")
check(k.request("/v1/embeddings", {"input": "x"})[0] == 401, "--api-key: no key, 401")
check(k.request("/v1/embeddings", {"input": "x"}, headers={"Authorization": "Bearer sekrit"})[0] == 200,
      "--api-key: the key, 200")
check(k.request("/v2/health/ready")[0] == 200, "--api-key: health checks need no key")
codes = []
threads = [threading.Thread(target=lambda: codes.append(
    k.request("/v1/embeddings", {"input": TEXTS[2]}, headers={"Authorization": "Bearer sekrit"})[0])) for _ in range(6)]
for th in threads:
    th.start()
time.sleep(0.1)  # the requests wait in the 300 ms batch window
check(k.stop() == 0, "SIGTERM with requests in flight: exit 0")
for th in threads:
    th.join()
check(codes == [200] * 6, f"every request in flight at SIGTERM was answered: {codes}")

# ---- continuous batching: 8 concurrent streams on the tiny HF GPT-2, each equal to its run alone
def tiny_gpt2():
    """gpt2_lm of `make hf-test-models` with a character tokenizer: one character per id."""
    src = os.path.join(os.path.dirname(st_dir), "gpt2_lm")
    d = tempfile.mkdtemp(prefix="serve-gpt2-")
    for f in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(os.path.join(src, f), d)
    vocab = ["<pad>", "<unk>"] + [chr(0x100 + i) for i in range(2, 156)] + ["<bos>"]
    vocab[99] = "<eos>"
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump({"type": "char", "vocab": vocab, "pad_id": 0, "unk_id": 1, "bos_id": 156, "eos_id": 99}, f)
    return d, vocab


t_gen = time.monotonic()
gpt2_dir, gpt2_vocab = tiny_gpt2()
# Prompts of 1 to 8 characters and 6 to 27 new tokens, so they join and leave at
# different steps; two sample with their own seeds.
GEN = [{"prompt": "".join(gpt2_vocab[2 + (7 * i + 3 * k) % 150] for k in range(1 + i)), "max_tokens": 6 + 3 * i}
       for i in range(8)]
GEN[2].update(temperature=1.2, seed=5)
GEN[5].update(temperature=0.8, top_p=0.9, seed=6)


def stream(srv, body, started=None):
    """(text, finish_reason, True) of a streamed completion; (text so far, error message, False) after an error event."""
    req = urllib.request.Request(srv.url + "/v1/completions", data=json.dumps({"model": "gpt2", **body,
                                                                               "stream": True}).encode())
    text, finish, done = "", None, False
    try:
        r = urllib.request.urlopen(req, timeout=120)
    except urllib.error.HTTPError as e:  # refused before streaming (503 once the device is lost)
        return "", e.read().decode(), False
    with r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                break
            event = json.loads(line[6:])
            if "error" in event:
                return text, event["error"]["message"], False
            c = event["choices"][0]
            text += c["text"]
            finish = c["finish_reason"] or finish
            if started:
                started.set()
    return text, finish, done


def streams_together(srv, bodies, after_start=None):
    out, started = [None] * len(bodies), [threading.Event() for _ in bodies]

    def run(i):
        out[i] = stream(srv, bodies[i], started[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for th in threads:
        th.start()
    if after_start:
        for e in started:
            e.wait(60)
        after_start()
    for th in threads:
        th.join()
    return out


g = Server("--model", "gpt2=" + gpt2_dir)
alone = [g.request("/v1/completions", {"model": "gpt2", **b})[2]["choices"][0] for b in GEN]
made = sum(len(c["tokens"]) for c in alone)
t0 = time.monotonic()
solo_streams = [stream(g, b) for b in GEN]
solo_rate = made / (time.monotonic() - t0)
t0 = time.monotonic()
together = streams_together(g, GEN)
batch_rate = made / (time.monotonic() - t0)
check(all(t == (a["text"], a["finish_reason"], True) for t, a in zip(together, alone))
      and solo_streams == together, "8 concurrent streams: each one's text and finish_reason equal its request alone")
metrics = g.request("/metrics")[2]
count = float(re.search(r'vkformer_batch_size_count\{kind="decode_step"\} (\S+)', metrics).group(1))
total = float(re.search(r'vkformer_batch_size_sum\{kind="decode_step"\} (\S+)', metrics).group(1))
check(total / count > 1, f"generation steps were batched: {total:.0f} sequence-steps in {count:.0f} decode steps")
print(f"generation: {made} tokens in 8 streams, {batch_rate:.0f} tokens/s together vs {solo_rate:.0f} one "
      f"stream at a time ({batch_rate / solo_rate:.1f}x)")
# --kv-cache f16: the decode batch's caches and each request alone in fp16; batched equals alone.
h = Server("--model", "gpt2=" + gpt2_dir, "--kv-cache", "f16")
alone16 = [h.request("/v1/completions", {"model": "gpt2", **b})[2]["choices"][0] for b in GEN]
together16 = streams_together(h, GEN)
check(all(t == (a["text"], a["finish_reason"], True) for t, a in zip(together16, alone16)),
      "--kv-cache f16: 8 concurrent streams equal each request alone")
check(h.stop() == 0, "--kv-cache f16: SIGTERM, exit 0")
# The dates translator (enc–dec) batches too: 4 concurrent requests equal `vkformer translate`.
dates_out = [None] * len(DATES)


def translate_one(i):
    dates_out[i] = s2.request("/v1/completions", {"model": "dates", "prompt": DATES[i], "temperature": 0})[2]


s2 = Server("--model", "dates=" + dates_dir)
threads = [threading.Thread(target=translate_one, args=(i,)) for i in range(len(DATES))]
for th in threads:
    th.start()
for th in threads:
    th.join()
check([o["choices"][0]["text"] for o in dates_out] == want_dates, "4 concurrent translations equal `vkformer translate`")
check(s2.stop() == 0, "SIGTERM: exit 0")
# SIGTERM while the 8 are decoding: every stream ends complete, then the server exits 0.
codes = []
late = streams_together(g, GEN, after_start=lambda: codes.append(g.stop()))
check(codes == [0] and all(t == (a["text"], a["finish_reason"], True) for t, a in zip(late, alone)),
      "SIGTERM during batched generation: exit 0, and every stream in flight ended complete")

# ---- a device lost while serving (fault injection): not ready, 503s in OpenAI's shape, still live
os.environ["VKFORMER_FAULT_INJECT"] = "submit:device_lost:60"
f = Server("--model", "gpt2=" + gpt2_dir)
del os.environ["VKFORMER_FAULT_INJECT"]
results = []
for _ in range(20):  # until the 60th submission of the process fails
    results = streams_together(f, GEN)
    if f.request("/v2/health/ready")[0] != 200:
        break
status, _, j = f.request("/v1/completions", {"model": "gpt2", **GEN[0]})
check(f.request("/v2/health/ready")[0] == 503 and f.request("/health")[0] == 503,
      "device lost: /v2/health/ready and /health answer 503")
check(status == 503 and j["error"]["type"] and "device was lost" in j["error"]["message"],
      f"device lost: a completion gets 503 in OpenAI's error shape: {j}")
lost = [r for r in results if not r[2]]
check(lost and all("device was lost" in r[1] for r in lost),
      f"device lost: {len(lost)} of the 8 streams decoding then ended with its error event")
check(f.request("/v2/health/live")[0] == 200 and f.p.poll() is None, "device lost: the server is live, not crashed")
check(f.stop() == 0, "device lost: SIGTERM still exits 0")
print(f"generation batching and device loss: {time.monotonic() - t_gen:.1f} s")
shutil.rmtree(gpt2_dir)

log = "".join(line for srv in servers for line in srv.log)
check(not re.search("validation (error|warning)", log), "no validation message from any server")
print(f"cli_serve: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
