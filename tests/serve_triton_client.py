"""Triton's Python HTTP client (tritonclient.http, tools/triton_client/.venv) against
`vkformer serve`: run by tests/cli_serve_triton.py as

    serve_triton_client.py HOST:PORT EMBEDDING_MODEL GENERATIVE_MODEL TEXT DATE

and prints one JSON object of what it got: the server's metadata, and for each way of
sending (binary tensor data, tritonclient's default, or JSON) the outputs as lists."""
import json
import sys

import numpy as np
import tritonclient.http as httpclient

url, st, gen, text, date = sys.argv[1:6]
c = httpclient.InferenceServerClient(url)
out = {"live": c.is_server_live(), "ready": c.is_model_ready(st), "extensions": c.get_server_metadata()["extensions"]}


def texts(values, binary):
    t = httpclient.InferInput("text", [len(values)], "BYTES")
    t.set_data_from_numpy(np.array([v.encode() for v in values], dtype=np.object_), binary_data=binary)
    return t


for binary in (True, False):
    key = "binary" if binary else "json"
    # Embeddings: binary inputs and outputs (the client's default), or JSON both ways.
    outputs = None if binary else [httpclient.InferRequestedOutput("embedding", binary_data=False)]
    r = c.infer(st, [texts([text, "a second text"], binary)], outputs=outputs)
    out[key + "_embedding"] = r.as_numpy("embedding").tolist()
    ids = httpclient.InferInput("input_ids", [1, 4], "INT64")
    ids.set_data_from_numpy(np.array([[2, 5, 6, 3]], dtype=np.int64), binary_data=binary)
    r = c.infer(st, [ids], outputs=outputs)
    out[key + "_ids_embedding"] = r.as_numpy("embedding").tolist()
    # Generation: text_output binary and output_ids JSON (or both JSON).
    outputs = [httpclient.InferRequestedOutput("text_output", binary_data=binary),
               httpclient.InferRequestedOutput("output_ids", binary_data=False)]
    r = c.infer(gen, [texts([date], binary)], outputs=outputs, parameters={"max_tokens": 12})
    # BYTES come back as bytes from binary data, as str from JSON.
    out[key + "_text_output"] = [x.decode() if isinstance(x, bytes) else x for x in r.as_numpy("text_output").tolist()]
    out[key + "_output_ids"] = r.as_numpy("output_ids").tolist()
try:
    c.infer("no-such-model", [texts(["x"], True)])
    out["error"] = None
except Exception as e:  # InferenceServerException carrying our message
    out["error"] = str(e)
print(json.dumps(out))
