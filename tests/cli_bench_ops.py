#!/usr/bin/python3
"""`vkformer bench ops` end to end on a tiny GEMM: every variant checked, the
JSON report has the required keys, the SVG roofline is well-formed XML, and
the device peak was cached next to the pipeline cache; --shape's dtype and act
are honoured. No timing is asserted."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

vkf = sys.argv[1]
cache = os.environ["VKFORMER_CACHE_DIR"]
with tempfile.TemporaryDirectory() as tmp:
    js, svg = os.path.join(tmp, "bench.json"), os.path.join(tmp, "bench.svg")
    r = subprocess.run([vkf, "bench", "ops", "--op", "gemm", "--m", "5", "--n", "7", "--k", "9",
                        "--variant", "all", "--repeat", "2", "--json", js, "--svg", svg],
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)  # ctest fails on a validation message in it
    assert r.returncode == 0, f"exit code {r.returncode}"

    doc = json.load(open(js))
    for key in ["vkformer_version", "git_revision", "device", "peak", "results"]:
        assert key in doc, f"JSON lacks {key}"
    assert doc["peak"]["gflops"] > 0 and doc["peak"]["gbps"] > 0, doc["peak"]
    assert {"name", "driver_version"} <= doc["device"].keys(), doc["device"]
    required = {"op", "variant", "shape", "median_ms", "min_ms", "max_ms", "gflops", "gbps", "checked",
                "wall_ms", "spec", "picked", "roofline_pct", "max_error"}
    res = doc["results"]
    assert len(res) >= 2, "--variant all ran fewer than 2 variants"
    for x in res:
        missing = required - x.keys()
        assert not missing, f"result lacks {missing}"
        assert x["op"] == "gemm" and x["checked"] and x["max_error"] <= 1e-5, x
        assert 0 < x["min_ms"] <= x["median_ms"] <= x["max_ms"], x
    assert sum(x["picked"] for x in res) == 1, "exactly one variant is the engine's pick"

    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert len(texts) >= len(res) + 3, "expected a title, axis labels and a label per point"

    # --shape's dtype and act are what runs (they once fell back to f32 and none), and shapes
    # differing only in them are three rows, not one. f16 weights move fewer bytes.
    js2 = os.path.join(tmp, "shapes.json")
    r = subprocess.run([vkf, "bench", "ops", "--op", "gemm", "--repeat", "1", "--warmup", "0",
                        "--shape", "m=5,n=7,k=9,dtype=f16", "--shape", "m=5,n=7,k=9,dtype=f32",
                        "--shape", "m=5,n=7,k=9,dtype=f16,act=gelu", "--json", js2],
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    assert r.returncode == 0, f"exit code {r.returncode}"
    res = json.load(open(js2))["results"]
    assert [x["dtype"] for x in res] == ["f16", "f32", "f16"], [x["dtype"] for x in res]
    assert [x["shape"] for x in res] == ["M=5 N=7 K=9 f16", "M=5 N=7 K=9 f32", "M=5 N=7 K=9 f16 gelu"], res
    assert res[0]["bytes"] < res[1]["bytes"], "the f16 row moved as many bytes as the f32 one"
    assert all(x["checked"] and x["max_error"] <= 1e-5 for x in res), res

assert glob.glob(os.path.join(cache, "peak-*.json")), f"no peak cache in {cache}"
print("bench ops: JSON, SVG and peak cache OK")
