"""T5 directories for make_tiny_models.py: tiny random T5ForConditionalGeneration
models (relu with tied embeddings; gated-gelu untied), their goldens, and the
bucket table of HF's _relative_position_bucket.

golden.json of a t5_* directory:

    {"src":    [[int, ...], ...],   3 sources of unequal lengths (T5_SRC), each ending in EOS
     "tgt":    [[int, ...], ...],   3 decoder inputs (T5_TGT), each starting with decoder_start_token_id
     "outputs": {"logits": [seq][position][vocab]},   each (src, tgt) pair run alone, fp32
     "greedy": [[int, ...], ...],   generate(do_sample=False, max_new_tokens=T5_NEW) on each source
                                    alone: the new tokens (no start token), stopping before EOS
     "beam":   [[int, ...], ...],   the same with BEAM (num_beams, length_penalty, no_repeat_ngram_size)
     "beam_options": {...},
     "eos": int,                    config.eos_token_id: a token one greedy run makes at step ≥ 3
     "greedy_margin": float}        the smallest top-1 minus top-2 logit of the greedy steps

t5_buckets/golden.json: {"cases": [{"num_buckets", "max_distance", "bidirectional",
"relative_positions": [...], "buckets": [...]}]} from
T5Attention._relative_position_bucket itself.
"""
import json
import os
import random
import subprocess
import tempfile

import torch
from transformers import T5Config, T5ForConditionalGeneration, T5TokenizerFast
from transformers.models.t5.modeling_t5 import T5Attention

T5_SRC = [7, 3, 11]
T5_TGT = [5, 2, 8]
T5_NEW = 8
BEAM = dict(num_beams=3, length_penalty=0.7, no_repeat_ngram_size=2)


def t5_config(**kw):
    c = dict(vocab_size=97, d_model=40, d_kv=12, num_heads=3, d_ff=52, num_layers=2, num_decoder_layers=3,
             relative_attention_num_buckets=8, relative_attention_max_distance=20, dropout_rate=0.0,
             feed_forward_proj="relu", tie_word_embeddings=True, pad_token_id=0, eos_token_id=1,
             decoder_start_token_id=0, initializer_factor=1.0)
    c.update(kw)
    return T5Config(**c)


# name: (seed, config). d_kv·num_heads ≠ d_model in both (T5's inner dim).
T5_MODELS = {
    # Tied heads repeat their input token at HF's default init: a wider init varies the output.
    "t5_relu_tied": (43, lambda: t5_config(initializer_factor=5.0)),
    "t5_gated_untied": (41, lambda: t5_config(d_model=48, d_kv=16, num_heads=4, d_ff=56, num_decoder_layers=2,
                                              relative_attention_num_buckets=32,
                                              relative_attention_max_distance=128,
                                              feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                                              layer_norm_epsilon=1e-5)),
}


def generate(model, src, **kw):
    """Each source alone: the new tokens before EOS, and the greedy steps' smallest margin."""
    out, margin = [], float("inf")
    eos = model.generation_config.eos_token_id
    for s in src:
        g = model.generate(torch.tensor([s]), attention_mask=torch.ones(1, len(s), dtype=torch.long),
                           do_sample=False, max_new_tokens=T5_NEW, output_scores=True,
                           return_dict_in_generate=True, **kw)
        new = g.sequences[0, 1:].tolist()  # after decoder_start_token_id
        if kw.get("num_beams", 1) == 1:
            for sc in g.scores:
                top = torch.topk(sc[0], 2).values
                margin = min(margin, float(top[0] - top[1]))
        new = new[:new.index(eos)] if eos is not None and eos in new else new
        out.append(new)  # beams shorter than the longest are padded only after their EOS
    return out, margin


def make_t5(out, name, manifest, randomize, write_golden):
    seed, config = T5_MODELS[name]
    torch.manual_seed(seed)
    cfg = config()
    model = T5ForConditionalGeneration(cfg)
    randomize(model, seed)
    model.eval()
    rng = random.Random(seed)
    src = [[rng.randrange(2, cfg.vocab_size) for _ in range(n - 1)] + [cfg.eos_token_id] for n in T5_SRC]
    tgt = [[cfg.decoder_start_token_id] + [rng.randrange(2, cfg.vocab_size) for _ in range(n - 1)] for n in T5_TGT]
    with torch.no_grad():
        # EOS: a token some source's greedy run makes first at its 3rd step or later.
        model.generation_config.eos_token_id = None
        free, _ = generate(model, src)
        eos = next((t for run in free for i, t in enumerate(run) if i >= 2 and t not in run[:i] and t >= 2), free[0][-1])
        model.config.eos_token_id = model.generation_config.eos_token_id = eos
        logits = [model(input_ids=torch.tensor([s]), decoder_input_ids=torch.tensor([t])).logits[0].tolist()
                  for s, t in zip(src, tgt)]
        greedy, margin = generate(model, src)
        beam, _ = generate(model, src, **BEAM)
    d = os.path.join(out, name)
    model.save_pretrained(d, safe_serialization=True)
    write_golden(d, {"src": src, "tgt": tgt, "outputs": {"logits": logits}, "greedy": greedy, "beam": beam,
                     "beam_options": BEAM, "eos": eos, "greedy_margin": margin})
    manifest[name] = {"class": "T5ForConditionalGeneration", "seed": seed, "dtype": "F32"}


