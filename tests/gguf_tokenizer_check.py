"""vkformer's tokenizer of a GGUF file (src/text/gguf_tokenizer.cpp) against references,
on a few hundred varied texts: ids equal on every text, decode equal on every text.

1. "gpt2"/"smollm": models/llm/SmolLM2-135M-Instruct.Q4_1.gguf (`make llm-models`). Its
   tokenizer.ggml.* is dumped with the `gguf` package's GGUFReader; the references are
   a `tokenizers` 0.19.1 Tokenizer built from that vocabulary and those merges exactly as
   SmolLM2's own tokenizer.json (Digits(individual_digits) + ByteLevel, ByteLevel decoder,
   CONTROL tokens special) -- what llama.cpp's "smollm" pre-tokenizer does -- and
   transformers 4.44.2's AutoTokenizer.from_pretrained(dir, gguf_file=...), whose BOS
   (always added, by a bug the BOS of a file with add_bos_token=false) is taken off.
2. "llama": a SentencePiece BPE model trained here (the venv's sentencepiece, identity
   normalization, byte_fallback, as Llama's tokenizer.model) written to a GGUF with
   gguf.GGUFWriter as llama.cpp's convert script writes one (tokens, scores, token types);
   the references are SentencePiece itself (ids plus BOS; texts with no special token)
   and transformers' GGUF loading of that file (GGUFLlamaConverter).
Each case is a vocab JSON (GgufVocab's fields) and a reference JSON that
tests/test_gguf_tokenizer (GoogleTest, host only) reads through VKF_GGUF_CASES.
Needs tools/hf/.venv: `bash tools/hf/setup-venv.sh`.
Usage: gguf_tokenizer_check.py TEST_GGUF_TOKENIZER SOURCE_DIR"""
import json
import os
import random
import subprocess
import sys
import tempfile
import unicodedata
import warnings

from hf_venv import run_in_hf_venv  # noqa: E402

test_bin, src = sys.argv[1], sys.argv[2]
run_in_hf_venv(src, "gguf_tokenizer")  # tests/hf_venv.py

os.environ["TOKENIZERS_PARALLELISM"] = "false"
import gguf  # noqa: E402
import numpy as np  # noqa: E402
import sentencepiece as spm  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers  # noqa: E402

assert tokenizers.__version__ == "0.19.1", tokenizers.__version__
transformers.logging.set_verbosity_error()
warnings.filterwarnings("ignore")

SMOL = os.path.join(src, "models", "llm", "SmolLM2-135M-Instruct.Q4_1.gguf")

