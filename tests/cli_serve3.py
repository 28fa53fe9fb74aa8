#!/usr/bin/python3
"""`vkformer serve` over loopback, the request-parsing defects of issue 29
(reliability round 3): boolean fields ("stream", "echo") of the wrong type are
400 naming the field, never 500; "temperature" 1e-308 / 5e-324 give greedy's ids,
never garbage; "top_p" 0's message says the range it checks; v2 "input_ids" obey
the model's max_seq_length as /v1/embeddings does; other methods on known routes
are 405 with an Allow header.

    cli_serve3.py VKFORMER_BINARY REPO_ROOT [HF_MODELS_DIR]   ($VKF_HF_MODELS first; st_mean_norm,
    llama_chat; models/dates)
"""
import http.client
import json
import os
import sys

from serve_harness import Server, check, finish, message

cli, root = sys.argv[1:3]
hf = os.environ.get("VKF_HF_MODELS") or (sys.argv[3] if len(sys.argv) > 3 else os.path.join(root, "build", "hf-models"))
st_dir = os.path.join(hf, "st_mean_norm")
dates_dir = os.path.join(root, "models", "dates")

s = Server(cli, "--model", st_dir, "--model", "dates=" + dates_dir, "--model", "chat=" + os.path.join(hf, "llama_chat"),
           "--max-tokens", "64")
DATE = "5 mar 2021"

# ---- #17: booleans of the wrong type are 400 naming the field (was 500 type_error.302; "echo": "yes" ignored).
for route, base in (("/v1/completions", {"model": "dates", "prompt": DATE, "max_tokens": 3}),
                    ("/v1/chat/completions", {"model": "chat", "messages": [{"role": "user", "content": "hi"}],
                                              "max_tokens": 3})):
    for key, value in (("stream", "yes"), ("stream", 1), ("stream", [True]), ("echo", "yes"), ("echo", 1)):
        if key == "echo" and route != "/v1/completions":
            continue  # chat has no "echo"
        status, _, j = s.request(route, dict(base, **{key: value}))
        check(status == 400 and f'"{key}" must be true or false' in message(j),
              f"{route} {key}: {json.dumps(value)} -> 400 naming {key}: {status} {message(j)[:150]}")
    for key, value in (("stream", False), ("stream", None), ("echo", False)):
        if key == "echo" and route != "/v1/completions":
            continue
        status, _, j = s.request(route, dict(base, **{key: value}))
        check(status == 200, f"{route} {key}: {json.dumps(value)} is fine: {status} {message(j)[:150]}")
    if route != "/v1/completions":
        continue
    status, _, j = s.request(route, dict(base, echo=True))
    check(status == 400 and '"echo" is not supported' in message(j), f"{route} echo: true is refused: {status}")

# ---- #15: a temperature whose division overflows gives greedy's ids, never garbage.
_, _, greedy = s.request("/v1/completions", {"model": "dates", "prompt": DATE, "max_tokens": 10, "temperature": 0})
for t in (1e-308, 5e-324, 1e-300):
    status, _, j = s.request("/v1/completions", {"model": "dates", "prompt": DATE, "max_tokens": 10,
                                                  "temperature": t, "seed": 3})
    check(status == 200 and j["choices"][0]["tokens"] == greedy["choices"][0]["tokens"],
          f"temperature {t}: greedy's tokens {greedy['choices'][0]['tokens']}, got {status} "
          f"{j['choices'][0]['tokens'] if status == 200 else message(j)}")

# ---- #21: top_p 0's message says the real range.
status, _, j = s.request("/v1/completions", {"model": "dates", "prompt": DATE, "top_p": 0, "temperature": 1})
check(status == 400 and '"top_p" must be a number in (0, 1]' in message(j), f"top_p 0: {status} {message(j)}")
status, _, j = s.request("/v1/completions", {"model": "dates", "prompt": DATE, "temperature": 101})
check(status == 400 and '"temperature" must be a number in [0, 100]' in message(j), f"temperature 101: {message(j)}")

