"""vkformer's GGUF reader (src/model/gguf.cpp, through tests/gguf_dump) sees exactly
what llama.cpp's own Python package sees (gguf 0.19.0's GGUFReader): every metadata
key in order with its type and value, every tensor's name, ggml type, shape, offset,
size and bytes. The files are written here by gguf.GGUFWriter: metadata of every
value type (arrays of strings and nested arrays included), tensors in F32, F16, BF16,
Q8_0, Q4_0, Q4_1 (from gguf.quants.quantize), Q4_K and Q6_K (random blocks), at the
default alignment and at 64 and 1. Then the real SmolLM2-135M-Instruct.Q4_1.gguf
when `make llm-models` has fetched it (skipped, saying so, when not).
Needs gguf==0.19.0 in tools/hf/.venv (bash tools/hf/setup-venv.sh); runs in the
current interpreter instead when it already has that package.
Usage: gguf_check.py GGUF_DUMP SOURCE_DIR [MORE.gguf ...]"""
import json
import os
import subprocess
import sys
import tempfile

dump, src = sys.argv[1], sys.argv[2]
extra = sys.argv[3:]


def has_gguf():
    try:
        import importlib.metadata as md
        return md.version("gguf") == "0.19.0"
    except Exception:
        return False


if not has_gguf():
    venv = os.path.join(src, "tools", "hf", ".venv")
    venv_python = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        sys.exit("gguf_check: tools/hf/.venv has no gguf==0.19.0: run `bash tools/hf/setup-venv.sh`")
    if not os.path.exists(venv_python):
        sys.exit("gguf_check: the HF reference venv is missing: run `bash tools/hf/setup-venv.sh`")
    os.execv(venv_python, [venv_python, os.path.abspath(__file__)] + sys.argv[1:])

import numpy as np  # noqa: E402
import gguf  # noqa: E402
from gguf import GGMLQuantizationType as Q, GGUFValueType as V  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def checksum(b):
    a = np.frombuffer(b, dtype=np.uint8).astype(np.uint64)
    w = (np.arange(len(a), dtype=np.uint64) % np.uint64(65521)) + np.uint64(1)
    return int((a * w).sum(dtype=np.uint64))


def flatten(v):
    if isinstance(v, list):
        out = []
        for x in v:
            out += flatten(x)
        return out
    return [v]


def run_dump(path, hex_bytes):
    args = [dump] + (["--hex"] if hex_bytes else []) + [path]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"gguf_check: gguf_dump {path} failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def compare(path, hex_bytes=True):
    """Everything GGUFReader reads from `path` against gguf_dump's view of it."""
    name = os.path.basename(path)
    mine = run_dump(path, hex_bytes)
    ref = gguf.GGUFReader(path)
    check(mine["alignment"] == ref.alignment, f"{name}: alignment {mine['alignment']} != {ref.alignment}")
    check(mine["data_start"] == ref.data_offset, f"{name}: data start {mine['data_start']} != {ref.data_offset}")
    check(mine["version"] == int(ref.fields["GGUF.version"].parts[0][0]), f"{name}: version")

    ref_fields = [f for f in ref.fields.values() if not f.name.startswith("GGUF.")]
    check([m["key"] for m in mine["metadata"]] == [f.name for f in ref_fields], f"{name}: keys or their order")
    for m, f in zip(mine["metadata"], ref_fields):
        key = m["key"]
        check(m["type"] == f.types[0].name.lower(), f"{name}: {key}: type {m['type']} != {f.types[0].name}")
        want = f.contents()
        if f.types[0] == V.ARRAY:
            check(m["element_type"] == f.types[1].name.lower(),
                  f"{name}: {key}: element type {m['element_type']} != {f.types[1].name}")
            got = flatten(m["value"])  # GGUFReader flattens nested arrays
        else:
            got = m["value"]
        if f.types[-1] in (V.FLOAT32, V.FLOAT64):  # the exact float, as a double
            got_ok = [float(x) for x in flatten(got)] == [float(x) for x in flatten(want)]
        else:
            got_ok = got == want
        check(got_ok, f"{name}: {key}: {str(got)[:200]} != {str(want)[:200]}")

    check(len(mine["tensors"]) == len(ref.tensors), f"{name}: {len(mine['tensors'])} tensors != {len(ref.tensors)}")
    for t, r in zip(mine["tensors"], ref.tensors):
        what = f"{name}: tensor {r.name}"
        check(t["name"] == r.name, f"{what}: name {t['name']}")
        check(t["type"] == int(r.tensor_type), f"{what}: type {t['type_name']} != {r.tensor_type.name}")
        check(t["type_name"] == r.tensor_type.name, f"{what}: type name {t['type_name']} != {r.tensor_type.name}")
        want_shape = [int(d) for d in reversed(r.shape.tolist())]  # the file's dims are innermost first
        check(t["shape"] == want_shape, f"{what}: shape {t['shape']} != {want_shape}")
        check(t["elements"] == r.n_elements, f"{what}: elements {t['elements']} != {r.n_elements}")
        check(t["bytes"] == r.n_bytes, f"{what}: bytes {t['bytes']} != {r.n_bytes}")
        check(mine["data_start"] + t["offset"] == r.data_offset,
              f"{what}: offset {t['offset']} + {mine['data_start']} != {r.data_offset}")
        raw = r.data.tobytes()
        check(len(raw) == t["bytes"], f"{what}: GGUFReader has {len(raw)} bytes")
        if hex_bytes:
            check(t["hex"] == raw.hex(), f"{what}: bytes differ")
        check(t["checksum"] == checksum(raw), f"{what}: checksum differs")
    return mine, ref


