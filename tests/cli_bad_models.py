"""Writes broken copies of a model directory for tests/cli_errors.sh: one
directory per case, each wrong in one way (the file, a tensor or config.json).
Usage: cli_bad_models.py MODEL_DIR OUT_DIR"""
import json
import os
import shutil
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
raw = open(os.path.join(src, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
config = json.load(open(os.path.join(src, "config.json")))
tensors = {k: v for k, v in header.items() if k != "__metadata__"}
blobs = {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in tensors.items()}


def case(name, st=None, cfg=None, raw_st=None):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    json.dump(config if cfg is None else cfg, open(os.path.join(d, "config.json"), "w"))
    if raw_st is None:
        raw_st = raw if st is None else st
    open(os.path.join(d, "model.safetensors"), "wb").write(raw_st)


def pack(hdr, body):
    h = json.dumps(hdr).encode()
    return struct.pack("<Q", len(h)) + h + body


def rebuild(named):
    """A well-formed file from {name: (dtype, shape, bytes)}."""
    hdr, body = {}, b""
    for k, (dt, shape, b) in named.items():
        hdr[k] = {"dtype": dt, "shape": shape, "data_offsets": [len(body), len(body) + len(b)]}
        body += b
    return pack(hdr, body)


def named():
    return {k: (v["dtype"], list(v["shape"]), blobs[k]) for k, v in tensors.items()}


def edited(name, **changes):
    h = json.loads(json.dumps(header))
    h[name].update(changes)
    return pack(h, data)


by_offset = sorted(tensors, key=lambda k: tensors[k]["data_offsets"][0])
first, second, last = by_offset[0], by_offset[1], by_offset[-1]

case("zero", raw_st=b"")
case("truncated", raw_st=raw[:-10])
case("huge_header", raw_st=struct.pack("<Q", 1 << 63) + raw[8:])
case("past_header", raw_st=struct.pack("<Q", len(raw)) + raw[8:])
case("header_not_json", raw_st=struct.pack("<Q", 9) + b"{not json")
case("offsets_out_of_bounds", edited(last, data_offsets=[tensors[last]["data_offsets"][0],
                                                          tensors[last]["data_offsets"][1] + 4],
                                     shape=[len(blobs[last]) // 4 + 1]))
b0, e0 = tensors[second]["data_offsets"]
case("offsets_overlap", edited(second, data_offsets=[b0 - 4, e0 - 4]))
case("offsets_gap", pack(header, data + b"\0\0\0\0"))
case("unknown_dtype", edited(first, dtype="Q4"))
case("int_weight", edited(first, dtype="I32"))  # a valid file; the model cannot use it
shape = list(tensors[first]["shape"])
shape[-1] += 1
case("size_mismatch", edited(first, shape=shape))

m = named()
del m["generator.bias"]
case("missing_tensor", rebuild(m))
m = named()
dt, shape, b = m["generator.weight"]
m["generator.weight"] = (dt, shape[::-1], b)
case("wrong_shape", rebuild(m))
m = named()
m["extra.weight"] = ("F32", [2], struct.pack("<2f", 1.0, 2.0))
case("unexpected_tensor", rebuild(m))
m = named()
dt, shape, b = m["generator.weight"]
assert dt == "F32"
m["generator.weight"] = (dt, shape, struct.pack("<3f", float("nan"), float("nan"), float("inf")) + b[12:])
case("nan_weights", rebuild(m))

os.makedirs(os.path.join(out, "config_not_json"), exist_ok=True)
shutil.copy(os.path.join(src, "model.safetensors"), os.path.join(out, "config_not_json"))
open(os.path.join(out, "config_not_json", "config.json"), "w").write('{"d_model": 32,\n oops}')
c = dict(config)
del c["d_ff"]
case("config_missing_key", cfg=c)
case("config_wrong_type", cfg=dict(config, d_model="32"))
case("config_unknown_type", cfg=dict(config, model_type="funnel"))
case("config_indivisible", cfg=dict(config, n_heads=3))


# Weights elsewhere than in model.safetensors: a sharded checkpoint whose second
# shard is missing, and a directory of PyTorch pickles only.
def files_case(name, files):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    json.dump(config, open(os.path.join(d, "config.json"), "w"))
    for file_name, content in files.items():
        open(os.path.join(d, file_name), "wb").write(content)


half = set(by_offset[:len(by_offset) // 2])
index = {"metadata": {"total_size": len(data)},
         "weight_map": {k: "model-0000%d-of-00002.safetensors" % (1 if k in half else 2) for k in tensors}}
files_case("shard_missing", {"model.safetensors.index.json": json.dumps(index).encode(),
                             "model-00001-of-00002.safetensors": rebuild({k: v for k, v in named().items()
                                                                          if k in half})})
files_case("pickle_only", {"pytorch_model.bin": b"PK\x03\x04"})
