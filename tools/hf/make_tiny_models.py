#!/usr/bin/env python3
"""Tiny random Hugging Face models, written by Hugging Face's own code, with
their outputs: the reference for vkformer's HF families (docs/testing.md).

    tools/hf/.venv/bin/python tools/hf/make_tiny_models.py OUT_DIR

(`make hf-test-models` runs it into build/hf-models.) Each model is made the way
a user's model is: a config → AutoModel-style from_config → save_pretrained
(safe_serialization=True), or SentenceTransformer.save for the
sentence-transformers directories. Deterministic: fixed seeds, no network
(HF_HUB_OFFLINE=1). OUT_DIR is replaced whole, atomically (built beside it, then
renamed), and gets manifest.json (versions, seeds, what each directory is).

Every directory has golden.json:

    {"ids":      [[int, ...], ...],   3 sequences of unequal lengths (7, 3, 11), unpadded,
                                      with [CLS]…[SEP] (BERT, DistilBERT) or <s>…</s> (RoBERTa, XLM-R)
     "type_ids": [[int, ...], ...],   same shape; BERT: the third sequence is a pair, 1 on its second
                                      segment; 0 everywhere for models without token types
     "outputs":  {name: nested list}}

computed by the model in eval mode on ONE right-padded batch (pad id =
config.pad_token_id, attention_mask 0 on pads; RoBERTa's position ids as HF
derives them from the pad id), fp32, then unpadded:

    last_hidden_state  [seq][valid position][hidden]   every model (the encoder's output)
    pooler_output      [seq][hidden]                   models with a pooler (BertModel, XLMRobertaModel,
                                                       BertForSequenceClassification's bert.pooler)
    logits             [seq][valid position][labels or vocab]   token classification, masked LM
                       [seq][labels]                            sequence classification

Sentence-transformers directories (st_*) add "texts" (the input sentences); their
"ids"/"type_ids" are what the directory's own tokenizer made of them, and
outputs are {"embeddings": [seq][dim]} from SentenceTransformer.encode(texts,
convert_to_numpy=True) and "last_hidden_state" (its token embeddings, unpadded).

GPT-2 directories (gpt2_*) are causal: their golden.json is

    {"ids":     [[int, ...], ...],    3 prompts of unequal lengths (GPT2_LENGTHS), no special tokens
     "outputs": {"logits": [seq][position][vocab]}         GPT2LMHeadModel
                {"last_hidden_state": [seq][position][hidden]}   GPT2Model (after ln_f)
     "greedy":  [[int, ...], ...],    GPT2LMHeadModel: generate(do_sample=False, max_new_tokens=8) on
                                      each prompt alone, the new tokens only, stopping before EOS
     "eos":     int,                  config.eos_token_id: a token one greedy run produces at step ≥ 3
     "greedy_margin": float}          the smallest top-1 minus top-2 logit over those steps

each prompt run alone (no padding) in fp32.

T5 directories (t5_*, t5_buckets): tools/hf/tiny_t5.py. Llama, Mistral and Qwen2
directories (llama_*, mistral_*, qwen2_*): tools/hf/tiny_llama.py.
BART, Marian and mBART directories (bart_*, marian_*, mbart_*) are made by
tools/hf/tiny_encdec.py, whose docstring gives their golden.json.

Low-precision copies (*_f16, *_bf16) store the weights rounded; their goldens
are computed in fp32 from those rounded weights. *_sharded holds the same weights
as its model in several shards (model.safetensors.index.json). bert_mlm_bin is
bert_mlm saved as pytorch_model.bin only (for the refusal and the converter).
"""
import copy
import json
import os
import random
import shutil
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification,  # noqa: E402
                          BertForTokenClassification, BertModel, BertTokenizerFast, DistilBertConfig,
                          DistilBertForMaskedLM, DistilBertForSequenceClassification, DistilBertModel,
                          GPT2Config, GPT2LMHeadModel, GPT2Model,
                          RobertaConfig, RobertaForMaskedLM, RobertaForSequenceClassification,
                          XLMRobertaConfig, XLMRobertaModel)

from tiny_encdec import ENCDEC_MODELS, make_bart_text, make_encdec, make_marian_tokenizer  # noqa: E402  (BART, Marian, mBART)

transformers.logging.set_verbosity_error()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_t5  # noqa: E402  (T5 directories and their goldens: tools/hf/tiny_t5.py)
import tiny_llama  # noqa: E402  (Llama, Mistral, Qwen2 directories: tools/hf/tiny_llama.py)

