"""What the `vkformer serve` test scripts share: a server on an ephemeral loopback
port (its URL read from the "serving N model(s) on ..." line), JSON requests, a
streamed request's server-sent events, and the ok/FAIL checks. Imported by
tests/cli_serve.py, tests/cli_serve3.py and tests/cli_serve_gguf.py (they run from tests/, so Python finds it)."""
import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def finish():
    """Prints the verdict and exits 1 when a check failed."""
    print("FAILED" if failures else "OK")
    sys.exit(1 if failures else 0)


def message(j):
    """The message of an error reply (OpenAI's {"error": {"message": ...}}), or the reply as text."""
    if isinstance(j, dict):
        e = j.get("error")
        return e.get("message", "") if isinstance(e, dict) else str(e)
    return str(j)


class Server:
    """`CLI serve --port 0 ARGS...`; waits (up to `start_s`) for the line that names its address."""

    def __init__(self, cli, *args, start_s=120):
        self.p = subprocess.Popen([cli, "serve", "--port", "0", *args], stderr=subprocess.PIPE, text=True)
        self.log = []
        deadline = time.monotonic() + start_s
        while time.monotonic() < deadline:
            line = self.p.stderr.readline()
            if not line:
                break
            self.log.append(line)
            m = re.search(r"serving \d+ model\(s\) on (http://([\d.]+):(\d+))", line)
            if m:
                self.url, self.host, self.port = m.group(1), m.group(2), int(m.group(3))
                threading.Thread(target=lambda: self.log.extend(self.p.stderr), daemon=True).start()
                return
        self.p.kill()
        sys.exit("serve did not start:\n" + "".join(self.log))

    def request(self, path, body=None, method=None, raw=None, headers=None):
        """(status, headers, parsed JSON or text). `body` is sent as JSON with its Content-Type
        unless `headers` says otherwise; `raw` bytes as they are (urllib's form Content-Type)."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if headers is None:
            headers = {"Content-Type": "application/json"} if body is not None else {}
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                status, h, text = r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            status, h, text = e.code, dict(e.headers), e.read().decode()
        try:
            return status, h, json.loads(text)
        except ValueError:
            return status, h, text

    def events(self, path, body):
        """The parsed server-sent events of a streamed request (body gets "stream": true), and
        whether the stream ended with "data: [DONE]"."""
        req = urllib.request.Request(self.url + path, data=json.dumps(dict(body, stream=True)).encode(),
                                     headers={"Content-Type": "application/json"})
        out, done = [], False
        with urllib.request.urlopen(req, timeout=120) as r:
            for line in r:
                line = line.decode().strip()
                if line == "data: [DONE]":
                    done = True
                    break
                if line.startswith("data: "):
                    out.append(json.loads(line[6:]))
        return out, done

    def stop(self):
        """SIGTERM; the exit status. The server's Vulkan validation messages are printed, so
        that ctest's FAIL_REGULAR_EXPRESSION sees them (its stderr is read here, not passed on)."""
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=60)
        for line in self.log:
            if re.search(r"validation (error|warning)", line):
                print("serve: " + line.rstrip())
        return rc
