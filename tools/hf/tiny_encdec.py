"""Tiny random BART, Marian and mBART models, made and run by Hugging Face's own
code: part of tools/hf/make_tiny_models.py (which documents the common format).

Each directory (from_config → save_pretrained) has golden.json:

    {"src":      [[int, ...], ...]   3 sources of unequal lengths (SRC_LENGTHS), ending in EOS
     "tgt":      [[int, ...], ...]   3 decoder inputs (TGT_LENGTHS), starting with the decoder start token
     "outputs":  {"logits": [seq][position][vocab]}              *ForConditionalGeneration, MarianMTModel
                 {"last_hidden_state": [seq][position][hidden]}  the bare *Model (the decoder's output)
     "generate": [{"options": {HF generate() kwargs}, "out": [[int, ...], ...],
                   "margin": float}, ...]}

each source run alone, fp32. "out" is what generate(source, **options) made after
the decoder start token, up to (not including) the first EOS; the directory's
generation_config.json supplies everything the options do not (decoder start,
forced BOS/EOS, bad words...). "margin" is the smallest gap, over every step of
greedy search, between the best and second-best processed score (null for beam
search), so that a vkformer run within the forward bound must choose the same tokens.

final_logits_bias (a buffer, not a parameter) gets noise too, and EOS a push so
that sequences end at various steps and beam search has ended hypotheses to rank.
"""
import json
import os
import random
import warnings

import torch
from transformers import (BartConfig, BartForConditionalGeneration, BartModel, MarianConfig, MarianMTModel,
                          MBartConfig, MBartForConditionalGeneration)

# MarianTokenizer's advice (sacremoses, which only prepare_seq2seq_batch would use) and
# 4.44's notice about clean_up_tokenization_spaces' future default: expected, not news.
warnings.filterwarnings("ignore", message="Recommended: pip install sacremoses")
warnings.filterwarnings("ignore", message="`clean_up_tokenization_spaces` was not set")

SRC_LENGTHS = [7, 3, 11]
TGT_LENGTHS = [5, 2, 8]
NEW = 8
GENERATE = [
    dict(max_new_tokens=NEW),
    dict(max_new_tokens=NEW, num_beams=3),
    dict(max_new_tokens=NEW, num_beams=3, length_penalty=0.6, no_repeat_ngram_size=2),
    dict(max_new_tokens=NEW, num_beams=4, early_stopping=True, length_penalty=1.3),
    dict(max_new_tokens=NEW, num_beams=2, early_stopping="never", length_penalty=2.0),
    dict(max_new_tokens=NEW, num_beams=3, early_stopping="never", length_penalty=-0.5),
]


def bart_config(cls=BartConfig, **kw):
    c = dict(vocab_size=99, d_model=36, encoder_layers=2, decoder_layers=2, encoder_attention_heads=3,
             decoder_attention_heads=3, encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=40,
             init_std=0.2)
    c.update(kw)
    return cls(**c)


def marian_config(**kw):
    c = dict(vocab_size=97, d_model=40, encoder_layers=2, decoder_layers=2, encoder_attention_heads=5,
             decoder_attention_heads=5, encoder_ffn_dim=43, decoder_ffn_dim=43, max_position_embeddings=40,
             init_std=0.2, pad_token_id=96, decoder_start_token_id=96, eos_token_id=0, forced_eos_token_id=0,
             activation_function="swish", scale_embedding=True, bad_words_ids=[[96]])
    c.update(kw)
    return MarianConfig(**c)


# name: (seed, class, config, EOS push)
ENCDEC_MODELS = {
    "bart_lm": (40, BartForConditionalGeneration, lambda: bart_config(), 1.0),
    "bart_lm_untied": (41, BartForConditionalGeneration,
                       lambda: bart_config(scale_embedding=True, activation_function="relu", tie_word_embeddings=False,
                                           forced_bos_token_id=0), 1.0),
    "bart_model": (42, BartModel, lambda: bart_config(activation_function="gelu_new"), 0.0),
    "marian_mt": (43, MarianMTModel, lambda: marian_config(), 1.0),
    "marian_mt_separate": (44, MarianMTModel,
                           lambda: marian_config(share_encoder_decoder_embeddings=False, tie_word_embeddings=False,
                                                 d_model=30, encoder_attention_heads=3, decoder_attention_heads=3,
                                                 activation_function="relu"), 1.0),
    "mbart_lm": (45, MBartForConditionalGeneration,
                 lambda: bart_config(MBartConfig, scale_embedding=True, decoder_start_token_id=2), 1.0),
}