# ---- #21: v2 input_ids longer than the model's max_seq_length are refused, as /v1/embeddings refuses them.
limit = json.load(open(os.path.join(st_dir, "sentence_bert_config.json")))["max_seq_length"]
st = os.path.basename(st_dir)
for n, ok in ((limit, True), (limit + 1, False)):
    ids = [2] + [5] * (n - 2) + [3]
    status, _, j1 = s.request("/v1/embeddings", {"model": st, "input": [ids]})
    status2, _, j2 = s.request(f"/v2/models/{st}/infer", {"inputs": [{"name": "input_ids", "datatype": "INT64",
                                                                      "shape": [1, n], "data": ids}]})
    check((status == 200) == ok and (status2 == 200) == ok,
          f"{n} ids (max_seq_length {limit}): v1 {status}, v2 {status2} {message(j2)[:120]}")
    if not ok:
        check(status2 == 400 and "more than the model's" in message(j2), f"v2 names the limit: {message(j2)}")

# ---- #21: other methods on known routes are 405 with Allow; unknown routes stay 404.
for method, path, allow in (("PUT", "/v1/embeddings", "POST"), ("OPTIONS", "/v1/completions", "POST"),
                            ("DELETE", f"/v2/models/{st}/infer", "POST"), ("GET", "/v1/embeddings", "POST"),
                            ("POST", "/v1/models", "GET"), ("PUT", "/health", "GET")):
    c = http.client.HTTPConnection(s.host, s.port, timeout=60)
    c.request(method, path, body=b"{}" if method in ("PUT", "POST") else None)
    r = c.getresponse()
    body = r.read().decode()
    check(r.status == 405 and allow in (r.getheader("Allow") or "") and method in body,
          f"{method} {path}: 405 Allow {allow}: {r.status} {r.getheader('Allow')} {body[:100]}")
    c.close()
# ---- #1: JSON nested 200,000 deep (400 KB, under --max-body-kb) is 400 naming the limit; it killed the
# server (SIGSEGV: the v2 "id" is echoed by a recursive copy, "parameters" too on a generative model).
def post_raw(path, body):
    c = http.client.HTTPConnection(s.host, s.port, timeout=60)
    c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, text


deep = "[" * 200000 + "]" * 200000
ids_input = '{"name": "input_ids", "datatype": "INT64", "shape": [1, 3], "data": [2, 5, 3]}'
for path, body in ((f"/v2/models/{st}/infer", '{"id": ' + deep + ', "inputs": [' + ids_input + ']}'),
                   ("/v2/models/dates/infer", '{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], '
                                              '"data": ["5 mar 2021"]}], "parameters": {"x": ' + deep + '}}'),
                   ("/v1/completions", '{"model": "dates", "prompt": "5 mar 2021", "stop": ' + deep + '}')):
    status, text = post_raw(path, body.encode())
    check(status == 400 and "nested deeper than 64 levels" in text,
          f"{path}: 200,000-deep JSON -> 400 naming the limit: {status} {text[:150]}")
    check(s.request("/health")[0] == 200, f"{path}: the server still answers /health after deep JSON")
# 64 levels (the body, "parameters" and 62 arrays) are fine: the limit is where it says.
status, text = post_raw(f"/v2/models/{st}/infer", ('{"id": "a", "parameters": {"x": ' + "[" * 62 + "]" * 62 +
                                                   '}, "inputs": [' + ids_input + ']}').encode())
check(status != 400 or "nested deeper" not in text, f"64 levels are not refused: {status} {text[:150]}")

status, _, _ = s.request("/v1/nothing", {})
check(status == 404, f"POST /v1/nothing stays 404: {status}")
check(s.request("/health")[0] == 200, "the server still serves")

rc = s.stop()
check(rc == 0, f"SIGTERM: exit {rc}")
finish()