LENGTHS = [7, 3, 11]
# Special ids: BERT-style vocabularies begin [PAD] [UNK] [CLS] [SEP] [MASK];
# RoBERTa-style ones <s> <pad> </s> <unk> <mask>.
BERT_IDS = dict(pad=0, unk=1, cls=2, sep=3, mask=4)
ROBERTA_IDS = dict(cls=0, pad=1, sep=2, unk=3, mask=4)


def bert_config(**kw):
    c = dict(vocab_size=131, hidden_size=36, num_hidden_layers=2, num_attention_heads=3, intermediate_size=37,
             max_position_embeddings=40, type_vocab_size=2, pad_token_id=BERT_IDS["pad"], initializer_range=0.2)
    c.update(kw)
    return BertConfig(**c)


def roberta_config(cls=RobertaConfig, **kw):
    c = dict(vocab_size=150, hidden_size=40, num_hidden_layers=2, num_attention_heads=5, intermediate_size=53,
             max_position_embeddings=40, type_vocab_size=1, pad_token_id=ROBERTA_IDS["pad"],
             bos_token_id=ROBERTA_IDS["cls"], eos_token_id=ROBERTA_IDS["sep"], initializer_range=0.2,
             layer_norm_eps=1e-5)
    c.update(kw)
    return cls(**c)


def distilbert_config(**kw):
    c = dict(vocab_size=113, dim=40, n_layers=2, n_heads=5, hidden_dim=48, max_position_embeddings=40,
             pad_token_id=BERT_IDS["pad"], initializer_range=0.2)
    c.update(kw)
    return DistilBertConfig(**c)


def labels(names):
    return dict(num_labels=len(names), id2label=dict(enumerate(names)),
                label2id={n: i for i, n in enumerate(names)})


# name: (seed, class, config, special ids, has token types)
MODELS = {
    "bert_model": (1, BertModel, lambda: bert_config(hidden_act="gelu"), BERT_IDS, True),
    "bert_seqcls": (2, BertForSequenceClassification,
                    lambda: bert_config(hidden_act="gelu_new", layer_norm_eps=1e-7,
                                        problem_type="single_label_classification",
                                        **labels(["negative", "neutral", "positive"])), BERT_IDS, True),
    "bert_seqcls_multilabel": (3, BertForSequenceClassification,
                               lambda: bert_config(hidden_act="relu", problem_type="multi_label_classification",
                                                   **labels(["sports", "politics", "tech", "arts"])),
                               BERT_IDS, True),
    "bert_tokcls": (4, BertForTokenClassification,
                    lambda: bert_config(hidden_size=40, num_attention_heads=5, intermediate_size=41,
                                        hidden_act="relu", layer_norm_eps=1e-5,
                                        **labels(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])), BERT_IDS, True),
    "bert_mlm": (5, BertForMaskedLM, lambda: bert_config(hidden_act="gelu_new"), BERT_IDS, True),
    "roberta_mlm": (6, RobertaForMaskedLM, lambda: roberta_config(hidden_act="gelu"), ROBERTA_IDS, False),
    "roberta_seqcls": (7, RobertaForSequenceClassification,
                       lambda: roberta_config(hidden_act="gelu_new", problem_type="single_label_classification",
                                              **labels(["no", "yes"])), ROBERTA_IDS, False),
    "xlmr_model": (8, XLMRobertaModel,
                   lambda: roberta_config(XLMRobertaConfig, vocab_size=163, hidden_size=36, num_attention_heads=3,
                                          intermediate_size=64, hidden_act="relu"), ROBERTA_IDS, False),
    "distilbert_model": (9, DistilBertModel, lambda: distilbert_config(activation="gelu"), BERT_IDS, False),
    "distilbert_seqcls": (10, DistilBertForSequenceClassification,
                          lambda: distilbert_config(activation="relu", problem_type="single_label_classification",
                                                    **labels(["ham", "spam", "other"])), BERT_IDS, False),
    "distilbert_mlm": (11, DistilBertForMaskedLM, lambda: distilbert_config(activation="gelu"), BERT_IDS, False),
}
# Copies of a model above: name → (model, what differs).
VARIANTS = {
    "bert_model_f16": ("bert_model", torch.float16), "bert_model_bf16": ("bert_model", torch.bfloat16),
    "roberta_mlm_f16": ("roberta_mlm", torch.float16), "roberta_mlm_bf16": ("roberta_mlm", torch.bfloat16),
    "bert_model_sharded": ("bert_model", "sharded"), "bert_mlm_bin": ("bert_mlm", "bin"),
}


