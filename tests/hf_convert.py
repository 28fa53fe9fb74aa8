#!/usr/bin/python3
"""tools/hf/convert_to_safetensors.py, round trip and refusals.

    hf_convert.py VKFORMER MODELS_DIR                 with Debian's python (no safetensors package)
    hf_convert.py --hf HF_MODELS                      HF parity: needs `make hf-test-models`

Round trip: the weights of tests/models/* saved with torch.save as pytorch_model.bin
(one file, and two .bin shards with pytorch_model.bin.index.json), converted,
hold the same tensors in the same dtypes, and `vkformer forward` on the converted
directory writes the same bytes as on the original (single file, and
safetensors shards + index above --max-shard-size). Ties, shared storage, and
every refusal (existing output, not a state_dict, a pickle that would run code).
HF parity: transformers' own pytorch_model.bin of a tied masked LM converts to
exactly the bytes of its save_pretrained(safe_serialization=True).
"""
import collections
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "tools")
CONVERT = os.path.join(TOOLS, "hf", "convert_to_safetensors.py")
sys.path.insert(0, TOOLS)
from export_model import read_safetensors  # noqa: E402

TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
results = collections.Counter()


def check(ok, what):
    results["passed" if ok else "failed"] += 1
    print(f"{'ok' if ok else 'FAIL'}: {what}")
    return ok


def convert(d, *args, python=sys.executable):
    return subprocess.run([python, CONVERT, d, *args], capture_output=True, text=True)


def original_state_dict(model_dir):
    tensors, info = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    return collections.OrderedDict((k, t.to(TORCH_DTYPES[info[k]])) for k, t in tensors.items())


def same_tensors(a_path, b_sd):
    got, info = read_safetensors(a_path)
    return set(got) == set(b_sd) and all(TORCH_DTYPES[info[k]] == b_sd[k].dtype and
                                         torch.equal(got[k], b_sd[k].float()) for k in got)


def forward_bytes(vkf, d, golden, tmp):
    out = os.path.join(tmp, "out.npy")
    cmd = [vkf, "forward", "--model", d, "--out", out]
    for s in golden["src"]:
        cmd += ["--src-ids", ",".join(map(str, s))]
    for t in golden.get("tgt", []):
        cmd += ["--tgt-ids", ",".join(map(str, t))]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr)
        return None
    with open(out, "rb") as f:
        return f.read()


def new_dir(tmp, name, model_dir):
    d = os.path.join(tmp, name)
    os.makedirs(d)
    shutil.copy(os.path.join(model_dir, "config.json"), d)
    return d