def randomize(model, seed, eos, push):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            if not p.requires_grad:  # Marian's sinusoid table: fixed, and not saved
                continue
            p.add_(torch.randn(p.shape, generator=g) * (0.2 if p.dim() == 1 else 0.05))
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.copy_(torch.randn(model.final_logits_bias.shape, generator=g) * 0.5)
            model.final_logits_bias[0, eos] += push


def sources(seed, cfg):
    rng = random.Random(seed)
    special = {cfg.pad_token_id, cfg.eos_token_id, cfg.bos_token_id, cfg.decoder_start_token_id}
    words = [i for i in range(cfg.vocab_size) if i not in special]
    bos = [cfg.bos_token_id] if cfg.model_type != "marian" else []
    src = [bos + [rng.choice(words) for _ in range(n - 1 - len(bos))] + [cfg.eos_token_id] for n in SRC_LENGTHS]
    tgt = [[cfg.decoder_start_token_id] + [rng.choice(words) for _ in range(n - 1)] for n in TGT_LENGTHS]
    return src, tgt


def cut(seq, eos):
    """The generated tokens after the decoder start, before the first EOS."""
    seq = seq[1:]
    return seq[:seq.index(eos)] if eos in seq else seq


def margin(g, opts):
    """The smallest gap at a decision of greedy search (best vs second); inf for beam search."""
    m = float("inf")
    k = opts.get("num_beams", 1)
    for sc in g.scores:
        if k == 1:
            top = torch.topk(sc[0], 2).values
            m = min(m, float(top[0] - top[1]))
    return m


def run(model, src, tgt, lm):
    model.eval()
    res = {"src": src, "tgt": tgt}
    with torch.no_grad():
        outs = []
        for s, t in zip(src, tgt):
            o = model(input_ids=torch.tensor([s]), decoder_input_ids=torch.tensor([t]), return_dict=True)
            outs.append((o.logits if lm else o.last_hidden_state)[0].tolist())
        res["outputs"] = {("logits" if lm else "last_hidden_state"): outs}
        if not lm:
            return res
        eos = model.generation_config.eos_token_id
        res["generate"] = []
        for opts in GENERATE:
            out, m = [], float("inf")
            for s in src:
                g = model.generate(torch.tensor([s]), attention_mask=torch.ones(1, len(s), dtype=torch.long),
                                   do_sample=False, output_scores=True, return_dict_in_generate=True, **opts)
                out.append(cut(g.sequences[0].tolist(), eos))
                m = min(m, margin(g, opts))
            res["generate"].append({"options": opts, "out": out, "margin": m if m != float("inf") else None})
    return res


def make_encdec(out, name, manifest):
    seed, cls, config, push = ENCDEC_MODELS[name]
    torch.manual_seed(seed)
    cfg = config()
    model = cls(cfg)
    randomize(model, seed, cfg.eos_token_id, push)
    src, tgt = sources(seed, cfg)
    d = os.path.join(out, name)
    model.save_pretrained(d, safe_serialization=True)
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump(run(model, src, tgt, cls is not BartModel), f, separators=(",", ":"))
    manifest[name] = {"class": cls.__name__, "seed": seed, "dtype": "F32"}


# ---- the Marian tokenizer ---------------------------------------------------
# marian_tok/: source.spm and target.spm trained here by Debian's spm_train on two
# small corpora, vocab.json (</s> 0, <unk> 1, the pieces of both models, every
# 17th left out so that some pieces map to <unk>, <pad> last), saved by
# MarianTokenizer.save_pretrained; tok_golden.json: {"texts": [...], "ids": [...]
# (MarianTokenizer(text).input_ids), "decode": [{"ids": [...], "text": str}]
# (decode(ids, skip_special_tokens=True) of target-side id lists)}.
WORDS_EN = ("the a of to and in is was he for it with as his on be at by i this had not are but from or have an "
            "they which one you were her all she there would their we him been has when who will more no if out so "
            "said what up its about into than them can only other new some could time these two may then do first "
            "any my now such like our over man me even most made after also did many before must through back years "
            "where much your way well down should because each just those people how too little state good very make "
            "world still own see men work long get here between both life being under never day same another know "
            "naïve café façade résumé Zürich Straße übermäßig ça va très bien déjà vu").split()
WORDS_DE = ("der die das und ist nicht ein eine zu den von mit sich des auf für im dem es an auch als wie aus "
            "er hat noch nach bei einen um wird so sind nur oder war aber vor zur bis mehr durch man sein wurde "
            "Größe Grüße schön über Mädchen Brötchen Ärger Öl Übung heißt groß weiß Fuß Straße").split()