def randomize(model, seed):
    """from_config's init leaves LayerNorm at γ=1, β=0 and biases at 0, which
    would hide a swapped or missing γ/β/bias: every parameter gets noise."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(torch.randn(p.shape, generator=g) * (0.2 if p.dim() == 1 else 0.05))


def inputs(seed, vocab, ids, token_types):
    """3 sequences of LENGTHS: [CLS] … [SEP], the third a pair ([CLS] A [SEP] B [SEP]
    for BERT, <s> A </s></s> B </s> for RoBERTa), a [MASK] in the first."""
    rng = random.Random(seed)
    seqs, types = [], []
    for n in LENGTHS:
        s = [ids["cls"]] + [rng.randrange(5, vocab) for _ in range(n - 2)] + [ids["sep"]]
        t = [0] * n
        if n == 11:
            s[4] = ids["sep"]
            if token_types:
                t[5:] = [1] * 6
            else:
                s[5] = ids["sep"]
        seqs.append(s)
        types.append(t)
    seqs[0][2] = ids["mask"]
    return seqs, types


def padded(seqs, types, pad):
    n = max(map(len, seqs))
    ids = torch.tensor([s + [pad] * (n - len(s)) for s in seqs])
    tt = torch.tensor([t + [0] * (n - len(t)) for t in types])
    mask = torch.tensor([[1] * len(s) + [0] * (n - len(s)) for s in seqs])
    return ids, tt, mask


def rows(x, lengths):
    """[batch, len, ...] → per sequence, its valid rows."""
    return [x[b, :n].tolist() for b, n in enumerate(lengths)]


def golden(model, seqs, types, pad, token_types):
    model.eval()
    ids, tt, mask = padded(seqs, types, pad)
    kw = dict(input_ids=ids, attention_mask=mask, output_hidden_states=True, return_dict=True)
    if token_types:
        kw["token_type_ids"] = tt
    with torch.no_grad():
        out = model(**kw)
        lengths = [len(s) for s in seqs]
        hidden = out.hidden_states[-1]
        res = {"last_hidden_state": rows(hidden, lengths)}
        base = getattr(model, model.base_model_prefix, model)
        if getattr(base, "pooler", None) is not None:
            res["pooler_output"] = base.pooler(hidden).tolist()
        if hasattr(out, "logits"):
            res["logits"] = out.logits.tolist() if out.logits.dim() == 2 else rows(out.logits, lengths)
    return {"ids": seqs, "type_ids": types, "outputs": res}


def write_golden(d, g):
    with open(os.path.join(d, "golden.json"), "w") as f:
        json.dump(g, f, separators=(",", ":"))


def make_model(out, name, manifest):
    seed, cls, config, ids, token_types = MODELS[name]
    torch.manual_seed(seed)
    cfg = config()
    model = cls(cfg)
    randomize(model, seed)
    seqs, types = inputs(seed, cfg.vocab_size, ids, token_types)
    d = os.path.join(out, name)
    model.save_pretrained(d, safe_serialization=True)
    write_golden(d, golden(model, seqs, types, cfg.pad_token_id, token_types))
    manifest[name] = {"class": cls.__name__, "seed": seed, "dtype": "F32"}
    return model, seqs, types, cfg, token_types


def make_variant(out, name, made, manifest):
    base, how = VARIANTS[name]
    model, seqs, types, cfg, token_types = made[base]
    d = os.path.join(out, name)
    if isinstance(how, torch.dtype):
        low = copy.deepcopy(model).to(how)
        low.save_pretrained(d, safe_serialization=True)
        # The reference is the stored (rounded) weights, computed in fp32.
        write_golden(d, golden(low.float(), seqs, types, cfg.pad_token_id, token_types))
        manifest[name] = {"copy_of": base, "dtype": {torch.float16: "F16", torch.bfloat16: "BF16"}[how]}
        return
    if how == "sharded":
        model.save_pretrained(d, safe_serialization=True, max_shard_size="20KB")
    else:
        model.save_pretrained(d, safe_serialization=False)
    shutil.copy(os.path.join(out, base, "golden.json"), d)
    manifest[name] = {"copy_of": base, "files": sorted(f for f in os.listdir(d) if f != "golden.json")}


# ---- GPT-2 ------------------------------------------------------------------
GPT2_LENGTHS = [6, 2, 9]
GPT2_NEW = 8


def gpt2_config(**kw):
    c = dict(vocab_size=157, n_embd=45, n_layer=2, n_head=5, n_positions=40, initializer_range=0.2,
             bos_token_id=156, eos_token_id=156)
    c.update(kw)
    return GPT2Config(**c)


# name: (seed, class, config)
GPT2_MODELS = {
    "gpt2_lm": (30, GPT2LMHeadModel, lambda: gpt2_config()),
    "gpt2_lm_untied": (31, GPT2LMHeadModel, lambda: gpt2_config(tie_word_embeddings=False, n_inner=50,
                                                                 activation_function="gelu",
                                                                 layer_norm_epsilon=1e-6)),
    "gpt2_model": (32, GPT2Model, lambda: gpt2_config(n_embd=36, n_head=3, activation_function="relu")),
}

GPT2_ROUNDED = {"gpt2_lm_f16": torch.float16, "gpt2_lm_bf16": torch.bfloat16}


def gpt2_greedy(model, seqs, eos):
    """HF's greedy generate on each prompt alone: the new tokens, before EOS; and the smallest margin."""
    out, margin = [], float("inf")
    for s in seqs:
        g = model.generate(torch.tensor([s]), attention_mask=torch.ones(1, len(s), dtype=torch.long),
                           do_sample=False, max_new_tokens=GPT2_NEW, eos_token_id=eos, pad_token_id=eos,
                           output_scores=True, return_dict_in_generate=True)
        new = g.sequences[0, len(s):].tolist()
        for sc in g.scores:
            top = torch.topk(sc[0], 2).values
            margin = min(margin, float(top[0] - top[1]))
        out.append(new[:new.index(eos)] if eos in new else new)
    return out, margin


