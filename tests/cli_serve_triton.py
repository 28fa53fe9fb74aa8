#!/usr/bin/python3
"""`vkformer serve` and Triton's binary tensor data extension (issue 29 #22), on
127.0.0.1: tritonclient.http (pinned, tools/triton_client/.venv, `make triton-client`)
runs infer with binary data (its default: "Inference-Header-Content-Length" and raw
bytes after the JSON, outputs in binary) and with JSON, on an embedding model (texts
and input_ids) and a generative one; both equal the JSON route's and /v1/embeddings'
results. Then raw requests whose binary part is wrong get 400 naming what is wrong.

    cli_serve_triton.py VKFORMER_BINARY REPO_ROOT [HF_MODELS_DIR]   ($VKF_HF_MODELS first; st_mean_norm, models/dates)
"""
import http.client
import json
import os
import struct
import subprocess
import sys

from serve_harness import Server, check, finish, message

cli, root = sys.argv[1:3]
hf = os.environ.get("VKF_HF_MODELS") or (sys.argv[3] if len(sys.argv) > 3 else os.path.join(root, "build", "hf-models"))
st_dir = os.path.join(hf, "st_mean_norm")
st = os.path.basename(st_dir)
TEXT, DATE = "A man is eating food.", "5 mar 2021"
venv_py = os.path.join(root, "tools", "triton_client", ".venv", "bin", "python")

s = Server(cli, "--model", st_dir, "--model", "dates=" + os.path.join(root, "models", "dates"))


def close(a, b, tol=1e-6):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


# The references: the JSON v2 route and /v1/embeddings.
_, _, v1 = s.request("/v1/embeddings", {"model": st, "input": [TEXT, "a second text"]})
want_embed = [d["embedding"] for d in v1["data"]]
_, _, j = s.request(f"/v2/models/{st}/infer", {"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 4],
                                                          "data": [2, 5, 6, 3]}]})
want_ids_embed = j["outputs"][0]["data"]
_, _, j = s.request("/v2/models/dates/infer", {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1],
                                                          "data": [DATE]}], "parameters": {"max_tokens": 12}})
want_text = j["outputs"][0]["data"]
want_ids = j["outputs"][1]["data"]

status, _, meta = s.request("/v2")
check("binary_tensor_data" in meta.get("extensions", []), f"GET /v2 lists binary_tensor_data: {meta}")

if not os.path.exists(venv_py):
    check(False, "tritonclient ran (`make triton-client` installs it in tools/triton_client/.venv)")
else:
    p = subprocess.run([venv_py, os.path.join(root, "tests", "serve_triton_client.py"), f"{s.host}:{s.port}", st,
                        "dates", TEXT, DATE], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        check(False, "tritonclient ran: " + p.stderr[-800:])
    else:
        r = json.loads(p.stdout)
        check(r["live"] and r["ready"] and "binary_tensor_data" in r["extensions"],
              f"tritonclient: live, ready, extensions {r['extensions']}")
        for key in ("binary", "json"):
            check(all(close(a, b) for a, b in zip(r[key + "_embedding"], want_embed)) and len(r[key + "_embedding"]) == 2,
                  f"tritonclient, {key} data: 2 text embeddings equal /v1/embeddings'")
            check(close(r[key + "_ids_embedding"][0], want_ids_embed[:len(r[key + "_ids_embedding"][0])])
                  and len(r[key + "_ids_embedding"][0]) == len(want_ids_embed),
                  f"tritonclient, {key} data: input_ids (INT64) embedding equals the JSON route's")
            check(r[key + "_text_output"] == want_text and sum(r[key + "_output_ids"], []) == want_ids,
                  f"tritonclient, {key} data: generation {r[key + '_text_output']} equals the JSON route's {want_text}")
        check(r["error"] is not None and "no-such-model" in r["error"],
              f"tritonclient: an unknown model is its exception with our message: {r['error']}")


# ---- raw requests: the binary part's errors are 400 naming what is wrong.
def post(path, body, json_len):
    c = http.client.HTTPConnection(s.host, s.port, timeout=60)
    c.request("POST", path, body=body, headers={"Content-Type": "application/octet-stream",
                                                "Inference-Header-Content-Length": str(json_len)})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict(r.getheaders()), data


def binary_request(raw, size=None, datatype="BYTES", shape=(1,), name="text", params=None):
    head = {"inputs": [{"name": name, "datatype": datatype, "shape": list(shape),
                        "parameters": {"binary_data_size": len(raw) if size is None else size}}]}
    head.update(params or {})
    text = json.dumps(head).encode()
    return text + raw, len(text)


def elem(t):
    return struct.pack("<I", len(t)) + t


both = b'{"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "data": ["x"], "parameters": {"binary_data_size": 5}}]}'


path = f"/v2/models/{st}/infer"
body, n = binary_request(elem(TEXT.encode()))
status, h, data = post(path, body, n)
check(status == 200 and "Inference-Header-Content-Length" not in h and
      close(json.loads(data)["outputs"][0]["data"], want_embed[0]),
      f"raw: a binary text input, JSON output (no binary_data_output): {status}")
body, n = binary_request(elem(TEXT.encode()), params={"parameters": {"binary_data_output": True}})
status, h, data = post(path, body, n)
k = int(h.get("Inference-Header-Content-Length", "-1"))
if status == 200 and k > 0:
    head = json.loads(data[:k])
    floats = list(struct.unpack(f"<{(len(data) - k) // 4}f", data[k:]))
    check(head["outputs"][0]["parameters"]["binary_data_size"] == len(data) - k and close(floats, want_embed[0]),
          "raw: binary_data_output: the embedding's float32 bytes follow the JSON")
else:
    check(False, f"raw: binary_data_output: {status} {data[:200]!r}")
for what, (body, n), needle in (
        ("Inference-Header-Content-Length past the body", (b'{"inputs": []}', 999), "Inference-Header-Content-Length"),
        ("binary_data_size past the bytes", binary_request(elem(b"abc"), size=100), "binary_data_size"),
        ("bytes no input claims", binary_request(elem(b"abc") + b"extra", size=7), "accounts for"),
        ("a BYTES element running past its tensor", binary_request(struct.pack("<I", 50) + b"abc"), "runs past"),
        ("INT64 bytes not a multiple of 8", binary_request(b"\0" * 12, datatype="INT64", shape=(1, 2), name="input_ids"),
         "whole number"),
        ("both data and binary_data_size", (both + elem(b"x"), len(both)), "both"),
        ("an unknown requested output", binary_request(elem(b"x"), params={"outputs": [{"name": "nope"}]}), "no output"),
        ("binary_data_output not a boolean", binary_request(elem(b"x"), params={"parameters": {"binary_data_output": 1}}),
         "binary_data_output")):
    status, _, data = post(path, body, n)
    try:
        msg = message(json.loads(data))
    except ValueError:
        msg = data[:200].decode(errors="replace")
    check(status == 400 and needle in msg, f"raw: {what} -> 400: {status} {msg[:140]}")
check(s.request("/health")[0] == 200, "the server still serves")
check(s.stop() == 0, "SIGTERM: exit 0")
finish()
