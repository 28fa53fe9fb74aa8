#!/usr/bin/env python3
"""Converts a Hugging Face model directory's PyTorch pickles into safetensors,
the only weights format vkformer reads (it never unpickles).

    convert_to_safetensors.py DIR [--force] [--max-shard-size 2GB]

Reads DIR/pytorch_model.bin, or DIR/pytorch_model.bin.index.json and the shards
it names, with torch.load(map_location="cpu", weights_only=True): tensors only,
no code from the file runs. Writes what transformers' save_pretrained(...,
safe_serialization=True) writes for the same weights:

- DIR/model.safetensors, or, above --max-shard-size, the shards
  model-00001-of-0000N.safetensors and model.safetensors.index.json
  ({"metadata": {"total_size": bytes}, "weight_map": {name: shard}});
- tied tensors once: names that view the same storage in the same way (a tied
  LM head and the word embeddings) keep the first name in state_dict order, the
  one save_pretrained keeps (BERT, RoBERTa, DistilBERT, GPT-2, T5 heads);
  tensors that merely share a storage are copied apart;
- every tensor contiguous, metadata {"format": "pt"}; the layout of the
  safetensors package (header JSON without spaces, padded with spaces to a
  multiple of 8; tensors ordered by dtype size, then name). The package is used
  when it is installed; otherwise the same bytes are written here.

Refuses to overwrite model.safetensors (or its index) unless --force. Writes
temporary files in DIR and renames them, so an interrupted run leaves no
partial file under the final name. Works with Debian's /usr/bin/python3 (torch
1.13, no safetensors package) and in tools/hf/.venv.

Limit: ties are found through shared storage, so two tied names saved in
different .bin shards are both kept (as two equal tensors).
"""
import argparse
import collections
import inspect
import json
import os
import re
import sys

import torch

SAFE, SAFE_INDEX = "model.safetensors", "model.safetensors.index.json"
PICKLE, PICKLE_INDEX = "pytorch_model.bin", "pytorch_model.bin.index.json"

# The safetensors dtypes in the order of the package's Dtype enum; files list
# tensors by this rank, largest first, then by name.
DTYPE_RANK = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
              "F64", "I64", "U64"]
DTYPE_NAMES = {torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16",
               torch.float16: "F16", torch.bfloat16: "BF16", torch.int32: "I32", torch.float32: "F32",
               torch.float64: "F64", torch.int64: "I64"}


class Refused(Exception):
    """A one-line reason the conversion cannot go on."""