# ---- texts ---------------------------------------------------------------------------
TEXTS = [
    "", " ", "  ", "a", " a", "a ", "\n", "\n\n", "\t", " \t\n ", "\r\n", "hi\n\n\nthere",
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How are you doing today?",
    "I can't believe it's already 2024; time flies... doesn't it?",
    "They're here, we've seen them, I'm sure they'll stay, he'd agree. IT'S LOUD, DON'T.",
    "Les élèves étudient à l'école depuis 8h30 — c'est très tôt !",
    "Über den Straßen von München schwebt ein Zeppelin.",
    "¿Dónde está la biblioteca? ¡Allí!",
    "日本語のテキストも大丈夫です。東京は大きい都市です。",
    "中文句子，测试一下分词器的效果。",
    "한국어 문장도 테스트합니다.",
    "Русский текст с буквами ё и Ё.",
    "Ελληνικά: ΟΔΥΣΣΕΥΣ και ο Σίσυφος.",
    "العربية نص قصير", "עברית טקסט קצר", "ภาษาไทยไม่มีช่องว่าง", "हिन्दी में एक वाक्य।",
    "Emoji: 😀👍🏽🇫🇷 👨‍👩‍👧 ❤️ and symbols ©®™ ½ ¼ ∞ ≠ ≤.",
    "Numbers: 3.14159, 1,000,000 and 42nd, ١٢٣ ٤٥٦, ①②③, Ⅻ.",
    "12345", "3.14159", "0", "007", "1e-10", "2024-11-28T08:01:00Z", "$1,299.99", "+49 (0)30 1234567",
    "Email me at someone@example.com or visit https://example.org/path?q=1&x=y#frag.",
    "def f(x):\n\treturn x ** 2  # comment\n",
    "for (int i = 0; i < n; ++i) { a[i] += b[i] * 2; }\n",
    "    leading and trailing spaces    ",
    "tabs\there\tand\nnewlines\r\nand\u000bvertical\u000cfeed\u0085next",
    "multiple     spaces   between     words",
    "NBSP\u00a0here and ideographic\u3000space and thin\u2009space",
    "zero\u200bwidth\u200cjoiners\u200dand\ufeffBOM",
    "control\x01chars\x02\x7f\x1b[0m end",
    "Combining: e\u0301 a\u0308 n\u0303 o\u0302\u0323 and precomposed é ä ñ ộ",
    "Ligatures: ﬁ ﬂ ﬀ ﬃ, fullwidth: ＡＢＣ１２３！, superscripts: x² y³",
    "Turkish İstanbul ıi, German ß ẞ, final sigma ΣΑΣ σας.",
    "RTL mixed: abc אבג 123 ابت def",
    "<|im_start|>user\nhi<|im_end|>",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>", "a<|endoftext|>b", " <|im_start|> ", "<|im_start|><|im_end|>", "<|im_start", "im_end|>",
    "<s> </s> <unk> <s>hello</s>", "text<s>more", "<0x41> <0x0A>",
    "!!!???...,,,;;;:::", "(((())))[[]]{{}}", "--- *** ___ ~~~ ===", "\"quoted\" 'single' `back`",
    "ALL CAPS SENTENCE HERE", "camelCaseWords and snake_case_words and kebab-case-words",
    "a" * 200, "ab " * 50, " " * 17 + "x", "x" + "\n" * 9, "😀" * 12, "1" * 40,
]

rng = random.Random(27)
ALPHABET = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" + " " * 12 + "\n\t.,;:!?'\"()-_/#@$%&*+=<>|"
            + "éèàüößñçøåæœ" + "日本語中文한국어" + "Русский" + "😀👍🔥" + "\u0301\u200d" + "عبر")
WORDS = ["the", "of", "and", "token", "izer", "GGUF", "llama", "smol", "model", " ", "  ", "\n", "'s", "'ll",
         "12", "3.5", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<s>", "</s>", "ünïcödé", "🤖", "\t"]
for i in range(150):
    TEXTS.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 60))))
for i in range(120):
    TEXTS.append("".join(rng.choice(WORDS) + rng.choice(["", " ", " ", ",", "\n"]) for _ in range(rng.randint(1, 20))))
assert len(TEXTS) >= 300, len(TEXTS)


# ---- GGUF metadata -> GgufVocab JSON ---------------------------------------------------
def field(reader, key):
    f = reader.fields.get(key)
    if f is None:
        return None
    t = f.types[0]
    if t == gguf.GGUFValueType.ARRAY:
        et = f.types[1]
        if et == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode("utf-8") for i in f.data]
        return [f.parts[i].tolist()[0] for i in f.data]
    if t == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode("utf-8")
    return f.parts[f.data[0]].tolist()[0]


def vocab_json(path):
    r = gguf.GGUFReader(path)
    out = {"path": path}
    for key, name in [("model", "model"), ("pre", "pre"), ("tokens", "tokens"), ("scores", "scores"),
                      ("token_type", "token_types"), ("merges", "merges"), ("bos_token_id", "bos_id"),
                      ("eos_token_id", "eos_id"), ("unknown_token_id", "unk_id"), ("padding_token_id", "pad_id"),
                      ("seperator_token_id", "sep_id"), ("cls_token_id", "cls_id"), ("mask_token_id", "mask_id"),
                      ("add_bos_token", "add_bos"), ("add_eos_token", "add_eos"),
                      ("add_space_prefix", "add_space_prefix")]:
        v = field(r, "tokenizer.ggml." + key)
        if v is not None:
            out[name] = bool(v) if name.startswith("add_") else v
    return out