def gpt2_golden(model, seqs, eos):
    model.eval()
    with torch.no_grad():
        res, outs = {"ids": seqs}, []
        for s in seqs:
            o = model(input_ids=torch.tensor([s]), return_dict=True)
            outs.append((o.logits if hasattr(o, "logits") else o.last_hidden_state)[0].tolist())
        res["outputs"] = {("logits" if hasattr(model, "lm_head") else "last_hidden_state"): outs}
        if hasattr(model, "lm_head"):
            res["greedy"], res["greedy_margin"] = gpt2_greedy(model, seqs, eos)
            res["eos"] = eos
    return res


def choose_eos(model, seqs):
    """Sets the model's EOS to a token some prompt's greedy run makes first at its 3rd step or
    later, so that generation stops early on it for that prompt; the runs without EOS tell which."""
    model.generation_config.eos_token_id = None
    free, _ = gpt2_greedy(model, seqs, None)
    eos = next((t for run in free for i, t in enumerate(run) if i >= 2 and t not in run[:i]), free[0][-1])
    model.config.eos_token_id = model.generation_config.eos_token_id = eos


def make_gpt2(out, name, manifest, made):
    if name in GPT2_ROUNDED:  # gpt2_lm's weights rounded; the golden from them, in fp32
        model, seqs = made["gpt2_lm"]
        low = copy.deepcopy(model).to(GPT2_ROUNDED[name])
        d = os.path.join(out, name)
        low.save_pretrained(d, safe_serialization=True)
        write_golden(d, gpt2_golden(low.float(), seqs, model.config.eos_token_id))
        manifest[name] = {"copy_of": "gpt2_lm", "dtype": name.rsplit("_", 1)[1].upper()}
        return
    seed, cls, config = GPT2_MODELS[name]
    torch.manual_seed(seed)
    cfg = config()
    model = cls(cfg)
    randomize(model, seed)
    model.eval()
    rng = random.Random(seed)
    seqs = [[rng.randrange(0, cfg.vocab_size) for _ in range(n)] for n in GPT2_LENGTHS]
    if cls is GPT2LMHeadModel:
        choose_eos(model, seqs)
    d = os.path.join(out, name)
    model.save_pretrained(d, safe_serialization=True)
    write_golden(d, gpt2_golden(model, seqs, model.config.eos_token_id))
    manifest[name] = {"class": cls.__name__, "seed": seed, "dtype": "F32"}
    made[name] = (model, seqs)


# ---- sentence-transformers ---------------------------------------------------
TEXTS = ["Hello world!", "The quick brown fox jumps over the lazy dog.",
         "vkformer runs transformers in Vulkan compute shaders.", "ok",
         "Unbelievable: 42 naïve cafés, 日本 and more?"]
ST_WORDS = ("hello world the quick brown fox jumps over lazy dog runs transformers in compute shaders ok and "
            "more un ##believ ##able cafe ##s naive vulkan ##former vk").split()
