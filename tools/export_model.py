#!/usr/bin/python3
"""Writes a vkformer model directory (docs/model-format.md): config.json and
model.safetensors from a PyTorch module's state_dict(), names kept exactly.
safetensors is written by hand (no pip packages here): u64 LE header length N,
N bytes of JSON header padded with spaces to a multiple of 8, then the tensors'
little-endian data, contiguous, in state_dict() order.

As a library:
    from export_model import export
    export(module, config, "out/dir", dtype="F16")

From the command line (the module is tools/vkformer_torch.py's, built from the config):
    /usr/bin/python3 tools/export_model.py --config cfg.json --state-dict sd.pt --out DIR [--dtype F16]
    /usr/bin/python3 tools/export_model.py --config cfg.json --random-seed 0 --out DIR
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2)}


def round_to(t, dtype):
    """t rounded to dtype ("F32", "F16", "BF16", round to nearest even) and back to float32."""
    return t.detach().to(DTYPES[dtype][0]).float()


def _tensor_bytes(t, dtype):
    t = t.detach().contiguous().cpu()
    if dtype == "F32":
        return t.float().numpy().astype("<f4").tobytes()
    if dtype == "F16":
        return t.to(torch.float16).numpy().astype("<f2").tobytes()
    if dtype == "BF16":
        return t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
    raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")


def write_safetensors(path, tensors, dtype="F32", metadata=None):
    """tensors: {name: floating tensor}, written in iteration order as `dtype`.
    Raises ValueError if a tensor is not floating point or is not finite in `dtype`."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {list(DTYPES)}, got {dtype!r}")
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        if not torch.is_floating_point(t):
            raise ValueError(f"tensor '{name}' is {t.dtype}, not floating point")
        if not torch.isfinite(round_to(t, dtype)).all():
            raise ValueError(f"tensor '{name}' has values that are not finite in {dtype}")
        b = _tensor_bytes(t, dtype)
        assert len(b) == t.numel() * DTYPES[dtype][1]
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read_safetensors(path):
    """({name: float32 tensor}, {name: dtype string} + "__metadata__"), checking the layout:
    header length, JSON, dtypes, shape × size = bytes, offsets contiguous from 0 to the end."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    tensors, info = {}, {"__metadata__": header.pop("__metadata__", {})}
    spans = []
    for name, h in header.items():
        dt = h["dtype"]
        if dt not in DTYPES:
            raise ValueError(f"{path}: tensor '{name}' has dtype {dt}")
        b, e = h["data_offsets"]
        count = int(np.prod(h["shape"])) if h["shape"] else 1
        if e - b != count * DTYPES[dt][1] or not 0 <= b <= e <= len(body):
            raise ValueError(f"{path}: tensor '{name}' offsets {b}..{e} do not fit its shape or the file")
        raw = body[b:e]
        if dt == "F32":
            a = np.frombuffer(raw, "<f4").astype(np.float32)
        elif dt == "F16":
            a = np.frombuffer(raw, "<f2").astype(np.float32)
        else:
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        tensors[name] = torch.from_numpy(a.copy()).reshape(h["shape"])
        info[name] = dt
        spans.append((b, e))
    spans.sort()
    pos = 0
    for b, e in spans:
        if b != pos:
            raise ValueError(f"{path}: data has a gap or overlap at byte {pos}")
        pos = e
    if pos != len(body):
        raise ValueError(f"{path}: {len(body) - pos} bytes after the last tensor")
    return tensors, info


def export(module, config, out_dir, dtype="F32"):
    """Writes out_dir/config.json and out_dir/model.safetensors (every tensor of
    module.state_dict(), same names, stored as dtype), then reads the file back and
    checks it holds exactly the dtype-rounded weights. Returns the safetensors path."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import vkformer_torch
    vkformer_torch.check_config(config)
    os.makedirs(out_dir, exist_ok=True)
    sd = module.state_dict()
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    path = os.path.join(out_dir, "model.safetensors")
    write_safetensors(path, sd, dtype, metadata={"format": "pt"})
    back, info = read_safetensors(path)
    if list(back) != list(sd):
        raise AssertionError(f"{path}: names read back differ from the state_dict")
    for name, t in sd.items():
        if not torch.equal(back[name], round_to(t, dtype)) or info[name] != dtype:
            raise AssertionError(f"{path}: tensor '{name}' does not read back as written")
    return path


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Write a vkformer model directory (config.json + model.safetensors) from "
                    "a PyTorch state_dict whose names are those of tools/vkformer_torch.py's module "
                    "(see docs/model-format.md).")
    p.add_argument("--config", required=True, help="config.json to use (copied to the output)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--state-dict", help="torch.save()'d state_dict, or a whole module, "
                                          "with vkformer's tensor names")
    src.add_argument("--random-seed", type=int,
                     help="no weights: PyTorch's default initialization with this seed")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--dtype", default="F32", choices=list(DTYPES), help="storage dtype (default F32)")
    p.add_argument("--no-generator", action="store_true",
                   help="with --random-seed: no output projection")
    p.add_argument("--final-norm", choices=["yes", "no"],
                   help="with --random-seed, encoder-only models: transformer.encoder.norm or not "
                        "(default: yes if norm_first)")
    a = p.parse_args(argv)

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import vkformer_torch
    with open(a.config) as f:
        config = json.load(f)
    if a.state_dict:
        sd = torch.load(a.state_dict, map_location="cpu")
        if isinstance(sd, torch.nn.Module):
            sd = sd.state_dict()
        module = vkformer_torch.build_model(config, generator="generator.weight" in sd,
                                            final_norm="transformer.encoder.norm.weight" in sd)
        try:
            module.load_state_dict(sd, strict=True)
        except RuntimeError as e:
            sys.exit(f"{a.state_dict} does not match {a.config}: {e}")
    else:
        torch.manual_seed(a.random_seed)
        fn = None if a.final_norm is None else a.final_norm == "yes"
        module = vkformer_torch.build_model(config, generator=not a.no_generator, final_norm=fn)
    path = export(module, config, a.out, a.dtype)
    n = sum(t.numel() for t in module.state_dict().values())
    print(f"wrote {os.path.join(a.out, 'config.json')} and {path}: "
          f"{len(module.state_dict())} tensors, {n} values, {a.dtype}, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