# (num_buckets, max_distance): T5's defaults, the tiny models', odd counts, a max_distance
# just above max_exact, and long ones.
BUCKET_CONFIGS = [(32, 128), (8, 20), (6, 10), (9, 13), (16, 50), (64, 256), (10, 6), (128, 1000)]


def make_buckets(out):
    rel = torch.arange(-1200, 1201)
    cases = []
    for nb, md in BUCKET_CONFIGS:
        for bidi in (True, False):
            b = T5Attention._relative_position_bucket(rel, bidirectional=bidi, num_buckets=nb, max_distance=md)
            cases.append({"num_buckets": nb, "max_distance": md, "bidirectional": bidi,
                          "relative_positions": rel.tolist(), "buckets": b.tolist()})
    os.makedirs(os.path.join(out, "t5_buckets"), exist_ok=True)
    with open(os.path.join(out, "t5_buckets", "golden.json"), "w") as f:
        json.dump({"cases": cases}, f, separators=(",", ":"))


T5_TEXTS = ["translate English to German: The house is wonderful.", "summarize: a cat sat on the mat.",
            "Hello, world!"]
T5_CORPUS = ("translate English to German: the house is wonderful. summarize: studies have shown that owning a "
             "dog is good for you. a cat sat on the mat, hello world! das Haus ist wunderbar. questions: where "
             "is the station? numbers 1 2 3 4 5 10 100 and 2024. The quick brown fox jumps over the lazy dog.")


def make_t5_text(out, manifest, randomize, write_golden):
    """t5_text: a gated T5 with the tokenizer of a SentencePiece model trained by Debian's spm_train
    (T5's pad 0, eos 1, unk 2), converted by T5TokenizerFast; vocab_size = len(tokenizer). Its golden
    adds "texts" and "greedy_texts" (generate() on each text alone, decoded skipping special tokens)."""
    d = os.path.join(out, "t5_text")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w") as f:
            f.write("\n".join(T5_CORPUS.split(". ")) + "\n")
        subprocess.run(["spm_train", f"--input={corpus}", f"--model_prefix={tmp}/spm", "--vocab_size=70",
                        "--model_type=unigram", "--pad_id=0", "--eos_id=1", "--unk_id=2", "--bos_id=-1",
                        "--num_threads=1", "--minloglevel=2"], check=True, capture_output=True)
        tok = T5TokenizerFast(vocab_file=f"{tmp}/spm.model", extra_ids=10)
        tok.save_pretrained(d)
    tok = T5TokenizerFast.from_pretrained(d)
    seed = 44
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(t5_config(vocab_size=len(tok), d_model=32, d_kv=8, num_heads=4, d_ff=48,
                                                 num_decoder_layers=2, feed_forward_proj="gated-gelu",
                                                 tie_word_embeddings=False))
    randomize(model, seed)
    model.eval()
    src = [tok(t)["input_ids"] for t in T5_TEXTS]
    tgt = [[0] + s[:4] for s in src]
    with torch.no_grad():
        greedy, margin = generate(model, src)
        logits = [model(input_ids=torch.tensor([s]), decoder_input_ids=torch.tensor([t])).logits[0].tolist()
                  for s, t in zip(src, tgt)]
    model.save_pretrained(d, safe_serialization=True)
    write_golden(d, {"texts": T5_TEXTS, "src": src, "tgt": tgt, "outputs": {"logits": logits}, "greedy": greedy,
                     "greedy_texts": [tok.decode(g, skip_special_tokens=True) for g in greedy],
                     "eos": model.config.eos_token_id, "greedy_margin": margin})
    manifest["t5_text"] = {"class": "T5ForConditionalGeneration", "seed": seed, "dtype": "F32",
                           "tokenizer": "spm_train unigram 70 + 10 extra ids, T5TokenizerFast"}


def make_all(out, manifest, randomize, write_golden):
    for name in T5_MODELS:
        make_t5(out, name, manifest, randomize, write_golden)
    make_t5_text(out, manifest, randomize, write_golden)
    make_buckets(out)


if __name__ == "__main__":  # development: add the T5 directories to an existing OUT_DIR
    import sys
    sys.path.insert(0, os.path.dirname(__file__))
    import make_tiny_models as m
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    mf = {}
    make_all(sys.argv[1], mf, m.randomize, m.write_golden)
    print(json.dumps(mf))