PUNCT = list(".,;:!?'\"()-") + ["...", "—", "«", "»", "„", "“", "”", "’"]
ODD = ["日本語", "中文字", "한국어", "Ελληνικά", "русский", "עברית", "العربية", "😀", "👍🏽", "🇩🇪", "e\u0301", "ﬁ",
       "Ⅻ", "①", "½", "\u00a0", "\t", "  ", "x²", "№", "™", "12,345.67", "2026-11-22", "3rd", "http://a.b/c?d=1"]


def _corpus(rng, words, n):
    lines = []
    for _ in range(n):
        k = rng.randrange(3, 14)
        s = " ".join(rng.choice(words) for _ in range(k))
        if rng.random() < 0.5:
            s = s[0].upper() + s[1:]
        lines.append(s + rng.choice([".", "!", "?", ",", ""]))
    return lines


def tokenizer_texts(rng):
    texts = ["", " ", "Hello world.", "  leading and trailing  ", ">>de<< Guten Morgen.", ">>fr<< ça va? >>es<< hola",
             "no>>code<<here", ">>x<<", ">><<", "a\nb", "multi\n>>fr<< line", "UPPER CASE WORDS", "mIxEd CaSe"]
    pool = WORDS_EN + WORDS_DE
    while len(texts) < 320:
        parts = []
        for _ in range(rng.randrange(1, 12)):
            r = rng.random()
            parts.append(rng.choice(pool) if r < 0.7 else rng.choice(PUNCT) if r < 0.85 else rng.choice(ODD))
        sep = rng.choice([" ", " ", " ", "", "  "])
        t = sep.join(parts)
        if rng.random() < 0.1:
            t = rng.choice([">>de<< ", ">>fr<<", ">>es<< "]) + t
        texts.append(t)
    return texts


