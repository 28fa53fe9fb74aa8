#!/usr/bin/python3
"""`vkformer serve --model FILE.gguf` on the real SmolLM2-135M-Instruct Q4_1 (`make
llm-models`) against its float64 reference (`make llm-golden`: tools/hf/gguf_reference.py,
transformers on the dequantized weights; golden.json):

- /v1/chat/completions at temperature 0 on the reference's conversations: the reply's
  content is the reference's greedy tokens decoded, its finish_reason says whether they
  ended at EOS or at max_tokens, and usage counts the reference's prompt ids (the file's
  chat template rendered by the server) and greedy tokens;
- the same request streamed: a role chunk first, deltas whose text is the same, the same
  finish_reason, then [DONE];
- /v1/completions at temperature 0 on the reference's prompt ids (plain and chat, in one
  batched request): each choice's token ids are the reference's greedy tokens.

    cli_serve_gguf.py VKFORMER_BINARY REPO_ROOT [HF_MODELS_DIR]   ($VKF_HF_MODELS first)
"""
import json
import os
import sys

from serve_harness import Server, check, finish, message

cli, root = sys.argv[1:3]
hf = os.environ.get("VKF_HF_MODELS") or (sys.argv[3] if len(sys.argv) > 3 else os.path.join(root, "build", "hf-models"))
gguf = os.path.join(root, "models", "llm", "SmolLM2-135M-Instruct.Q4_1.gguf")
golden_path = os.path.join(hf, "smollm2_q4_1", "golden.json")
for path, make in ((gguf, "make llm-models"), (golden_path, "make llm-golden")):
    if not os.path.exists(path):
        sys.exit(f"FAIL: {path} is missing: run `{make}`")
g = json.load(open(golden_path))
for key in ("chats", "greedy_text", "max_new_tokens"):
    if key not in g:
        sys.exit(f'FAIL: {golden_path} has no "{key}" (made by an older tools/hf/gguf_reference.py): '
                 "run `make llm-golden`")
N = g["max_new_tokens"]
chat0 = len(g["texts"]) - len(g["chats"])  # the conversations are the reference's last prompts
print(f"reference: {len(g['texts'])} prompts ({len(g['chats'])} conversations), greedy up to {N} tokens, "
      f"smallest top-1 - top-2 margin {g['greedy_margin']:.3g}")

s = Server(cli, "--model", "smollm2=" + gguf, "--max-tokens", str(N))

# ---- /v1/chat/completions, whole and streamed
for k, messages in enumerate(g["chats"], start=chat0):
    want_text, want_ids = g["greedy_text"][k], g["greedy"][k]
    want_finish = "length" if len(want_ids) == N else "stop"
    body = {"model": "smollm2", "messages": messages, "temperature": 0, "max_tokens": N}
    status, _, j = s.request("/v1/chat/completions", body)
    if status != 200:
        check(False, f"chat {k}: {status} {message(j)}")
        continue
    c = j["choices"][0]
    check(c["message"] == {"role": "assistant", "content": want_text} and c["finish_reason"] == want_finish,
          f"chat {k}: {c['message']['content']!r} ({c['finish_reason']}), the reference's {want_text!r} ({want_finish})")
    usage = {"prompt_tokens": len(g["ids"][k]), "completion_tokens": len(want_ids),
             "total_tokens": len(g["ids"][k]) + len(want_ids)}
    check(j["usage"] == usage, f"chat {k}: usage {j['usage']}, the reference's {usage}")

    events, done = s.events("/v1/chat/completions", body)
    choices = [e["choices"][0] for e in events]
    text = "".join(c["delta"].get("content", "") for c in choices)
    check(done and choices and choices[0]["delta"].get("role") == "assistant" and text == want_text
          and choices[-1]["finish_reason"] == want_finish and len(choices) > 2,
          f"chat {k} streamed: {len(choices)} chunks, text {text!r} ({choices[-1]['finish_reason'] if choices else None})"
          f"{'' if done else ', no [DONE]'}")

# ---- /v1/completions on the reference's ids: the greedy token ids themselves
status, _, j = s.request("/v1/completions", {"model": "smollm2", "prompt": g["ids"], "temperature": 0, "max_tokens": N})
if status != 200:
    check(False, f"completions on the reference ids: {status} {message(j)}")
else:
    for k, c in enumerate(j["choices"]):
        check(c["tokens"] == g["greedy"][k], f"completions {k} ({len(g['ids'][k])} prompt ids): tokens {c['tokens']}"
              + ("" if c["tokens"] == g["greedy"][k] else f", the reference's {g['greedy'][k]}"))

rc = s.stop()
check(rc == 0, f"SIGTERM: exit {rc}")
finish()