def write_file(path, alignment=None):
    rng = np.random.default_rng(27)
    w = gguf.GGUFWriter(path, arch="llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_uint8("test.u8", 255)
    w.add_int8("test.i8", -128)
    w.add_uint16("test.u16", 65535)
    w.add_int16("test.i16", -32768)
    w.add_uint32("test.u32", 4294967295)
    w.add_int32("test.i32", -2147483648)
    w.add_float32("test.f32", 1e-5)
    w.add_bool("test.true", True)
    w.add_bool("test.false", False)
    w.add_string("test.string", "h\u00e9llo \u4e16\u754c <|im_start|>")
    w.add_string("test.empty", "")
    w.add_uint64("test.u64", 2**64 - 1)
    w.add_int64("test.i64", -(2**63))
    w.add_float64("test.f64", 0.1)
    w.add_array("tokenizer.ggml.tokens", ["<|endoftext|>", "a", "\u0120the", "", "\u00e9"])
    w.add_array("tokenizer.ggml.scores", [0.0, -1.5, 2.25, -1e30, 3.0])
    w.add_array("tokenizer.ggml.token_type", [3, 1, 1, 1, 1])
    w.add_key_value("test.u64s", [1, 2**63], V.ARRAY, sub_type=V.UINT64)
    w.add_key_value("test.bools", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_array("test.nested", [[1, 2, 3], [4], [5, 6]])
    w.add_array("test.nested_strings", [["x", "yz"], ["w"]])
    w.add_context_length(8192)
    w.add_rope_freq_base(100000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")

    f32 = rng.standard_normal((3, 5), dtype=np.float32)
    w.add_tensor("f32", f32)
    w.add_tensor("f16", rng.standard_normal((2, 7)).astype(np.float16))
    w.add_tensor("vec", rng.standard_normal(11).astype(np.float32))
    big = rng.standard_normal((4, 64)).astype(np.float32)
    big[0, :32] *= 1000
    for qt in (Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_1):
        q = gguf.quants.quantize(big, qt)
        w.add_tensor(qt.name.lower(), q, raw_shape=q.shape, raw_dtype=qt)
    for qt, rows in ((Q.Q4_K, 3), (Q.Q6_K, 2)):
        _, block_bytes = gguf.GGML_QUANT_SIZES[qt]
        raw = rng.integers(0, 256, size=(rows, 2 * block_bytes), dtype=np.uint8)
        w.add_tensor(qt.name.lower(), raw, raw_shape=raw.shape, raw_dtype=qt)
    w.add_tensor("blk.0.attn_q.weight", gguf.quants.quantize(big, Q.Q4_1), raw_dtype=Q.Q4_1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


with tempfile.TemporaryDirectory() as tmp:
    for alignment in (None, 64, 1):
        path = os.path.join(tmp, f"test-{alignment or 'default'}.gguf")
        write_file(path, alignment)
        before = len(failures)
        mine, ref = compare(path)
        if len(failures) > before:
            continue
        types = sorted({t["type_name"] for t in mine["tensors"]})
        print(f"{os.path.basename(path)}: {len(mine['metadata'])} keys, {len(mine['tensors'])} tensors "
              f"({', '.join(types)}), alignment {mine['alignment']}, data at byte {mine['data_start']}: "
              f"same as GGUFReader")

real = os.path.join(src, "models", "llm", "SmolLM2-135M-Instruct.Q4_1.gguf")
for path in ([real] if os.path.exists(real) else []) + extra:
    before = len(failures)
    mine, ref = compare(path, hex_bytes=False)
    if len(failures) > before:
        continue
    counts = {}
    for t in mine["tensors"]:
        counts[t["type_name"]] = counts.get(t["type_name"], 0) + 1
    print(f"{path}: {len(mine['metadata'])} keys, {len(mine['tensors'])} tensors "
          f"({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))}): same as GGUFReader")
if not os.path.exists(real):
    print(f"gguf_check: {real} is absent (make llm-models): skipped")

if failures:
    sys.exit(f"gguf_check: {len(failures)} mismatches")
print("gguf_check: ok")