def size_in_bytes(text):
    """'2GB' (decimal), '2GiB' (binary), '20KB', or a plain number of bytes, as transformers reads them."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]i?B)?\s*", str(text), re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 2GB, 500MiB, 1000000)")
    unit = (m.group(2) or "B").upper()
    scale = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}[unit]
    return int(float(m.group(1)) * scale)


def load_pickle(path):
    kwargs = {"map_location": "cpu"}
    if "weights_only" in inspect.signature(torch.load).parameters:
        kwargs["weights_only"] = True
    try:
        sd = torch.load(path, **kwargs)
    except Exception as e:  # the unpickler's refusals and corrupt files alike
        why = str(e).split("WeightsUnpickler error:")[-1].strip()  # not torch's advice to unpickle anyway
        raise Refused(f"{path}: cannot be read as a state_dict of tensors (torch.load, weights_only): "
                      f"{type(e).__name__}: {why.splitlines()[0] if why else ''}")
    if not isinstance(sd, dict):
        raise Refused(f"{path}: holds a {type(sd).__name__}, not a state_dict (a dict of tensors)")
    for name, t in sd.items():
        if not isinstance(t, torch.Tensor):
            raise Refused(f"{path}: entry {name!r} is not a tensor but {type(t).__name__}")
        if t.dtype not in DTYPE_NAMES:
            raise Refused(f"{path}: tensor {name!r} has dtype {t.dtype}, which safetensors cannot hold")
    return sd


def read_state_dict(d):
    """The directory's pickled state_dict(s), merged in HF's order (shards by file name)."""
    single, index = os.path.join(d, PICKLE), os.path.join(d, PICKLE_INDEX)
    if os.path.exists(single):
        return load_pickle(single)
    if not os.path.exists(index):
        raise Refused(f"{d}: has neither {PICKLE} nor {PICKLE_INDEX}")
    try:
        weight_map = json.load(open(index))["weight_map"]
    except Exception:
        weight_map = None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise Refused(f"{index}: not an index (JSON with a \"weight_map\" of tensor name -> shard file)")
    merged = collections.OrderedDict()
    for shard in sorted(set(weight_map.values())):
        path = os.path.join(d, shard)
        if not os.path.exists(path):
            raise Refused(f"{index}: shard {shard!r} is missing ({path})")
        sd = load_pickle(path)
        for name, t in sd.items():
            if name in merged:
                raise Refused(f"{index}: tensor {name!r} is in two shards")
            merged[name] = t
    missing = [n for n in weight_map if n not in merged]
    if missing:
        raise Refused(f"{index}: maps {missing[0]!r} to {weight_map[missing[0]]!r}, which does not hold it")
    return merged


def storage_ptr(t):
    return (t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()).data_ptr()


def untie(sd):
    """(tensors to write, {dropped name: kept name}). Names viewing the same
    storage identically keep the first; other tensors sharing storage are copied."""
    kept, tied, views, shared = collections.OrderedDict(), {}, {}, collections.Counter()
    for name, t in sd.items():
        if t.numel() == 0:
            kept[name] = t
            continue
        view = (storage_ptr(t), t.storage_offset(), tuple(t.shape), t.stride(), t.dtype)
        if view in views:
            tied[name] = views[view]
            continue
        views[view] = name
        shared[view[0]] += 1
        kept[name] = t
    out = collections.OrderedDict()
    for name, t in kept.items():
        t = t.detach()
        alone = t.numel() == 0 or shared[storage_ptr(t)] == 1
        out[name] = t.contiguous() if alone else t.clone(memory_format=torch.contiguous_format)
    return out, tied


def tensor_bytes(t):
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: the same 2 bytes as int16
        t = t.view(torch.int16)
    return t.contiguous().numpy().tobytes()


def write_builtin(tensors, path, metadata):
    """The safetensors package's layout, written here (for Pythons without it)."""
    assert sys.byteorder == "little"
    order = sorted(tensors, key=lambda n: (-DTYPE_RANK.index(DTYPE_NAMES[tensors[n].dtype]), n))
    header, offset = collections.OrderedDict(), 0
    if metadata:
        header["__metadata__"] = metadata
    for name in order:
        t = tensors[name]
        size = t.numel() * t.element_size()
        header[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for name in order:
            f.write(tensor_bytes(tensors[name]))


def write_file(tensors, path, builtin):
    metadata = {"format": "pt"}
    if not builtin:
        try:
            from safetensors.torch import save_file
        except ImportError:
            builtin = True
    if builtin:
        write_builtin(tensors, path, metadata)
    else:
        save_file(tensors, path, metadata=metadata)


def shard(tensors, max_bytes):
    """Greedy in state_dict order, as huggingface_hub splits a state_dict."""
    shards, current, current_size = [], collections.OrderedDict(), 0
    for name, t in tensors.items():
        size = t.numel() * t.element_size()
        if size > max_bytes:
            shards.append(collections.OrderedDict([(name, t)]))
            continue
        if current and current_size + size > max_bytes:
            shards.append(current)
            current, current_size = collections.OrderedDict(), 0
        current[name] = t
        current_size += size
    if current:
        shards.append(current)
    return shards


def convert(d, force=False, max_shard_size=2 * 10**9, builtin=False):
    """Writes d's safetensors; returns (the files written, {dropped tied name: kept name})."""
    existing = [f for f in (SAFE, SAFE_INDEX) if os.path.exists(os.path.join(d, f))]
    if existing and not force:
        raise Refused(f"{d}: {existing[0]} exists; pass --force to replace it")
    tensors, tied = untie(read_state_dict(d))
    parts = shard(tensors, max_shard_size)
    names = [SAFE] if len(parts) <= 1 else [f"model-{i + 1:05d}-of-{len(parts):05d}.safetensors"
                                             for i in range(len(parts))]
    tmp = {n: os.path.join(d, f".{n}.tmp-{os.getpid()}") for n in names + [SAFE_INDEX]}
    try:
        for name, part in zip(names, parts or [{}]):
            write_file(part, tmp[name], builtin)
        if len(names) > 1:
            index = {"metadata": {"total_size": sum(t.numel() * t.element_size() for t in tensors.values())},
                     "weight_map": {t: n for n, part in zip(names, parts) for t in part}}
            with open(tmp[SAFE_INDEX], "w") as f:
                f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
            names.append(SAFE_INDEX)
        stale = stale_outputs(d, names)
        for name in names:  # the index last: it never names a shard not yet in place
            os.replace(tmp[name], os.path.join(d, name))
        for path in stale:
            os.remove(path)
    finally:
        for path in tmp.values():
            if os.path.exists(path):
                os.remove(path)
    return [os.path.join(d, n) for n in names], tied


def stale_outputs(d, written):
    """With --force: the previous conversion's files that the new one does not replace."""
    old = [SAFE, SAFE_INDEX]
    try:
        old += list(json.load(open(os.path.join(d, SAFE_INDEX)))["weight_map"].values())
    except Exception:
        pass
    return sorted({os.path.join(d, n) for n in old
                   if n not in written and re.fullmatch(r"model(-\d{5}-of-\d{5})?\.safetensors(\.index\.json)?", n)
                   and os.path.exists(os.path.join(d, n))})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="a Hugging Face model directory with pytorch_model.bin")
    ap.add_argument("--force", action="store_true", help="replace an existing model.safetensors")
    ap.add_argument("--max-shard-size", type=size_in_bytes, default=2 * 10**9,
                    help="split into shards above this size (default 2GB, decimal as in transformers)")
    ap.add_argument("--builtin-writer", action="store_true",
                    help="write the format here even when the safetensors package is installed (tests)")
    a = ap.parse_args()
    try:
        files, tied = convert(a.dir, a.force, a.max_shard_size, a.builtin_writer)
    except Refused as e:
        sys.exit(f"convert_to_safetensors: {e}")
    for dropped, kept in tied.items():
        print(f"tied: {dropped} is {kept} (written once, as {kept})")
    for f in files:
        print(f"wrote {f}")


if __name__ == "__main__":
    main()