def make_marian_tokenizer(out, manifest, seed=50):
    import subprocess
    import tempfile
    from transformers import MarianTokenizer
    rng = random.Random(seed)
    d = os.path.join(out, "marian_tok")
    with tempfile.TemporaryDirectory() as tmp:
        models = {}
        for side, words in (("source", WORDS_EN), ("target", WORDS_DE)):
            corpus = os.path.join(tmp, side + ".txt")
            with open(corpus, "w") as f:
                f.write("\n".join(_corpus(rng, words + PUNCT[:6], 400)) + "\n")
            prefix = os.path.join(tmp, side)
            subprocess.run(["spm_train", f"--input={corpus}", f"--model_prefix={prefix}", "--vocab_size=300",
                            "--model_type=unigram", "--character_coverage=1.0", "--hard_vocab_limit=false",
                            "--num_threads=1", "--minloglevel=2", f"--random_seed={seed}"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            models[side] = prefix + ".model"
        pieces = []
        for side in ("source", "target"):
            with open(models[side].replace(".model", ".vocab")) as f:
                for line in f:
                    p = line.split("\t")[0]
                    if p not in ("<unk>", "<s>", "</s>") and p not in pieces:
                        pieces.append(p)
        kept = [p for i, p in enumerate(pieces) if i % 17 != 5]
        vocab = {"</s>": 0, "<unk>": 1}
        for p in kept:
            vocab[p] = len(vocab)
        vocab[">>de<<"] = len(vocab)
        vocab["<pad>"] = len(vocab)
        vfile = os.path.join(tmp, "vocab.json")
        with open(vfile, "w") as f:
            json.dump(vocab, f, ensure_ascii=False)
        tok = MarianTokenizer(models["source"], models["target"], vfile)
        tok.save_pretrained(d)
    tok = MarianTokenizer.from_pretrained(d)
    texts = tokenizer_texts(rng)
    ids = [tok(t).input_ids for t in texts]
    decode = []
    for i in range(120):
        seq = [rng.randrange(len(vocab)) for _ in range(rng.randrange(0, 15))]
        decode.append({"ids": seq, "text": tok.decode(seq, skip_special_tokens=True)})
    for t in texts[:40]:
        seq = tok(text_target=t)["input_ids"]
        decode.append({"ids": seq, "text": tok.decode(seq, skip_special_tokens=True)})
    with open(os.path.join(d, "tok_golden.json"), "w") as f:
        json.dump({"texts": texts, "ids": ids, "decode": decode}, f, ensure_ascii=False)
    manifest["marian_tok"] = {"class": "MarianTokenizer", "seed": seed, "vocab": len(vocab), "texts": len(texts)}
    make_opus_mt(out, d, tok, vocab, manifest, seed + 1)


# opus_mt/: marian_tok's tokenizer with a MarianMTModel of its vocabulary, as an
# OPUS-MT directory is; golden.json: {"texts": [...], "greedy": [HF's decoded
# outputs], "beam": [the same with num_beams=3]}, generate(max_new_tokens=NEW).
TRANSLATE_TEXTS = ["Hello world.", "the man said that it was very good", ">>de<< Guten Morgen!", "naïve café",
                   "日本語 😀", "x"]


def make_opus_mt(out, tok_dir, tok, vocab, manifest, seed):
    pad = vocab["<pad>"]
    torch.manual_seed(seed)
    cfg = marian_config(vocab_size=len(vocab), pad_token_id=pad, decoder_start_token_id=pad, bad_words_ids=[[pad]])
    model = MarianMTModel(cfg)
    randomize(model, seed, cfg.eos_token_id, 1.5)
    model.eval()
    d = os.path.join(out, "opus_mt")
    model.save_pretrained(d, safe_serialization=True)
    tok.save_pretrained(d)
    res = {"texts": TRANSLATE_TEXTS}
    with torch.no_grad():
        for key, kw in (("greedy", {}), ("beam", {"num_beams": 3})):
            res[key] = []
            for t in TRANSLATE_TEXTS:
                g = model.generate(**tok([t], return_tensors="pt"), max_new_tokens=NEW, **kw)
                res[key].append(tok.decode(g[0], skip_special_tokens=True))
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump(res, f, ensure_ascii=False)
    manifest["opus_mt"] = {"class": "MarianMTModel", "seed": seed, "dtype": "F32", "tokenizer": "marian_tok"}


# bart_text/: a BART with a byte-level BPE tokenizer (vocab.json + merges.txt, trained
# here by tokenizers' ByteLevelBPETokenizer; saved by BartTokenizerFast, tokenizer.json
# too); golden.json: {"texts": [...], "ids": [tokenizer(text).input_ids], "greedy":
# [HF's generate + decode(skip_special_tokens=True)], "greedy_ids": [the new ids before EOS]}.
def make_bart_text(out, manifest, seed=60):
    import tempfile
    from tokenizers import ByteLevelBPETokenizer
    from transformers import BartTokenizerFast
    rng = random.Random(seed)
    d = os.path.join(out, "bart_text")
    with tempfile.TemporaryDirectory() as tmp:
        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator(_corpus(rng, WORDS_EN + PUNCT[:6], 300), vocab_size=400, min_frequency=1,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"], show_progress=False)
        bpe.save_model(tmp)
        tok = BartTokenizerFast(os.path.join(tmp, "vocab.json"), os.path.join(tmp, "merges.txt"))
        tok.save_pretrained(d)
    tok = BartTokenizerFast.from_pretrained(d)
    torch.manual_seed(seed)
    cfg = bart_config(vocab_size=len(tok), pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.eos_token_id,
                      forced_eos_token_id=tok.eos_token_id)
    model = BartForConditionalGeneration(cfg)
    randomize(model, seed, cfg.eos_token_id, 1.0)
    model.eval()
    model.save_pretrained(d, safe_serialization=True)
    texts = TRANSLATE_TEXTS[:4] + ["A man is eating food.", "the quick brown fox"]
    res = {"texts": texts, "ids": [], "greedy": [], "greedy_ids": []}
    with torch.no_grad():
        for t in texts:
            enc = tok([t], return_tensors="pt")
            res["ids"].append(enc.input_ids[0].tolist())
            g = model.generate(**enc, max_new_tokens=NEW)
            res["greedy"].append(tok.decode(g[0], skip_special_tokens=True))
            res["greedy_ids"].append(cut(g[0].tolist(), cfg.eos_token_id))
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump(res, f, ensure_ascii=False)
    manifest["bart_text"] = {"class": "BartForConditionalGeneration", "seed": seed, "dtype": "F32",
                             "tokenizer": "ByteLevelBPETokenizer (vocab 400) → BartTokenizerFast"}


if __name__ == "__main__":  # only these, into an existing directory (for development)
    import sys
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    m = {}
    for n in ENCDEC_MODELS:
        make_encdec(sys.argv[1], n, m)
    make_marian_tokenizer(sys.argv[1], m)
    make_bart_text(sys.argv[1], m)
    print(json.dumps(m))
