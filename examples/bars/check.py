"""ctest example_bars: runs the bars example under the validation layer (with
synchronization validation) and checks that its PNG shows the model's output.

  check.py BARS_EXE VKFORMER_EXE MODEL_DIR WORK_DIR

- ways (b) and (a): exit 0 and "0 messages"; both draw the same pixels;
- the tallest bar is the argmax the program prints, and that argmax and every
  bar's height agree with the logits of `vkformer forward` (a separate path);
- another source sentence gives another image and another tallest bar;
- with --skip-end (no closing barrier) sync validation reports a hazard.
Uses only the standard library (zlib) and numpy for the .npy file.
"""
import os
import re
import struct
import subprocess
import sys
import zlib

import numpy as np

BARS, CLI, MODEL, WORK = sys.argv[1:5]
SRC_A, SRC_B, TGT = "3,9,26,27,10", "20,21,22", "1,6,5,23"  # argmax 30 and 11
os.makedirs(WORK, exist_ok=True)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def read_png(path):
    """Decodes an 8-bit RGBA, non-interlaced PNG into rows of (r,g,b,a) tuples."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind}"
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (depth, ctype, interlace) == (8, 6, 0), "expected 8-bit RGBA, no interlace"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)  # checks the Adler-32 too
    stride = 1 + width * 4
    assert len(raw) == height * stride
    rows = []
    for y in range(height):
        assert raw[y * stride] == 0, "only filter type 0 is written"
        line = raw[y * stride + 1:(y + 1) * stride]
        rows.append([tuple(line[x * 4:x * 4 + 4]) for x in range(width)])
    return rows


def run_bars(png, *args):
    p = subprocess.run([BARS, MODEL, "--validation", "--out", png, *args],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def forward_logits(src):
    npy = os.path.join(WORK, "forward.npy")
    subprocess.run([CLI, "forward", "--model", MODEL, "--src-ids", src, "--tgt-ids", TGT,
                    "--out", npy], check=True, capture_output=True)
    return np.load(npy)[0, -1]  # the last target position, as the bars draw it


def bar_heights(rows, n):
    """Height in pixels of each bar, measured at its centre column."""
    h, w = len(rows), len(rows[0])
    background = rows[0][0]
    heights = []
    for i in range(n):
        x = int((i + 0.5) * w / n)
        heights.append(sum(1 for y in range(h) if rows[y][x] != background))
    return heights


images, argmaxes = {}, {}
for name, src, way in [("b1", SRC_A, "b"), ("b2", SRC_B, "b"), ("a1", SRC_A, "a")]:
    png = os.path.join(WORK, f"bars_{name}.png")
    rc, out = run_bars(png, "--way", way, "--src-ids", src, "--tgt-ids", TGT)
    check(rc == 0 and re.search(r"validation: on, 0 messages", out) is not None,
          f"way ({way}) src {src}: exit 0, 0 validation messages (rc {rc})")
    if rc != 0:
        print(out)
        continue
    argmax = int(re.search(r"argmax: (\d+)", out).group(1))
    rows = read_png(png)
    logits = forward_logits(src)
    heights = bar_heights(rows, len(logits))
    t = (logits - logits.min()) / (logits.max() - logits.min())
    want = (0.05 + 0.9 * t) * len(rows)
    worst = float(np.max(np.abs(np.array(heights) - want)))
    check(argmax == int(np.argmax(logits)), f"{name}: printed argmax {argmax} == vkformer forward's "
                                             f"{int(np.argmax(logits))}")
    check(heights[argmax] == max(heights), f"{name}: the tallest bar ({heights[argmax]} px) is bar {argmax}")
    check(worst <= 1.5, f"{name}: every bar's height matches its logit within 1.5 px (worst {worst:.2f})")
    images[name] = rows
    argmaxes[name] = argmax

if len(images) == 3:
    check(images["a1"] == images["b1"], "ways (a) and (b) draw the same image")
    check(images["b1"] != images["b2"] and argmaxes["b1"] != argmaxes["b2"],
          "another source sentence draws another image, with another tallest bar")

rc, out = run_bars(os.path.join(WORK, "bars_skip_end.png"), "--skip-end")
check(rc != 0 and "SYNC-HAZARD" in out,
      "without Recorder::end() sync validation reports a hazard and the program fails")

sys.exit(1 if failures else 0)
