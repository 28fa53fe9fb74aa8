#!/usr/bin/python3
"""Chat through the command line and the server, on llama_chat of `make
hf-test-models` (a tiny Qwen2 with Qwen2's ChatML template; tools/hf/tiny_llama.py):
`generate --chat` (with and without --system) and `vkformer chat` fed a two-turn
conversation on stdin equal transformers' apply_chat_template + greedy generate();
POST /v1/chat/completions with temperature 0 equals them too, streamed or not; a
model without a chat template gets 400; a template with a Jinja feature vkformer
does not have fails in one line naming it.

    cli_chat.py VKFORMER_BINARY HF_MODELS_DIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

cli, hf = sys.argv[1:3]
chat_dir = os.path.join(hf, "llama_chat")
plain_dir = os.path.join(hf, "llama_gqa")
golden = json.load(open(os.path.join(chat_dir, "golden.json")))
chats = golden["chats"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args, stdin=None):
    return subprocess.run([cli, "-q", *args], input=stdin, capture_output=True, text=True, timeout=600)


# generate --chat: one turn, greedy, the new ids and their text.
for c, system in ((chats[0], None), (chats[1], "be brief")):
    user = c["messages"][-1]["content"]
    args = ["generate", "--model", chat_dir, "--chat", user, "--greedy", "--max-new-tokens", "12", "--json"]
    if system:
        args += ["--system", system]
    p = run(*args)
    out = json.loads(p.stdout) if p.returncode == 0 else {}
    check(p.returncode == 0 and out["sequences"][0] == c["greedy_ids"] and out["texts"][0] == c["greedy"],
          f"generate --chat {user!r}{' --system' if system else ''}: {out.get('sequences')} vs {c['greedy_ids']} "
          f"{p.stderr.strip()[-200:]}")

# vkformer chat, piped: two user turns of one conversation, one answer per line.
p = run("chat", "--model", chat_dir, "--greedy", "--max-new-tokens", "12",
        stdin=chats[0]["messages"][-1]["content"] + "\n" + chats[2]["messages"][-1]["content"] + "\n")
want = chats[0]["greedy"] + "\n" + chats[2]["greedy"] + "\n"  # each answer, then a newline
check(p.returncode == 0 and p.stdout == want, f"chat, two turns piped: {p.stdout!r} vs {want!r} {p.stderr.strip()[-200:]}")

# Errors: no chat template; a template using a feature vkformer does not have.
p = run("generate", "--model", plain_dir, "--chat", "hi")
check(p.returncode == 1 and "tokenizer" in p.stderr and p.stderr.count("\n") == 1,
      f"--chat without a tokenizer: exit {p.returncode}, {p.stderr.strip()!r}")


def with_template(tmp, name, template):
    """A copy of llama_chat whose tokenizer_config.json has `template` (None: no chat_template)."""
    d = os.path.join(tmp, name)
    shutil.copytree(chat_dir, d)
    path = os.path.join(d, "tokenizer_config.json")
    cfg = json.load(open(path))
    cfg.pop("chat_template")
    if template is not None:
        cfg["chat_template"] = template
    json.dump(cfg, open(path, "w"))
    return d


def one_line(p):
    return len(p.stderr.strip().split("\n")) == 1


with tempfile.TemporaryDirectory() as tmp:
    plain = with_template(tmp, "no_template", None)
    for cmd in (["generate", "--model", plain, "--chat", "hi"], ["chat", "--model", plain]):
        p = run(*cmd, stdin="hi\n")
        check(p.returncode == 1 and "has no \"chat_template\"" in p.stderr and one_line(p),
              f"{cmd[0]} without a chat template: exit {p.returncode}, {p.stderr.strip()!r}")
    bad = with_template(tmp, "bad_template",
                        "{% macro greet(x) %}hi {{ x }}{% endmacro %}\n{{ greet(messages[0]['content']) }}")
    p = run("generate", "--model", bad, "--chat", "hi")
    check(p.returncode == 1 and "macro" in p.stderr and "line 1" in p.stderr and one_line(p),
          f"unsupported Jinja feature: exit {p.returncode}, {p.stderr.strip()!r}")

# The server: /v1/chat/completions against the same goldens.
srv = subprocess.Popen([cli, "serve", "--port", "0", "--model", f"chat={chat_dir}", "--model", f"plain={plain_dir}"],
                       stderr=subprocess.PIPE, text=True)
url, log = None, []
deadline = time.monotonic() + 300
while time.monotonic() < deadline:
    line = srv.stderr.readline()
    if not line:
        break
    log.append(line)
    m = re.search(r"serving \d+ model\(s\) on (http://[\d.]+:\d+)", line)
    if m:
        url = m.group(1)
        break
if not url:
    srv.kill()
    sys.exit("serve did not start:\n" + "".join(log))


def post(body, raw=False):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            text = r.read().decode()
            return r.status, text if raw else json.loads(text)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode())


try:
    for i, c in enumerate(chats):
        status, r = post({"model": "chat", "messages": c["messages"], "temperature": 0, "max_tokens": 12})
        ok = status == 200 and r["object"] == "chat.completion" and r["choices"][0]["message"] == {
            "role": "assistant", "content": c["greedy"]} and r["usage"]["prompt_tokens"] == len(c["ids"]) and \
            r["usage"]["completion_tokens"] >= len(c["greedy_ids"])
        check(ok, f"chat/completions, conversation {i + 1}: {status} {json.dumps(r)[:300]}")
    status, text = post({"model": "chat", "messages": chats[1]["messages"], "temperature": 0,
                         "max_completion_tokens": 12, "stream": True}, raw=True)
    events = [json.loads(e[6:]) for e in text.split("\n\n") if e.startswith("data: {")]
    deltas = [e["choices"][0]["delta"] for e in events]
    content = "".join(d.get("content", "") for d in deltas)
    check(status == 200 and text.rstrip().endswith("data: [DONE]") and deltas[0].get("role") == "assistant" and
          content == chats[1]["greedy"] and events[-1]["choices"][0]["finish_reason"] in ("stop", "length") and
          all(e["object"] == "chat.completion.chunk" for e in events),
          f"chat/completions streamed: {content!r} vs {chats[1]['greedy']!r}")
    status, r = post({"model": "plain", "messages": [{"role": "user", "content": "hi"}]})
    check(status == 400 and "has no chat template" in r["error"]["message"], f"no chat template: {status} {r}")
    status, r = post({"model": "chat", "messages": []})
    check(status == 400 and "\"messages\"" in r["error"]["message"], f"empty messages: {status} {r}")
    status, r = post({"model": "chat", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})
    check(status == 400 and "text" in r["error"]["message"], f"an image part: {status} {r}")
finally:
    srv.send_signal(signal.SIGTERM)
    srv.wait(timeout=60)

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all chat checks passed")
