#!/usr/bin/env python3
"""summary.md and results.json of tools/device/gpu-check.sh's raw/ folder (docs/gpu-check.md).

Usage: gpu_check_summary.py RAW_DIR SUMMARY.md RESULTS.json   (standard library only)
"""
import glob
import json
import os
import re
import sys

raw, summary_path, results_path = sys.argv[1:4]


def load(name):
    try:
        with open(os.path.join(raw, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def text(name):
    try:
        with open(os.path.join(raw, name), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def fmt(v, digits=1):
    if v is None:
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def pct(a, b):
    return f"{100 * a / b:.0f} %" if a and b else "–"


steps = []
for line in text("steps.tsv").splitlines():
    p = line.split("\t")
    if len(p) == 5:
        steps.append({"step": p[0], "rc": p[1], "seconds": int(p[2]) if p[2].isdigit() else 0,
                      "limit": p[3], "status": p[4]})
status = {s["step"]: s["status"] for s in steps}
sizes = dict(line.split("=", 1) for line in text("sizes.txt").splitlines() if "=" in line)
rehearse = sizes.get("rehearse") == "1"
devices = load("devices-json.out") or {}
torch = load("torch.json") or {}
bench_ops = load("bench-ops.json") or {}
bench_gemm = load("bench-gemm.json") or {}
bench_variants = {"results": [r for f in sorted(glob.glob(os.path.join(raw, "bench-variants-*.json")))
                                for r in (load(os.path.basename(f)) or {}).get("results", [])]}
models = {}
for path in sorted(glob.glob(os.path.join(raw, "model-*.json"))):
    try:
        models[os.path.basename(path)[len("model-"):-len(".json")]] = json.load(open(path))
    except ValueError:
        pass

# ---- kernel checks: raw/kernel-OP-DTYPE.{out,err}
VALIDATION = re.compile(r"validation (error|warning)", re.I)
kernels = {}
for path in sorted(glob.glob(os.path.join(raw, "kernel-*.out"))):
    name = os.path.basename(path)[:-4]
    _, rest = name.split("-", 1)
    op, dtype = rest.rsplit("-", 1)
    out, err = text(name + ".out"), text(name + ".err")
    # kernel-gemm.edges-f16: gemm at other shapes than its defaults, a row of its own.
    rows = [ln.split() for ln in out.splitlines() if ln.startswith(op.split(".")[0] + " ")]
    shape = next((ln for ln in out.splitlines() if ln.startswith("shape:")), "")
    errors = []
    failed = []
    for r in rows:
        variant = r[1]
        e = next((x for x in r if re.fullmatch(r"\d\.\d+e[-+]\d+", x)), None)
        if e is not None:
            errors.append(float(e))
        if "FAIL" in r:
            failed.append(variant)
    skipped = re.findall(r"skipping variant (\S+):", err)
    k = {"op": op, "dtype": dtype, "step": status.get(name, "?"), "variants": len(rows),
         "failed": failed, "skipped_variants": skipped, "max_error": max(errors) if errors else None,
         "validation_messages": len(VALIDATION.findall(err)), "shape": shape.replace("shape: ", "").split("   ")[0],
         "dtype_used": dtype in shape or dtype == "f32"}
    if k["step"] not in ("ok",) and not rows:
        k["error"] = (err.strip().splitlines() or ["(no output)"])[-1][:200]
    kernels[(op, dtype)] = k
for s in steps:  # kernel steps skipped for time have no files
    if s["step"].startswith("kernel-") and s["status"].startswith("skipped"):
        op, dtype = s["step"][len("kernel-"):].rsplit("-", 1)
        kernels.setdefault((op, dtype), {"op": op, "dtype": dtype, "step": s["status"], "variants": 0,
                                         "failed": [], "skipped_variants": [], "max_error": None,
                                         "validation_messages": 0, "shape": "", "dtype_used": True})


def kernel_cell(k):
    if k is None:
        return ""
    if k["step"].startswith("skipped"):
        return "skipped (time)"
    if not k["dtype_used"]:
        return "n/a"
    if k["step"].startswith("timed out"):
        return "**timed out**"
    if not k["variants"]:
        return "**error**: " + k.get("error", "")[:80].replace("|", "/")
    s = ("**FAIL** " + ",".join(k["failed"])) if k["failed"] else "pass"
    s += f" ({k['variants']}v, {k['max_error']:.1e})" if k["max_error"] is not None else f" ({k['variants']}v)"
    if k["validation_messages"]:
        s += f" **{k['validation_messages']} validation msgs**"
    return s


# ---- GEMM: vkformer (bench-gemm, tuned) vs torch.matmul
vk_gemm = {}
for r in bench_gemm.get("results", []):
    m = re.match(r"M=(\d+) N=(\d+) K=(\d+)", r.get("shape", ""))
    if m and r.get("picked", True):
        vk_gemm[("x".join(m.groups()), r["dtype"])] = r
t_gemm = {(r["shape"], {"fp16": "f16", "fp32": "f32"}[r["dtype"]]): r for r in torch.get("gemm", [])}
gemm_shapes = []
for key in list(vk_gemm) + list(t_gemm):
    if key[0] not in gemm_shapes:
        gemm_shapes.append(key[0])


def g(d, key, field="gflops"):
    r = d.get(key)
    return r.get(field) if r else None


# ---- encoders and decoders
def vk_model(name):
    m = models.get(name)
    return m if m and "forward" in m else None


enc_rows = []
for name in ("bert-base", "minilm-l6"):
    for prec in ("fp16", "fp32"):
        vk = vk_model(f"{name}-{prec}")
        t = next((r for r in torch.get("encoder", []) if r["model"] == name and r["dtype"] == prec), None)
        t16 = next((r for r in torch.get("encoder", []) if r["model"] == name and r["dtype"] == "fp16"), None)
        if vk or t or f"model-{name}-{prec}" in status:
            vk_sps = None
            if vk:
                b = vk["shape"]["batch"]
                vk_sps = b / vk["forward"]["wall_ms"] * 1000
            enc_rows.append((name, prec, vk, vk_sps, t, t16, status.get(f"model-{name}-{prec}", "–")))

dec_rows = []
for name in ("gpt2-small", "smollm-135m"):
    for ctx in sizes.get("contexts", "").split():
        for prec in ("fp16", "fp32"):
            step_name = f"model-{name}-{prec}-{ctx}"
            vk = models.get(f"{name}-{prec}-{ctx}")
            t = next((r for r in torch.get("decode", []) if r["model"] == name and r["dtype"] == prec
                      and str(r["context"]) == ctx), None)
            if vk or t or step_name in status:
                dec_rows.append((name, ctx, prec, vk, t, status.get(step_name, "–")))

# ---- write results.json: everything read, one file
results = {"sizes": sizes, "steps": steps, "devices": devices, "kernels": list(kernels.values()),
           "bench_ops": bench_ops, "bench_gemm": bench_gemm, "bench_variants": bench_variants, "bench_model": models, "torch": torch,
           "models": load("models.json"), "loader_mode": text("loader-mode.txt").strip(),
           "validation": text("validation.txt").strip() == "1"}
with open(results_path, "w") as f:
    json.dump(results, f, indent=1)

# ---- summary.md
L = []
picked = next((d for d in devices.get("devices", []) if d.get("picked")), {})
dev = picked.get("name") or next(iter(models.values()), {}).get("device")
if not dev:
    dev = f"no Vulkan device (devices: {status.get('devices', 'not run')}; see log.txt)"
mode = text("loader-mode.txt").strip()
rev = (bench_ops.get("git_revision") or next(iter(models.values()), {}).get("git_revision")
       or re.sub(r"^vkformer ", "", text(f"start-{mode}.txt").strip()) or "?")
L.append(f"# gpu-check: vkformer on {dev} vs PyTorch")
L.append("")
if rehearse:
    L.append("**REHEARSAL** (`--rehearse`): small shapes, capped layer counts, on this machine's "
             "Vulkan device; the figures say that the steps run, not how fast anything is.")
    L.append("")
ok = sum(1 for s in steps if s["status"] == "ok")
if picked:
    drv = " ".join(str(x) for x in (picked.get("driver"), picked.get("driver_version")) if x)
    L.append(f"- device: {picked.get('name')} ({picked.get('type')}, driver {drv}, Vulkan "
             f"{picked.get('api_version')}), subgroup {picked.get('subgroup_size')}, fp16 storage "
             f"{'yes' if picked.get('fp16_storage') else 'no'}, "
             f"{(picked.get('device_local_bytes') or 0) / 2**30:.0f} GiB device-local")
L.append(f"- vkformer {rev}; bundle loader mode `{results['loader_mode'] or '?'}`; validation layer for the "
         f"kernel checks: {'on' if results['validation'] else 'off (not loadable)'}")
L.append(f"- PyTorch {torch.get('torch', '–')} on {torch.get('device', '–')}, transformers "
         f"{torch.get('transformers', '–')}; TF32 for fp32 matmul: {torch.get('allow_tf32', '–')}")
L.append(f"- sizes: encoders batch {sizes.get('enc_batch')} × {sizes.get('enc_seq')} tokens; decode contexts "
         f"{sizes.get('contexts')}, {sizes.get('new_tokens')} new tokens for torch; layer cap "
         f"{sizes.get('layers') or 'none (real shapes)'}; tune budget {sizes.get('tune_budget')} s")
L.append(f"- steps: {ok} of {len(steps)} ok, {sum(s['seconds'] for s in steps if s['step'] != 'make-models')} s "
         "(make-models ran beside the kernel checks)")
for n in torch.get("notes", []):
    L.append(f"- torch: {n}")
L.append("")

big = sizes.get("big_gemm", "4096x4096x4096")
L.append("## GEMM, GFLOP/s (vkformer tuned, engine's pick; torch.matmul)")
L.append("")
L.append("vkformer fp16 = fp16 weights, fp32 activations and accumulation; torch fp16 = all fp16 (tensor cores).")
L.append("")
L.append("| M×N×K | vkformer fp16 | torch fp16 | vk fp16 % of torch fp16 | vkformer fp32 | torch fp32 | vk fp32 % of torch fp16 | vk variant (fp16) |")
L.append("|---|---:|---:|---:|---:|---:|---:|---|")
for s in gemm_shapes:
    v16, t16, v32, t32 = g(vk_gemm, (s, "f16")), g(t_gemm, (s, "f16")), g(vk_gemm, (s, "f32")), g(t_gemm, (s, "f32"))
    var = (vk_gemm.get((s, "f16")) or {}).get("variant", "–")
    label = f"**{s}**" if s == big else s
    L.append(f"| {label} | {fmt(v16)} | {fmt(t16)} | {pct(v16, t16)} | {fmt(v32)} | {fmt(t32)} | {pct(v32, t16)} | {var} |")
if not gemm_shapes:
    L.append(f"| (none: bench-gemm {status.get('bench-gemm', '–')}, torch {status.get('torch', '–')}) |||||||")
L.append("")

# One token against one weight matrix per storage format (issue 27's memory-bound case).
gemv = [(key, r) for key, r in vk_gemm.items() if key[0].startswith("1x")
        and any(k2[0] == key[0] and k2[1] not in ("f16", "f32") for k2 in vk_gemm)]
if gemv:
    L.append(f"## GEMV per weight format, {gemv[0][0][0]} (vkformer, engine's pick)")
    L.append("")
    L.append("GB/s: bytes moved (weights, x, y) over the median time; × f16: f16's time over the format's.")
    L.append("")
    L.append("| format | ms | GB/s | × f16 | variant |")
    L.append("|---|---:|---:|---:|---|")
    for (shape, dt), r in gemv:
        base = vk_gemm.get((shape, "f16"))
        speed = f"{base['median_ms'] / r['median_ms']:.2f}×" if base and r.get("median_ms") else "–"
        L.append(f"| {dt} | {fmt(r.get('median_ms'), 4)} | {fmt(r.get('gbps'))} | {speed} | {r.get('variant', '–')} |")
    L.append("")

L.append(f"## Embeddings: encoder forward, batch {sizes.get('enc_batch')} × {sizes.get('enc_seq')} (sequences/s)")
L.append("")
L.append("vkformer: `bench model` forward wall time (unprofiled); torch: BertModel forward + mean pooling.")
L.append("")
L.append("| model | precision | vkformer ms | vkformer seq/s | torch ms | torch seq/s | vk % of torch same precision | vk % of torch fp16 | vkformer step |")
L.append("|---|---|---:|---:|---:|---:|---:|---:|---|")
for name, prec, vk, vk_sps, t, t16, st in enc_rows:
    L.append(f"| {name} | {prec} | {fmt(vk['forward']['wall_ms'], 2) if vk else '–'} | {fmt(vk_sps)} | "
             f"{fmt(t['ms'], 2) if t else '–'} | {fmt(t['sequences_per_s']) if t else '–'} | "
             f"{pct(vk_sps, t['sequences_per_s'] if t else None)} | {pct(vk_sps, t16['sequences_per_s'] if t16 else None)} | {st} |")
L.append("")

def fwd_split(fw):
    """A forward pass's wall ms = queue + host (device ms); older JSON has no split."""
    split = f" = {fmt(fw['queue_ms'], 2)} + {fmt(fw['host_ms'], 2)}" if "queue_ms" in fw else ""
    return f"{fmt(fw['wall_ms'], 2)}{split} ({fmt(fw['total_ms'], 2)})"


L.append("## Decode, batch 1, greedy (tokens/s)")
L.append("")
L.append("vkformer: `bench model` decode step at the context (wall, KV cache); torch: eager `generate` "
         "with its KV cache, (new tokens) / (time of generate(new+1) − time of generate(1)). "
         "GPT-2's context is clipped to fit its 1024 positions.")
L.append("")
L.append("vkformer forward: the prompt's pass with every position's logits read back (what `bench model` "
         "times), its device time beside it; generate() has the last position's only.")
L.append("")
L.append("vkformer step ms: its wall time = in the queue (submission to fence) + on the host (recording, "
         "inputs, logits read), then its submissions and its profiled device time.")
L.append("")
L.append("| model | context | precision | vkformer tok/s | torch tok/s | vk / torch | vkformer step ms = queue + host (submissions; device ms) | vkformer forward ms = queue + host (device ms) | torch prefill+1 ms | vkformer step |")
L.append("|---|---:|---|---:|---:|---:|---|---:|---:|---|")
for name, ctx, prec, vk, t, st in dec_rows:
    vtps = 1000 / vk["decode_step"]["wall_ms"] if vk and vk.get("decode_step") else None
    ttps = t.get("decode_tokens_per_s") if t else None
    ratio = f"{vtps / ttps:.2f}×" if vtps and ttps else "–"
    actual = vk["shape"]["src_len"] if vk else (t["prompt"] if t else ctx)
    ds = vk.get("decode_step") if vk else None
    split = (f"{fmt(ds['wall_ms'], 2)} = {fmt(ds.get('queue_ms'), 2)} + {fmt(ds.get('host_ms'), 2)} "
             f"({ds['submissions']}; {fmt(ds['total_ms'], 2)})" if ds else "–")
    L.append(f"| {name} | {ctx}{'' if str(actual) == ctx else f' ({actual})'} | {prec} | {fmt(vtps)} | {fmt(ttps)} | {ratio} | {split} | "
             f"{fwd_split(vk['forward']) if vk else '–'} | "
             f"{fmt(t['prefill_plus_one_ms'], 2) if t else '–'} | {st} |")
L.append("")

L.append("## Kernel checks: every variant against the CPU reference (`kernel OP --variant all`)")
L.append("")
dtypes = [dt for dt in sizes.get("kernel_dtypes", "").split() if any(k[1] == dt for k in kernels)]
for (_, dt) in kernels:
    if dt not in dtypes:
        dtypes.append(dt)
ops = []
for (op, _) in kernels:
    if op not in ops:
        ops.append(op)
npass = sum(1 for k in kernels.values() if k["variants"] and not k["failed"] and k["dtype_used"]
            and k["step"] == "ok")
nfail = sum(1 for k in kernels.values() if k["failed"])
nerr = sum(1 for k in kernels.values() if not k["variants"] and not k["step"].startswith("skipped"))
nval = sum(k["validation_messages"] for k in kernels.values())
L.append(f"{npass} op×dtype runs pass, {nfail} with a failing variant, {nerr} errors or timeouts, "
         f"{nval} validation messages. Cells: result (variants run, worst max error).")
L.append("")
L.append("| op | " + " | ".join(dtypes) + " |")
L.append("|---|" + "---|" * len(dtypes))
for op in ops:
    L.append(f"| {op} | " + " | ".join(kernel_cell(kernels.get((op, dt))) for dt in dtypes) + " |")
L.append("")

if bench_ops.get("results"):
    L.append("## bench ops: standard shapes (untuned), against the measured roofline")
    L.append("")
    pk = bench_ops.get("peak", {})
    L.append(f"Peak: {fmt(pk.get('gflops'))} GFLOP/s, {fmt(pk.get('gbps'))} GB/s (microbenchmarks).")
    dc = bench_ops.get("dispatch")
    if dc:
        L.append("")
        L.append(f"Dispatch cost (wall): a submission of one dispatch {fmt(dc['submit_us'])} µs; each further "
                 f"one of {dc['dispatches']} {fmt(dc['chained_us'], 2)} µs behind a barrier, "
                 f"{fmt(dc['independent_us'], 2)} µs without.")
    L.append("")
    L.append("| op | shape | variant | median ms | GFLOP/s | GB/s | % roof | check |")
    L.append("|---|---|---|---:|---:|---:|---:|---|")
    for r in bench_ops["results"]:
        if not r.get("picked"):
            continue
        chk = ("pass" if r.get("passed") else "**FAIL**") if r.get("checked") else "–"
        L.append(f"| {r['op']} | {r['shape']} | {r['variant']} | {r['median_ms']:.4f} | {fmt(r['gflops'])} | "
                 f"{fmt(r['gbps'])} | {fmt(r.get('roofline_pct'))} | {chk} |")
    L.append("")

if bench_variants.get("results"):
    L.append("## Tensor cores against the kernel without them (tuned, unchecked)")
    L.append("")
    L.append("| op | shape | variant | median ms | GFLOP/s | × the other |")
    L.append("|---|---|---|---:|---:|---:|")
    rows = bench_variants["results"]
    for r in rows:
        others = [o["gflops"] for o in rows if o["op"] == r["op"] and o["shape"] == r["shape"] and
                  o["variant"] != r["variant"] and o.get("gflops")]
        ratio = f"{r['gflops'] / max(others):.2f}" if others and r.get("gflops") else "–"
        pick = " *" if r.get("picked") else ""
        L.append(f"| {r['op']} | {r['shape']} | {r['variant']}{pick} | {r['median_ms']:.4f} | {fmt(r['gflops'])} | {ratio} |")
    L.append("")
    L.append("\\* the engine's pick.")
    L.append("")

L.append("## Steps")
L.append("")
other = [s for s in steps if not s["step"].startswith("kernel-")]
L.append("| step | status | s |")
L.append("|---|---|---:|")
for s in other:
    L.append(f"| {s['step']} | {s['status']} | {s['seconds']} |")
kt = [s for s in steps if s["step"].startswith("kernel-")]
if kt:
    L.append(f"| kernel-* ({len(kt)}) | {sum(1 for s in kt if s['status'] == 'ok')} ok | {sum(s['seconds'] for s in kt)} |")
tune = text("tune.out").strip().splitlines()
if tune:
    L.append("")
    L.append("tune (last lines):")
    L.append("")
    L.append("```")
    L.extend(tune[-12:])
    L.append("```")
L.append("")
with open(summary_path, "w") as f:
    f.write("\n".join(L))