def round_trips(vkf, models, tmp):
    for name in ["encdec_preln_gelu", "decoder_only", "encoder_bf16", "encdec_fp16"]:
        src = os.path.join(models, name)
        sd = original_state_dict(src)
        golden = json.load(open(os.path.join(src, "golden.json")))
        want = forward_bytes(vkf, src, golden, tmp)

        d = new_dir(tmp, name, src)
        torch.save(sd, os.path.join(d, "pytorch_model.bin"))
        r = convert(d)
        check(r.returncode == 0 and same_tensors(os.path.join(d, "model.safetensors"), sd),
              f"{name}: pytorch_model.bin -> model.safetensors holds the same tensors {r.stderr.strip()}")
        check(want is not None and forward_bytes(vkf, d, golden, tmp) == want,
              f"{name}: vkformer forward on the converted directory = on the original, to the byte")

        # Two .bin shards in, safetensors shards + index out.
        d = new_dir(tmp, name + "-sharded", src)
        names = list(sd)
        index = {"metadata": {}, "weight_map": {}}
        for i, part in enumerate([names[: len(names) // 2], names[len(names) // 2:]]):
            shard = f"pytorch_model-{i + 1:05d}-of-00002.bin"
            torch.save(collections.OrderedDict((k, sd[k]) for k in part), os.path.join(d, shard))
            index["weight_map"].update({k: shard for k in part})
        json.dump(index, open(os.path.join(d, "pytorch_model.bin.index.json"), "w"))
        r = convert(d, "--max-shard-size", "4KB")
        written = sorted(f for f in os.listdir(d) if "safetensors" in f)
        shards = [f for f in written if f.startswith("model-")]
        check(r.returncode == 0 and "model.safetensors.index.json" in written and len(shards) >= 2 and
              "model.safetensors" not in written,
              f"{name}: sharded .bin -> {len(shards)} safetensors shards + index {r.stderr.strip()}")
        check(forward_bytes(vkf, d, golden, tmp) == want,
              f"{name}: vkformer forward on the converted shards = on the original, to the byte")


def ties_and_sharing(tmp):
    d = os.path.join(tmp, "ties")
    os.makedirs(d)
    emb = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    big = torch.arange(10, dtype=torch.float16)
    sd = collections.OrderedDict([("embed.weight", emb), ("other", torch.ones(2, dtype=torch.bfloat16)),
                                  ("head.weight", emb),            # tied: the same tensor
                                  ("first_half", big[:5]), ("second_half", big[5:]),  # one storage, apart
                                  ("empty", torch.zeros(0, 3)), ("steps", torch.arange(3))])
    torch.save(sd, os.path.join(d, "pytorch_model.bin"))
    r = convert(d)
    check(r.returncode == 0 and "tied: head.weight is embed.weight" in r.stdout, "a tie is reported")
    with open(os.path.join(d, "model.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    check(n % 8 == 0 and list(header)[0] == "__metadata__" and header["__metadata__"] == {"format": "pt"},
          "header padded to 8 bytes, metadata {\"format\": \"pt\"} first")
    order = [k for k in header if k != "__metadata__"]
    check(order == ["steps", "embed.weight", "empty", "other", "first_half", "second_half"],
          f"one name per tie, tensors by dtype size then name: {order}")
    check(header["steps"]["dtype"] == "I64" and header["first_half"]["shape"] == [5], "dtypes and shapes kept")
    raw = open(os.path.join(d, "model.safetensors"), "rb").read()[8 + n:]
    b, e = header["second_half"]["data_offsets"]
    check(torch.equal(torch.frombuffer(bytearray(raw[b:e]), dtype=torch.float16), big[5:]),
          "a view into a shared storage is written as its own values")


class Evil:  # a pickle that would run a command when unpickled without weights_only
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def refusals(tmp):
    d = os.path.join(tmp, "refusals")
    os.makedirs(d)
    r = convert(d)
    check(r.returncode == 1 and "has neither pytorch_model.bin nor pytorch_model.bin.index.json" in r.stderr,
          "a directory without pickles is refused")
    torch.save({"w": torch.ones(2)}, os.path.join(d, "pytorch_model.bin"))
    check(convert(d).returncode == 0, "converts")
    r = convert(d)
    check(r.returncode == 1 and "model.safetensors exists; pass --force to replace it" in r.stderr,
          "an existing model.safetensors is not overwritten")
    torch.save({"w": torch.full((2,), 7.0)}, os.path.join(d, "pytorch_model.bin"))
    r = convert(d, "--force")
    got, _ = read_safetensors(os.path.join(d, "model.safetensors"))
    check(r.returncode == 0 and torch.equal(got["w"], torch.full((2,), 7.0)), "--force replaces it")
    check(not [f for f in os.listdir(d) if ".tmp" in f], "no temporary file left")

    for what, obj, needle in [("a list", [torch.ones(1)], "holds a list, not a state_dict"),
                              ("a non-tensor entry", {"w": 3}, "entry 'w' is not a tensor but int")]:
        if os.path.exists(os.path.join(d, "model.safetensors")):
            os.remove(os.path.join(d, "model.safetensors"))
        torch.save(obj, os.path.join(d, "pytorch_model.bin"))
        r = convert(d)
        check(r.returncode == 1 and needle in r.stderr and not os.path.exists(os.path.join(d, "model.safetensors")),
              f"{what} is refused: {r.stderr.strip()}")
    marker = os.path.join(tmp, "evil-ran")
    torch.save({"w": Evil(marker)}, os.path.join(d, "pytorch_model.bin"))
    r = convert(d)
    check(r.returncode == 1 and "cannot be read as a state_dict of tensors" in r.stderr and
          not os.path.exists(marker), f"a pickle that would run code is refused, and nothing ran: {r.stderr.strip()}")


def hf_parity(hf_models, tmp):
    """transformers' pytorch_model.bin of BertForMaskedLM (tied head) → the bytes of its safetensors."""
    src = os.path.join(hf_models, "bert_mlm_bin")
    venv = os.path.join(TOOLS, "hf", ".venv", "bin", "python")
    if not os.path.isdir(src) or not os.path.exists(venv):
        check(False, f"{src} or {venv} is missing: run `make hf-test-models`")
        return
    d = os.path.join(tmp, "bert_mlm_bin")
    shutil.copytree(src, d)
    # In the venv: first with the safetensors package, then with the converter's own writer.
    for args in [(), ("--force", "--builtin-writer")]:
        r = convert(d, *args, python=venv)
        check(r.returncode == 0 and filecmp.cmp(os.path.join(d, "model.safetensors"),
                                                os.path.join(hf_models, "bert_mlm", "model.safetensors"),
                                                shallow=False),
              f"bert_mlm_bin converted {' '.join(args)} = transformers' model.safetensors, byte for byte "
              f"{r.stderr.strip()}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        if sys.argv[1] == "--hf":
            hf_parity(os.environ.get("VKF_HF_MODELS") or sys.argv[2], tmp)
        else:
            round_trips(sys.argv[1], sys.argv[2], tmp)
            ties_and_sharing(tmp)
            refusals(tmp)
    print(f"{results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
