#!/usr/bin/env python3
"""Sentence embeddings by sentence-transformers itself: the reference that
vkformer's embeddings of a Hugging Face directory are compared with.

    tools/hf/.venv/bin/python tools/hf/reference_embeddings.py DIR --input texts.json --out ref.npy

DIR is a sentence-transformers directory (modules.json, 1_Pooling, ...; e.g.
models/hf/all-MiniLM-L6-v2) or a plain transformers one (then mean pooling, as
SentenceTransformer does for it). texts.json is a JSON array of strings, or a
file with one text per line. Writes SentenceTransformer(DIR).encode(texts,
convert_to_numpy=True) as a float32 array [len(texts), dim] to ref.npy (written
whole, then renamed). Offline: HF_HUB_OFFLINE=1, nothing is downloaded.
"""
import argparse
import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import warnings  # noqa: E402

import numpy as np  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)  # transformers 4.44 on tokenizer settings


def read_texts(path):
    text = open(path, encoding="utf-8").read()
    try:
        texts = json.loads(text)
    except ValueError:
        return text.splitlines()
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise SystemExit(f"reference_embeddings: {path}: expected a JSON array of strings")
    return texts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--input", required=True, help="JSON array of strings, or one text per line")
    ap.add_argument("--out", required=True, help=".npy file: float32 [texts, dim]")
    ap.add_argument("--batch-size", type=int, default=32)
    a = ap.parse_args()
    if not os.path.isdir(a.dir):
        raise SystemExit(f"reference_embeddings: {a.dir}: not a directory")
    from sentence_transformers import SentenceTransformer
    texts = read_texts(a.input)
    model = SentenceTransformer(a.dir, device="cpu")
    emb = model.encode(texts, convert_to_numpy=True, batch_size=a.batch_size).astype(np.float32)
    tmp = f"{a.out}.tmp-{os.getpid()}.npy"
    np.save(tmp, emb)
    os.replace(tmp, a.out)
    print(f"{a.out}: {emb.shape[0]} embeddings of {emb.shape[1]} from {a.dir}")


if __name__ == "__main__":
    main()