# name: (pooling mode, normalize)
ST_MODELS = {"st_mean_norm": ("mean", True), "st_cls": ("cls", False), "st_max": ("max", False),
             "st_mean_sqrt": ("mean_sqrt_len_tokens", False)}


def st_vocab():
    chars = "abcdefghijklmnopqrstuvwxyz0123456789!?.,:;'\"-()"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(chars) + ["##" + c for c in chars]
    for w in ST_WORDS:
        if w not in vocab:
            vocab.append(w)
    return vocab


def make_st(out, name, tmp, manifest, seed=20):
    from sentence_transformers import SentenceTransformer, models
    mode, normalize = ST_MODELS[name]
    seed += list(ST_MODELS).index(name)
    src = os.path.join(tmp, name + "-transformer")
    os.makedirs(src)
    vocab = st_vocab()
    with open(os.path.join(src, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    tok = BertTokenizerFast(vocab_file=os.path.join(src, "vocab.txt"), do_lower_case=True,
                            clean_up_tokenization_spaces=True)
    tok.save_pretrained(src)
    torch.manual_seed(seed)
    bert = BertModel(bert_config(vocab_size=len(vocab), hidden_act="gelu", layer_norm_eps=1e-12))
    randomize(bert, seed)
    bert.save_pretrained(src, safe_serialization=True)
    word = models.Transformer(src, max_seq_length=32)
    word.auto_model.config._name_or_path = "tiny-bert-" + name  # not the scratch path: the same bytes every run
    modules = [word, models.Pooling(word.get_word_embedding_dimension(), pooling_mode=mode)]
    if normalize:
        modules.append(models.Normalize())
    st = SentenceTransformer(modules=modules, device="cpu")
    d = os.path.join(out, name)
    st.save(d, create_model_card=False)
    st = SentenceTransformer(d, device="cpu")  # what a user loads from the directory
    st.eval()
    feats = st.tokenize(TEXTS)
    lengths = feats["attention_mask"].sum(1).tolist()
    emb = st.encode(TEXTS, convert_to_numpy=True, batch_size=len(TEXTS))
    tokens = st.encode(TEXTS, output_value="token_embeddings", batch_size=len(TEXTS))
    write_golden(d, {"texts": TEXTS,
                     "ids": [feats["input_ids"][b, :n].tolist() for b, n in enumerate(lengths)],
                     "type_ids": [feats["token_type_ids"][b, :n].tolist() for b, n in enumerate(lengths)],
                     "outputs": {"embeddings": emb.tolist(),
                                 "last_hidden_state": [t[:n].tolist() for t, n in zip(tokens, lengths)]}})
    manifest[name] = {"class": "SentenceTransformer", "pooling": mode, "normalize": normalize, "seed": seed,
                      "dtype": "F32"}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    out = os.path.abspath(sys.argv[1])
    start = time.time()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # the same sums in the same order on every machine
    build = f"{out}.tmp-{os.getpid()}"
    shutil.rmtree(build, ignore_errors=True)
    os.makedirs(build)
    try:
        manifest, made = {}, {}
        for name in MODELS:
            made[name] = make_model(build, name, manifest)
        for name in VARIANTS:
            make_variant(build, name, made, manifest)
        gpt2 = {}
        for name in list(GPT2_MODELS) + list(GPT2_ROUNDED):
            make_gpt2(build, name, manifest, gpt2)
        tiny_t5.make_all(build, manifest, randomize, write_golden)
        tiny_llama.make_all(build, manifest, randomize, write_golden, choose_eos, gpt2_golden)
        for name in ENCDEC_MODELS:
            make_encdec(build, name, manifest)
        make_marian_tokenizer(build, manifest)
        make_bart_text(build, manifest)
        scratch = os.path.join(build, ".scratch")
        for name in ST_MODELS:
            make_st(build, name, scratch, manifest)
        shutil.rmtree(scratch)
        with open(os.path.join(build, "manifest.json"), "w") as f:
            json.dump({"made_by": "tools/hf/make_tiny_models.py", "torch": torch.__version__,
                       "transformers": transformers.__version__,
                       "sentence_transformers": __import__("sentence_transformers").__version__,
                       "lengths": LENGTHS, "models": manifest}, f, indent=1, sort_keys=True)
        old = f"{out}.old-{os.getpid()}"
        if os.path.exists(out):
            os.rename(out, old)
        os.rename(build, out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(out) for f in fs)
    print(f"{out}: {len(manifest)} model directories, {size / 1e6:.2f} MB, {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