def write_case(tmp, name, vocab, texts, ids, dec, dec_special, roles):
    vp, rp = os.path.join(tmp, name + ".vocab.json"), os.path.join(tmp, name + ".ref.json")
    with open(vp, "w") as f:
        json.dump(vocab, f)
    with open(rp, "w") as f:
        json.dump({"name": name, "texts": texts, "ids": ids, "decoded": dec, "decoded_special": dec_special,
                   "roles": roles}, f)
    return vp + ":" + rp


def compare(name, a, b, texts, what):
    bad = [i for i in range(len(texts)) if a[i] != b[i]]
    print(f"{name}: {what}: {len(texts) - len(bad)}/{len(texts)} equal")
    for i in bad[:5]:
        print(f"  {texts[i]!r}\n    {a[i]}\n    {b[i]}")
    return bad


# ---- case 1: SmolLM2's GGUF ("gpt2", pre "smollm") --------------------------------------
def smollm_case(tmp):
    v = vocab_json(SMOL)
    assert v["model"] == "gpt2" and v.get("pre") == "smollm", (v["model"], v.get("pre"))
    vocab = {t: i for i, t in enumerate(v["tokens"])}
    merges = [tuple(m.split(" ")) for m in v["merges"]]
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    types = v["token_types"]
    tok.add_special_tokens([AddedToken(v["tokens"][i], normalized=False, special=True)
                            for i in range(len(types)) if types[i] in (2, 3)])
    tok.add_tokens([AddedToken(v["tokens"][i], normalized=False, special=False)
                    for i in range(len(types)) if types[i] == 4])
    bos = [v["bos_id"]] if v.get("add_bos", False) else []
    ids = [bos + tok.encode(t, add_special_tokens=False).ids for t in TEXTS]
    dec = [tok.decode(x, skip_special_tokens=True) for x in ids]
    dec_s = [tok.decode(x, skip_special_tokens=False) for x in ids]

    hf = transformers.AutoTokenizer.from_pretrained(os.path.dirname(SMOL), gguf_file=os.path.basename(SMOL))
    hf_ids = [bos + hf.encode(t, add_special_tokens=False) for t in TEXTS]
    bad = compare("smollm", ids, hf_ids, TEXTS, "tokenizers (SmolLM2's pipeline) vs AutoTokenizer(gguf_file) ids")
    # transformers' GGUF conversion has no Digits step (it ignores tokenizer.ggml.pre): it may
    # differ from llama.cpp only on texts with a \p{N} character.
    odd = [TEXTS[i] for i in bad if not any(unicodedata.category(c)[0] == "N" for c in TEXTS[i])]
    assert not odd, f"the references differ on texts without a number: {odd[:3]}"
    print(f"smollm: AutoTokenizer(gguf_file) differs on {len(bad)} texts, each with a \\p{{N}} character (no Digits)")
    assert hf.encode("hi")[0] == v["bos_id"] and not v.get("add_bos", False)  # HF's extra BOS, noted in the header
    roles = {"bos_token": v["tokens"][v["bos_id"]], "eos_token": v["tokens"][v["eos_id"]],
             "unk_token": v["tokens"][v["unk_id"]], "pad_token": v["tokens"][v["pad_id"]]}
    return write_case(tmp, "smollm", v, TEXTS, ids, dec, dec_s, roles)


