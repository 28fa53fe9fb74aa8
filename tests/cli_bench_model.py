"""`vkformer bench model` on two test models: the JSON has its keys, one
submission per forward pass and per decode step, and the SVG charts parse;
`--tuning compare` gives both columns.
Timings are printed by the command, never asserted.
usage: cli_bench_model.py VKFORMER MODELS_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

exe, models = sys.argv[1], sys.argv[2]
PASS_KEYS = {"total_ms", "wall_ms", "submissions", "tokens_per_s", "layers", "ops"}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as tmp:
    for name in ("encdec_postln_relu", "decoder_only"):
        js, svg = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".svg")
        cmd = [exe, "bench", "model", "--model", os.path.join(models, name), "--batch", "2",
               "--src-len", "7", "--tgt-len", "5", "--repeat", "1", "--json", js, "--svg", svg]
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(r.stdout + r.stderr)
        check(r.returncode == 0, f"{name}: exit code {r.returncode}")
        if r.returncode:
            continue
        j = json.load(open(js))
        for k in ("device", "driver", "vkformer_version", "git_revision", "config", "shape",
                  "forward", "decode_step", "recompute_step_ms", "cache_speedup"):
            check(k in j, f"{name}: JSON key {k}")
        for p in ("forward", "decode_step"):
            d = j.get(p) or {}
            check(PASS_KEYS <= d.keys(), f"{name}: {p} has {sorted(PASS_KEYS)}")
            check(d.get("submissions") == 1, f"{name}: {p} submissions == 1 (got {d.get('submissions')})")
            check("gemm" in d.get("ops", {}) and "flash_attention" in d.get("ops", {}),
                  f"{name}: {p} ops include gemm and flash_attention")
            check(any(k.endswith(".0") for k in d.get("layers", {})), f"{name}: {p} has layer 0")
        check(j.get("shape", {}).get("batch") == 2, f"{name}: shape.batch")
        for f in (svg, svg[:-4] + "-step.svg"):
            try:
                root = ET.parse(f).getroot()
                check(root.tag.endswith("svg"), f"{f}: root is <svg>")
            except Exception as e:  # missing or malformed
                check(False, f"{f}: {e}")

    # --tuning compare: both columns, the database VKFORMER_TUNING names; no SVG.
    js, db = os.path.join(tmp, "compare.json"), os.path.join(tmp, "tuning.json")
    base = [exe, "bench", "model", "--model", os.path.join(models, "encdec_postln_relu"), "--src-len", "7",
            "--tgt-len", "5", "--repeat", "1", "--tuning", "compare"]
    env = dict(os.environ, VKFORMER_TUNING=db)
    r = subprocess.run(base + ["--json", js], capture_output=True, text=True, env=env)
    print(r.stdout + r.stderr)
    check(r.returncode == 0, f"compare: exit code {r.returncode}")
    if r.returncode == 0:
        j = json.load(open(js))
        check(j.get("tuning_database") == db, f"compare: database {j.get('tuning_database')}")
        for p in ("forward", "decode_step"):
            d = j.get(p) or {}
            check(d.get("default_ms", 0) > 0 and d.get("tuned_ms", 0) > 0 and d.get("speedup", 0) > 0,
                  f"compare: {p} has default_ms, tuned_ms, speedup")
    svg = os.path.join(tmp, "compare.svg")
    r = subprocess.run(base + ["--svg", svg], capture_output=True, text=True, env=env)
    check(r.returncode == 2 and "--svg" in r.stderr and not os.path.exists(svg), "compare: --svg refused")

print("FAILED" if failures else "OK")
sys.exit(1 if failures else 0)
