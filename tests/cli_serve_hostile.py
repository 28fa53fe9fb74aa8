#!/usr/bin/python3
"""`vkformer serve` against hostile clients (issue 29 #2-#6, #8), on 127.0.0.1 with
--threads 2 and a 2 s --request-timeout-s:

- slowloris: 8 clients trickle a request's header a byte at a time: each gets 408
  (or is closed) once its deadline passes;
- header flood: 200,000 header lines (1.6 MB), and 150 small ones: 431;
- chunked flood: 150 chunks of 1 MiB against --max-body-kb 64: 413 after the first;
  a Content-Length above the limit: 413;
- deep JSON: a 400 KB body of nested arrays: 400;
- pipelining: requests written in one send() get their responses, in order;
- 64 concurrent streams (/v1/completions, "stream": true): each ends with [DONE];
- SIGTERM mid-load (streams, completions, a trickling client, an idle kept-alive
  connection): every sent request is answered, the trickler gets 408, the server
  exits 0 and its log says every request was answered.

Throughout, a monitor asks /health every 0.2 s: each must answer 200 within 1 s; and
the server's RSS must stay under its size after warm-up + RSS_BOUND_MB. Every loop is
bounded and stops by itself; no other timing is a pass criterion.

    cli_serve_hostile.py VKFORMER_BINARY REPO_ROOT [HF_MODELS_DIR]   ($VKF_HF_MODELS first; st_mean_norm, models/dates)
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from serve_harness import Server, check, finish

RSS_BOUND_MB = 100  # growth allowed over the warmed-up server: 150 MiB of chunks read whole would pass it

cli, root = sys.argv[1:3]
hf = os.environ.get("VKF_HF_MODELS") or (sys.argv[3] if len(sys.argv) > 3 else os.path.join(root, "build", "hf-models"))
st_dir = os.path.join(hf, "st_mean_norm")
st = os.path.basename(st_dir)
DATE = "5 mar 2021"

# The limits' flags (an older build without them still runs, to measure "before").
helptext = subprocess.run([cli, "serve", "--help"], capture_output=True, text=True).stdout
new_flags = ["--request-timeout-s", "2", "--max-connections", "256"] if "--request-timeout-s" in helptext else []
s = Server(cli, "--model", st_dir, "--model", "dates=" + os.path.join(root, "models", "dates"), "--threads", "2",
           "--max-body-kb", "64", "--max-queue", "128", "--max-tokens", "16", *new_flags)


def rss_mb():
    with open(f"/proc/{s.p.pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024


def connect():
    c = socket.create_connection((s.host, s.port), timeout=10)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def read_status(c, limit_s=10):
    """The status code of the reply on socket `c` (0: closed without one, -1: none within limit_s)."""
    c.settimeout(limit_s)
    data = b""
    try:
        while b"\r\n" not in data:
            got = c.recv(4096)
            if not got:
                break
            data += got
    except socket.timeout:
        return -1
    except OSError:
        pass
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return int(m.group(1)) if m else 0


# ---- the monitor: /health within 1 s, every 0.2 s, and the largest RSS.
for _ in range(3):  # warm up: the models' pipelines are built at the first request
    s.request("/v1/embeddings", {"model": st, "input": "warm"})
    s.request("/v1/completions", {"model": "dates", "prompt": DATE, "max_tokens": 4})
base_rss = rss_mb()
health = {"asked": 0, "slow": [], "worst": 0.0}
peak = {"rss": base_rss}
monitoring = threading.Event()
monitoring.set()


def monitor():
    while monitoring.is_set():
        t = time.monotonic()
        try:
            with urllib.request.urlopen(s.url + "/health", timeout=1) as r:
                ok = r.status == 200
        except Exception as e:  # a timeout is the failure this looks for
            ok = False
        took = time.monotonic() - t
        health["asked"] += 1
        health["worst"] = max(health["worst"], took)
        if not ok or took > 1:
            health["slow"].append(round(took, 2))
        try:
            peak["rss"] = max(peak["rss"], rss_mb())
        except OSError:
            pass
        time.sleep(0.2)


mon = threading.Thread(target=monitor, daemon=True)
mon.start()

# ---- #4 slowloris: 8 clients (four times --threads) trickle a header, one byte every 0.25 s.
def slowloris(out, i, bytes_max=40):
    c = connect()
    req = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    for k in range(bytes_max):  # 10 s at most, five times the deadline
        try:
            c.sendall(req[k:k + 1])
        except OSError:
            break  # closed by the server: its reply (408) is read below
        time.sleep(0.25)
    out[i] = read_status(c, 2)
    c.close()


slow = [None] * 8
slow_threads = [threading.Thread(target=slowloris, args=(slow, i)) for i in range(8)]
for th in slow_threads:
    th.start()
time.sleep(1)
# While they trickle, the two handler threads still serve requests.
status, _, _ = s.request("/v1/embeddings", {"model": st, "input": "served while 8 clients trickle"})
check(status == 200, f"an embedding request is served while 8 slow clients trickle: {status}")
for th in slow_threads:
    th.join()
check(all(x == 408 for x in slow), f"slowloris: each of 8 trickling clients got 408 after --request-timeout-s: {slow}")

# ---- #3 header flood: 200,000 header lines, then 150 small ones.
def flood_headers(lines):
    c = connect()
    try:
        c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-A: 1\r\n" * lines + b"\r\n")
    except OSError:
        pass  # the server stopped reading once over the limit
    code = read_status(c)
    c.close()
    return code


code = flood_headers(200000)
check(code == 431, f"header flood: 200,000 lines (1.6 MB) -> 431: {code}")
code = flood_headers(150)
check(code == 431, f"150 header fields (over 100) -> 431: {code}")
check(flood_headers(50) == 200, "50 header fields are fine")

# ---- #2 chunked flood: 150 chunks of 1 MiB against --max-body-kb 64 stop at 413.
def chunked_flood():
    c = connect()
    c.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    piece = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
    sent = 0
    c.settimeout(10)
    for _ in range(150):
        try:
            c.sendall(piece)
            sent += 1
        except OSError:
            break
        c.setblocking(False)
        try:
            peeked = c.recv(1, socket.MSG_PEEK)  # a reply already: stop sending
        except BlockingIOError:
            peeked = None
        except OSError:
            peeked = b""
        c.settimeout(10)
        if peeked is not None:
            break
    code = read_status(c)
    c.close()
    return code, sent


code, sent = chunked_flood()
check(code == 413, f"chunked flood: 413 after {sent} of 150 MiB chunks sent (--max-body-kb 64): {code}")
c = connect()
c.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
code = read_status(c)
c.close()
check(code == 413, f"Content-Length 1,000,000 over --max-body-kb 64 -> 413: {code}")

# ---- deep JSON (#1, a route's own limit): 400, the server up.
deep = b'{"model": "%s", "input": ' % st.encode() + b"[" * 30000 + b"]" * 30000 + b"}"
status, _, j = s.request("/v1/embeddings", raw=deep, headers={"Content-Type": "application/json"})
check(status == 400 and "nested deeper" in json.dumps(j), f"deep JSON -> 400: {status}")

# ---- #8 pipelining: three requests in one send() get three replies, in order; then two POSTs.
def pipelined(requests):
    c = connect()
    c.sendall(b"".join(requests))
    c.settimeout(20)
    data, codes = b"", []
    while len(codes) < len(requests):
        m = re.match(rb"HTTP/1\.1 (\d{3})[^\r]*\r\n(.*?)\r\n\r\n", data, re.S)
        if m:
            length = int(re.search(rb"(?i)content-length: *(\d+)", m.group(2)).group(1))
            if len(data) >= m.end() + length:
                codes.append((int(m.group(1)), data[m.end():m.end() + length]))
                data = data[m.end() + length:]
                continue
        try:
            got = c.recv(65536)
        except OSError:
            got = b""
        if not got:
            break
        data += got
    c.close()
    return codes


got = pipelined([b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
                 b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"])
check([c for c, _ in got] == [200, 200, 200] and b'"status"' in got[0][1] and b'"data"' in got[1][1]
      and b'"live"' in got[2][1], f"pipelining: 3 GETs in one send -> 3 replies in order: {[c for c, _ in got]}")
posts = []
for text in ("one", "two"):
    body = json.dumps({"model": st, "input": text}).encode()
    posts.append(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
got = pipelined(posts + [b"GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n"])
check([c for c, _ in got] == [200, 200, 404], f"pipelining: 2 POSTs and a 404 in one send: {[c for c, _ in got]}")

# ---- 64 concurrent streams.
def stream(out, i, started=None):
    body = json.dumps({"model": "dates", "prompt": DATE, "max_tokens": 10, "temperature": 0, "stream": True}).encode()
    req = urllib.request.Request(s.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    text, done = "", False
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            for line in r:
                line = line.decode().strip()
                if started:
                    started.set()
                if line == "data: [DONE]":
                    done = True
                elif line.startswith("data: "):
                    text += json.loads(line[6:])["choices"][0].get("text", "")
    except Exception as e:
        text = repr(e)
    out[i] = (text, done)


_, _, want = s.request("/v1/completions", {"model": "dates", "prompt": DATE, "max_tokens": 10, "temperature": 0})
want = want["choices"][0]["text"]
streams = [None] * 64
threads = [threading.Thread(target=stream, args=(streams, i)) for i in range(64)]
for th in threads:
    th.start()
for th in threads:
    th.join()
complete = sum(1 for t, d in streams if d and t == want)
check(complete == 64, f"64 concurrent streams: {complete} ended with [DONE] and the text {want!r}")

# ---- clients that vanish mid-stream: 8 read the first event and close; the handler threads
# (--threads 2) are freed, and a new stream is served whole.
def vanish():
    c = connect()
    body = json.dumps({"model": "dates", "prompt": DATE, "max_tokens": 16, "stream": True}).encode()
    c.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    first = read_status(c, 30)
    c.close()
    return first


vanished = [vanish() for _ in range(8)]
again = [None]
stream(again, 0)
check(vanished == [200] * 8 and again[0][1] and again[0][0] == want,
      f"8 clients gone mid-stream, then a stream is served whole: {vanished}, {again[0]}")

# ---- #5, #6: SIGTERM mid-load.
monitoring.clear()
mon.join()
results, stream_out = [], [None] * 8
lock = threading.Lock()


def completion(i):
    try:
        status, _, j = s.request("/v1/completions", {"model": "dates", "prompt": DATE, "max_tokens": 10})
    except Exception as e:
        status = repr(e)
    with lock:
        results.append(status)


started = [threading.Event() for _ in range(8)]
load = [threading.Thread(target=stream, args=(stream_out, i, started[i])) for i in range(8)]
load += [threading.Thread(target=completion, args=(i,)) for i in range(16)]
trickled = [None]
load.append(threading.Thread(target=slowloris, args=(trickled, 0, 120)))  # 30 s of trickling at most
idle = connect()  # kept alive after one request, then idle
idle.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
idle_first = read_status(idle)
for th in load:
    th.start()
for e in started:
    e.wait(60)
time.sleep(0.3)
t_term = time.monotonic()
s.p.send_signal(signal.SIGTERM)
try:
    rc = s.p.wait(timeout=40)
except subprocess.TimeoutExpired:
    rc = None
    s.p.kill()
    s.p.wait()
down_s = time.monotonic() - t_term
for th in load:
    th.join()
idle.settimeout(5)
try:
    idle_end = idle.recv(100)
except OSError:
    idle_end = b""
check(rc == 0, f"SIGTERM mid-load: exit {rc} ({down_s:.1f} s after the signal)")
check(results == [200] * 16, f"SIGTERM: the 16 completions in flight were answered: {results}")
check(all(x and x[1] and x[0] == want for x in stream_out),
      f"SIGTERM: the 8 streams in flight ended complete: {[bool(x and x[1]) for x in stream_out]}")
check(trickled[0] == 408, f"SIGTERM: the trickling client got 408 and did not keep the server up: {trickled[0]}")
check(idle_first == 200 and idle_end == b"", "SIGTERM: an idle kept-alive connection is closed")
time.sleep(0.2)
log = "".join(s.log)
check("every request in flight was answered" in log,
      "the log says every request in flight was answered: " + (re.findall(r"vkformer: stopped.*", log) or ["(none)"])[-1])

print(f"/health: asked {health['asked']} times, worst {health['worst'] * 1000:.0f} ms, over 1 s or failed: "
      f"{health['slow']}; RSS {base_rss:.0f} MB after warm-up, peak {peak['rss']:.0f} MB")
check(health["asked"] > 20 and not health["slow"], f"/health answered 200 within 1 s throughout ({health['asked']} asks)")
check(peak["rss"] < base_rss + RSS_BOUND_MB,
      f"RSS stayed under {base_rss:.0f} + {RSS_BOUND_MB} MB: peak {peak['rss']:.0f} MB")

# ---- --max-connections: one past the limit gets 503 and is closed; the others are served.
if new_flags:
    m = Server(cli, "--model", st_dir, "--max-connections", "2", "--request-timeout-s", "5")
    s = m  # read_status and connect use the current server
    held = [connect(), connect()]
    time.sleep(0.3)
    extra = connect()
    code = read_status(extra)
    extra.close()
    check(code == 503, f"--max-connections 2: a third connection gets 503: {code}")
    held[0].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    check(read_status(held[0]) == 200, "the connections within the limit are served")
    for c in held:
        c.close()
    check(m.stop() == 0, "--max-connections: SIGTERM, exit 0")
finish()