# ---- case 2: a SentencePiece BPE model as a "llama" GGUF --------------------------------
def llama_case(tmp):
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w") as f:
        r = random.Random(5)
        lines = [t for t in TEXTS if "<" not in t and t.strip()] * 3
        words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "hello", "world", "token", "model",
                 "llama", "piece", "sentence", "über", "école", "日本", "東京", "текст", "1234", "3.14"]
        for _ in range(3000):
            lines.append(" ".join(r.choice(words) for _ in range(r.randint(1, 12))))
        f.write("\n".join(l.replace("\n", " ") for l in lines) + "\n")
    prefix = os.path.join(tmp, "spm")
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, model_type="bpe", vocab_size=900,
                                   byte_fallback=True, normalization_rule_name="identity",
                                   remove_extra_whitespaces=False, add_dummy_prefix=True, character_coverage=0.9995,
                                   user_defined_symbols=["<|user|>"], split_digits=True, allow_whitespace_only_pieces=True,
                                   minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    tokens, scores, types = [], [], []
    for i in range(sp.get_piece_size()):
        tokens.append(sp.id_to_piece(i))
        scores.append(sp.get_score(i))
        types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 5 if sp.is_unused(i)
                     else 6 if sp.is_byte(i) else 4 if sp.id_to_piece(i) == "<|user|>" else 1)
    path = os.path.join(tmp, "tiny-llama-spm.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tiny-llama-spm")
    for add, value in [(w.add_context_length, 64), (w.add_embedding_length, 8), (w.add_block_count, 1),
                       (w.add_feed_forward_length, 16), (w.add_head_count, 2), (w.add_head_count_kv, 2),
                       (w.add_rope_dimension_count, 4), (w.add_layer_norm_rms_eps, 1e-5)]:
        add(value)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(sp.bos_id())
    w.add_eos_token_id(sp.eos_id())
    w.add_unk_token_id(sp.unk_id())
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(True)
    w.add_tensor("token_embd.weight", np.zeros((len(tokens), 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    v = vocab_json(path)

    hf = transformers.AutoTokenizer.from_pretrained(tmp, gguf_file=os.path.basename(path))
    specials = ("<s>", "</s>", "<unk>", "<|user|>")
    plain = [t for t in TEXTS if not any(s in t for s in specials)]
    sp_ids = [[sp.bos_id()] + sp.encode(t) for t in plain]
    hf_ids = [hf.encode(t) for t in plain]
    bad = compare("llama", sp_ids, hf_ids, plain, "SentencePiece vs AutoTokenizer(gguf_file) ids (no special tokens)")
    # The reference: SentencePiece on texts without special tokens (what llama.cpp's SPM tokenizer mirrors).
    ids = sp_ids
    dec = [sp.decode(x) for x in ids]
    hf_dec = [hf.decode(x, skip_special_tokens=True) for x in ids]
    compare("llama", dec, hf_dec, plain, "SentencePiece vs AutoTokenizer(gguf_file) decode")
    dec_s = [hf.decode(x, skip_special_tokens=False) for x in ids]
    # Texts with special tokens: llama.cpp's way, emulated -- the text split at every CONTROL,
    # UNKNOWN and USER_DEFINED token (longest first), each piece between them encoded on its own
    # (so with its own U+2581 in front: llama.cpp's is_prev_special), the tokens as their ids.
    # Only the ids are compared (HF's and SentencePiece's decode treat <unk> differently).
    marked = sorted(((t, i) for i, t in enumerate(tokens) if types[i] in (2, 3, 4)), key=lambda x: -len(x[0]))

    def llama_cpp_like(text):
        frags = [text]
        for tok_text, tok_id in marked:
            out = []
            for f in frags:
                if isinstance(f, int):
                    out.append(f)
                    continue
                parts = f.split(tok_text)
                for k, part in enumerate(parts):
                    if k:
                        out.append(tok_id)
                    if part:
                        out.append(part)
            frags = out
        ids = [sp.bos_id()]
        for f in frags:
            ids += [f] if isinstance(f, int) else sp.encode(f)
        return ids

    special_texts = [t for t in TEXTS if any(s in t for s in specials)]
    special_texts += ["<s>hello", "a<|user|>b", "<unk>", "x <unk> y", "</s></s>", "<|user|> <|user|>"]
    texts = plain + special_texts
    ids += [llama_cpp_like(t) for t in special_texts]
    dec += [None] * len(special_texts)
    dec_s += [None] * len(special_texts)
    roles = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    return write_case(tmp, "llama", v, texts, ids, dec, dec_s, roles), len(bad)


def main():
    if not os.path.exists(SMOL):
        sys.exit(f"gguf_tokenizer: {SMOL} is missing: run `make llm-models`")
    with tempfile.TemporaryDirectory() as tmp:
        cases = [smollm_case(tmp)]
        llama, hf_llama_mismatches = llama_case(tmp)
        cases.append(llama)
        env = dict(os.environ, VKF_GGUF_CASES=";".join(cases))
        rc = subprocess.run([test_bin, "--gtest_filter=GgufReference.*"], env=env).returncode
        if hf_llama_mismatches:
            print(f"note: transformers' GGUF llama conversion differs from SentencePiece on {hf_llama_mismatches} texts")
        sys.exit(rc)


main()
