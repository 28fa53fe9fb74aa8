"""vkformer's Hugging Face tokenizers give exactly the ids and the decoded text of HF's
own `tokenizers` 0.19.1 (and of transformers 4.44.2's fast tokenizers for directories
with only vocab.txt or vocab.json + merges.txt, and T5TokenizerFast over a SentencePiece
model from Debian's spm_train), on a few hundred varied texts per
tokenizer. The tokenizers are trained here, deterministically, in a temporary
directory. Needs tools/hf/.venv: `bash tools/hf/setup-venv.sh`.
Usage: hf_tokenizers_check.py VKFORMER_CLI SOURCE_DIR"""
import base64
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import unicodedata
import warnings

from hf_venv import run_in_hf_venv  # noqa: E402

cli, src = sys.argv[1], sys.argv[2]
run_in_hf_venv(src, "hf_tokenizers")  # tests/hf_venv.py

os.environ["TOKENIZERS_PARALLELISM"] = "false"
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,  # noqa: E402
                        pre_tokenizers, processors, trainers)

assert tokenizers.__version__ == "0.19.1", tokenizers.__version__
transformers.logging.set_verbosity_error()
warnings.filterwarnings("ignore", category=FutureWarning)

# ---- texts ---------------------------------------------------------------------------
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world! How are you doing today?",
    "I can't believe it's already 2024; time flies... doesn't it?",
    "Les élèves étudient à l'école depuis 8h30 — c'est très tôt !",
    "Über den Straßen von München schwebt ein Zeppelin.",
    "¿Dónde está la biblioteca? ¡Allí!",
    "日本語のテキストも大丈夫です。東京は大きい都市です。",
    "中文句子，测试一下分词器的效果。",
    "한국어 문장도 테스트합니다.",
    "Русский текст с буквами ё и Ё.",
    "Ελληνικά: ΟΔΥΣΣΕΥΣ και ο Σίσυφος.",
    "العربية نص قصير",
    "עברית טקסט קצר",
    "ภาษาไทยไม่มีช่องว่าง",
    "हिन्दी में एक वाक्य।",
    "Emoji: 😀👍🏽🇫🇷 👨‍👩‍👧 ❤️ and symbols ©®™ ½ ¼ ∞ ≠ ≤.",
    "Numbers: 3.14159, 1,000,000 and 42nd, ١٢٣ ٤٥٦, ①②③, Ⅻ.",
    "Email me at someone@example.com or visit https://example.org/path?q=1&x=y#frag.",
    "def f(x):\n\treturn x ** 2  # comment\n",
    "    leading and trailing spaces    ",
    "tabs\there\tand\nnewlines\r\nand\u000bvertical\u000cfeed\u0085next",
    "multiple     spaces   between     words",
    "NBSP\u00a0here and ideographic\u3000space and thin\u2009space",
    "zero\u200bwidth\u200cjoiners\u200dand\ufeffBOM",
    "control\x00chars\x01\x02\x7f\x1b[0m end",
    "Combining: e\u0301 a\u0308 n\u0303 o\u0302\u0323 and precomposed é ä ñ ộ",
    "Ligatures: ﬁ ﬂ ﬀ ﬃ, fullwidth: ＡＢＣ１２３！, superscripts: x² y³",
    "Turkish İstanbul ıi, German ß ẞ, final sigma ΣΑΣ σας.",
    "Newer Unicode: \u32ff \ua7f2 \U00011938 \U0001fbf0 \U0001e030 \u0e33",
    "Hangul jamo: \u1100\u1161\u11a8 vs 각",
    "[CLS] [SEP] [MASK] [PAD] [UNK] in the middle of text",
    "<s> </s> <mask> <pad> <unk> <|endoftext|> markers",
    "A [MASK] token and a <mask> token, also [mask] lowercase and <MASK>.",
    "The capital of France is <mask>.",
    "Paris is the [MASK] of France.",
    "word<mask>word [MASK][MASK] <mask><mask>",
    "   <mask>   spaced   [MASK]   ",
    "<custom> token and x<custom>y and New York and new york",
    "",
    " ",
    "a",
    "\n",
    "\t\t",
    "!!!???...,,,",
    "12345678901234567890",
    "CamelCaseWordsAndMIXEDCase andsnake_case_words",
    "unbelievably unquestionably antidisestablishmentarianism",
    "x" * 300,
    "ab" * 120,
    "😀" * 50,
    "。" * 30,
    "\u0301\u0301 combining at start",
    "\ufffd replacement char and \U0010fffd private use",
    "Mixed: abc123def456 ghi-jkl_mno.pqr/stu\\vwx",
    "Quotes: \"double\" 'single' «guillemets» „German“ ‘curly’",
    "Dashes – — ‒ ― and ellipsis … and bullets • ·",
]
PIECES = ["the", "The", "cat", "Hello", "world", "tokenization", "naïve", "café", "Ünïcödé", "straße",
          "日本", "東京", "中文", "한국어", "Привет", "Σίσυφος", "مرحبا", "שלום", "ไทย", "हिन्दी",
          "😀", "👍🏽", "🇫🇷", "👨‍👩‍👧", "❤️", "ﬁ", "Ａ", "²", "①", "½", "İ", "ß", "Σ", "e\u0301", "\u0301",
          "0", "7", "42", "3.14", "1,000", "١٢٣", ",", ".", "!", "?", ";", ":", "'", "\"", "(", ")", "-", "_",
          "/", "\\", "@", "#", "$", "%", "&", "*", "+", "=", "<", ">", "[", "]", "{", "}", "|", "~", "`", "^",
          " ", " ", " ", "  ", "   ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2009", "\u000b", "\u0085",
          "\u200b", "\ufeff", "\x00", "\x07", "\x7f", "\u32ff", "\ua7f2", "\U0001fbf0",
          "[MASK]", "<mask>", "[CLS]", "<s>", "</s>", "<|endoftext|>", "<custom>", "New York", "'s", "'re",
          "don't", "can't", "I'm", "http://x.y/z", "ab", "abc", "xyz", "qu", "ing", "tion", "un"]


def make_texts(n_random=260, seed=1234):
    rng = random.Random(seed)
    texts = list(SENTENCES)
    for _ in range(n_random):
        k = rng.randint(1, 25)
        texts.append("".join(rng.choice(PIECES) + (" " if rng.random() < 0.5 else "") for _ in range(k)))
    for _ in range(10):  # longer than any model_max_length here: truncation
        texts.append(" ".join(rng.choice(SENTENCES) for _ in range(12)))
    return texts


TEXTS = make_texts()
CORPUS = [s for s in SENTENCES if s] * 20 + make_texts(400, seed=99)

# ---- tokenizers to compare ----------------------------------------------------------
SPECIALS_BERT = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SPECIALS_ROBERTA = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


def train(tok, trainer):
    trainer.show_progress = False
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def bert_uncased():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=40))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    train(tok, trainers.WordPieceTrainer(vocab_size=700, special_tokens=SPECIALS_BERT))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok.decoder = decoders.WordPiece()
    tok.add_tokens([AddedToken("<custom>", single_word=True), AddedToken("New York", normalized=True)])
    return tok


def bert_cased():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False, handle_chinese_chars=False)
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    train(tok, trainers.WordPieceTrainer(vocab_size=900, special_tokens=SPECIALS_BERT))
    tok.post_processor = processors.BertProcessing(("[SEP]", tok.token_to_id("[SEP]")), ("[CLS]", tok.token_to_id("[CLS]")))
    tok.decoder = decoders.WordPiece(cleanup=False)
    return tok


def gpt2():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    train(tok, trainers.BpeTrainer(vocab_size=800, special_tokens=["<|endoftext|>"],
                                   initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def roberta():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    train(tok, trainers.BpeTrainer(vocab_size=800, special_tokens=SPECIALS_ROBERTA,
                                   initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
    return tok


def unigram_t5():
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.Nmt(), normalizers.NFKC(),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    train(tok, trainers.UnigramTrainer(vocab_size=600, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>"))
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return tok


def darts_double_array(mapping):
    """A Darts-clone double array (the layout SentencePiece's precompiled_charsmap uses)
    for the UTF-8 keys of `mapping`, values = offsets into a '\\0'-separated string pool."""
    pool = b""
    trie = {}
    for key, value in sorted(mapping.items()):
        node = trie
        for b in key.encode():
            node = node.setdefault(b, {})
        node[None] = len(pool)
        pool += value.encode() + b"\0"
    units, used = {}, {0}

    def place(node, pos, label):
        labels = sorted(0 if k is None else k for k in node)
        base = 1
        while any((base ^ c) in used for c in labels):
            base += 1
        for c in labels:
            used.add(base ^ c)
        offset = pos ^ base
        assert offset < (1 << 21)
        units[pos] = (offset << 10) | ((None in node) << 8) | label
        if None in node:
            units[base] = node[None] | (1 << 31)
        for k, child in node.items():
            if k is not None:
                place(child, base ^ k, k)

    place(trie, 0, 0)
    array = [units.get(i, 0) for i in range(max(units) + 1)]
    return struct.pack("<I", 4 * len(array)) + struct.pack(f"<{len(array)}I", *array) + pool


def xlmr_precompiled():
    mapping = {}
    for c in range(0x20, 0x30000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        n = unicodedata.normalize("NFKC", chr(c))
        if n != chr(c):
            mapping[chr(c)] = n
    mapping.update({"\t": " ", "\n": " ", "\r": " ", "\u200b": "", "\u00ad": "", "e\u0301": "é",
                    "a\u0308": "ä", "ﬁ": "fi", "\x00": ""})
    charsmap = darts_double_array(mapping)
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    train(tok, trainers.UnigramTrainer(vocab_size=700, special_tokens=SPECIALS_ROBERTA, unk_token="<unk>"))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))])
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
    return tok


def llama():
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    train(tok, trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"],
                                   limit_alphabet=120))
    # The 256 byte tokens, appended to the vocabulary as Llama has them.
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    tok = Tokenizer.from_str(json.dumps(j))
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return tok


def split_mix():
    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase(),
                                           normalizers.Strip()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\s+"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\s+"), behavior="removed"),
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.Punctuation(behavior="contiguous"),
        pre_tokenizers.Split(Regex(r"[aeiou]+"), behavior="merged_with_next"),
        pre_tokenizers.Split(" ", behavior="isolated"),
    ])
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    train(tok, trainers.BpeTrainer(vocab_size=700, special_tokens=["[UNK]", "[CLS]", "[SEP]"],
                                   continuing_subword_prefix="##", end_of_word_suffix="</w>", limit_alphabet=150))
    return tok


def split_mix2():
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace("ö", "oe"),
                                           normalizers.Prepend("^"), normalizers.Strip(left=False, right=True)])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Whitespace(),
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Split(Regex(r"\p{Lu}\p{Ll}*"), behavior="isolated", invert=True),
        pre_tokenizers.Split(Regex(r"(?=\p{P})"), behavior="merged_with_next"),
        pre_tokenizers.CharDelimiterSplit("x"),
    ])
    train(tok, trainers.WordPieceTrainer(vocab_size=700, special_tokens=["[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="[CLS]:1 $A:0 [SEP]:1", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                      special_tokens=[("[CLS]", tok.token_to_id("[CLS]")),
                                                      ("[SEP]", tok.token_to_id("[SEP]"))])])
    return tok


def whitespace_bpe():
    # Whitespace pre-tokenizer, a Lowercase+NFC normalizer, ignore_merges and no unk (unknown characters vanish).
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    train(tok, trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>"], limit_alphabet=80))
    return tok


BUILDERS = [("a: BERT uncased WordPiece", bert_uncased), ("b: cased WordPiece", bert_cased),
            ("c: GPT-2 byte-level BPE", gpt2), ("d: RoBERTa BPE", roberta),
            ("e: Unigram NFKC+Metaspace (T5)", unigram_t5), ("e: Unigram Precompiled (XLM-R)", xlmr_precompiled),
            ("f: Llama BPE byte_fallback", llama), ("g: Split/Digits/Punctuation BPE", split_mix),
            ("g: Whitespace/Split WordPiece", split_mix2), ("g: Whitespace BPE ignore_merges", whitespace_bpe)]


# ---- running both ---------------------------------------------------------------------
def t5_spm(tmp):
    """A SentencePiece unigram model trained by Debian's spm_train with T5's special ids
    (pad 0, eos 1, unk 2, no bos), converted by transformers' T5TokenizerFast (the
    Precompiled normalizer, Metaspace, 100 <extra_id_N> tokens) and saved as a user's
    directory: tokenizer.json and the rest of what save_pretrained writes."""
    corpus = os.path.join(tmp, "t5_corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(t.replace("\n", " ") for t in CORPUS if t.strip()) + "\n")
    prefix = os.path.join(tmp, "t5_spm")
    p = subprocess.run(["spm_train", f"--input={corpus}", f"--model_prefix={prefix}", "--vocab_size=500",
                        "--model_type=unigram", "--pad_id=0", "--eos_id=1", "--unk_id=2", "--bos_id=-1",
                        "--num_threads=1", "--minloglevel=2"], capture_output=True)
    if p.returncode != 0:
        sys.exit("hf_tokenizers: spm_train failed (Debian package sentencepiece):\n" + p.stderr.decode())
    d = os.path.join(tmp, "h_t5_spm")
    transformers.T5TokenizerFast(vocab_file=prefix + ".model").save_pretrained(d)
    return d, transformers.T5TokenizerFast.from_pretrained(d)


def run_cli(model_dir, texts, *flags):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False)
    try:
        p = subprocess.run([cli, "tokenize", "--model", model_dir, "--input", f.name, "--json", *flags],
                           capture_output=True)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        sys.exit(f"hf_tokenizers: vkformer tokenize {' '.join(flags)} on {model_dir} failed ({p.returncode}):\n"
                 + p.stderr.decode(errors="replace"))
    return json.loads(p.stdout)


class Reference:
    """HF's side: a tokenizers.Tokenizer, or a transformers fast tokenizer."""

    def __init__(self, tok=None, fast=None):
        self.tok, self.fast = tok, fast
        if tok is not None:
            tok.no_truncation()
            tok.no_padding()

    def encode(self, text, add_special=True, max_length=0):
        if self.fast is not None:
            kw = {"truncation": True, "max_length": max_length} if max_length else {}
            return self.fast(text, add_special_tokens=add_special, **kw)["input_ids"]
        if max_length:
            self.tok.enable_truncation(max_length)
        ids = self.tok.encode(text, add_special_tokens=add_special).ids
        self.tok.no_truncation()
        return ids

    def decode(self, ids, skip_special):
        backend = self.fast.backend_tokenizer if self.fast is not None else self.tok
        return backend.decode(ids, skip_special_tokens=skip_special)


def compare(name, model_dir, ref, texts):
    """Returns the number of mismatches; prints the first few of each kind."""
    bad = 0
    t0 = time.monotonic()
    checks = [("ids", [], dict()), ("ids --no-special", ["--no-special"], dict(add_special=False)),
              ("ids --max-length 24", ["--max-length", "24"], dict(max_length=24))]
    all_ids = None
    for what, flags, kw in checks:
        want = [ref.encode(t, **kw) for t in texts]
        got = run_cli(model_dir, texts, *flags)
        if all_ids is None:
            all_ids = want
        wrong = [i for i in range(len(texts)) if want[i] != got[i]]
        for i in wrong[:5]:
            print(f"  MISMATCH {name} {what} #{i} {texts[i][:70]!r}\n    HF:       {want[i][:40]}\n"
                  f"    vkformer: {got[i][:40]}")
        bad += len(wrong)
    id_lists = [" ".join(map(str, ids)) for ids in all_ids]
    for what, flags, skip in [("decode", [], True), ("decode --keep-special", ["--keep-special"], False)]:
        want = [ref.decode(ids, skip) for ids in all_ids]
        got = run_cli(model_dir, id_lists, "--decode", *flags)
        wrong = [i for i in range(len(texts)) if want[i] != got[i]]
        for i in wrong[:5]:
            print(f"  MISMATCH {name} {what} #{i} {texts[i][:60]!r}\n    HF:       {want[i][:80]!r}\n"
                  f"    vkformer: {got[i][:80]!r}")
        bad += len(wrong)
    n_ids = sum(len(x) for x in all_ids)
    print(f"{name}: {len(texts)} texts x 5 checks (ids, --no-special, --max-length 24, decode, "
          f"decode --keep-special), {n_ids} ids: {'all equal' if not bad else f'{bad} MISMATCHES'} "
          f"({time.monotonic() - t0:.1f} s)")
    return bad


def check_real_gpt2():
    """GPT-2's own vocabulary (50257 tokens, 50000 merges; `make gpt2-vocab` places OpenAI's
    encoder.json + vocab.bpe as vocab.json + merges.txt) against GPT2TokenizerFast, and
    decode(encode(x)) == x, byte for byte, for every text."""
    d = os.path.join(src, "models", "gpt2-vocab")
    if not os.path.exists(os.path.join(d, "merges.txt")):
        print("hf_tokenizers: models/gpt2-vocab is missing: run `make gpt2-vocab`")
        return 1
    bad = compare("real: GPT-2 vocabulary (vocab.json + merges.txt)", d,
                  Reference(fast=transformers.GPT2TokenizerFast.from_pretrained(d)), TEXTS)
    ids = run_cli(d, TEXTS)
    back = run_cli(d, [" ".join(map(str, x)) for x in ids], "--decode", "--keep-special")
    lossy = [i for i in range(len(TEXTS)) if back[i] != TEXTS[i]]
    for i in lossy[:5]:
        print(f"  ROUND TRIP real GPT-2 #{i}: {TEXTS[i][:60]!r} -> {back[i][:60]!r}")
    print(f"real: GPT-2 decode(encode(x)) == x: {len(TEXTS) - len(lossy)}/{len(TEXTS)} texts")
    return bad + len(lossy)


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        trained = {}
        for name, build in BUILDERS:
            tok = build()
            d = os.path.join(tmp, name.split(":")[0] + "_" + build.__name__)
            os.makedirs(d)
            tok.save(os.path.join(d, "tokenizer.json"))
            trained[build.__name__] = tok
            failures += compare(name, d, Reference(Tokenizer.from_file(os.path.join(d, "tokenizer.json"))), TEXTS)
            if build is xlmr_precompiled:  # the charsmap must have been applied
                assert tok.normalizer.normalize_str("ﬁ①\u200b") == "fi1", tok.normalizer.normalize_str("ﬁ①")

        # h: directories with only the vocabulary files, against transformers' fast tokenizers.
        legacy = []
        for lower in (True, False):
            d = os.path.join(tmp, f"h_vocab_txt_{'uncased' if lower else 'cased'}")
            os.makedirs(d)
            trained["bert_uncased"].model.save(d)
            with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
                json.dump({"do_lower_case": lower, "model_max_length": 512}, f)
            legacy.append((f"h: vocab.txt ({'uncased' if lower else 'cased'})", d,
                           transformers.BertTokenizerFast.from_pretrained(d)))
        for kind, cls, config in [("gpt2", transformers.GPT2TokenizerFast, {}),
                                  ("roberta", transformers.RobertaTokenizerFast,
                                   {"tokenizer_class": "RobertaTokenizer", "model_max_length": 512})]:
            d = os.path.join(tmp, f"h_vocab_json_{kind}")
            os.makedirs(d)
            trained[kind].model.save(d)
            if config:
                with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
                    json.dump(config, f)
            legacy.append((f"h: vocab.json+merges.txt ({kind})", d, cls.from_pretrained(d)))
        legacy.append(("t5: spm_train → T5TokenizerFast", *t5_spm(tmp)))
        for name, d, fast in legacy:
            failures += compare(name, d, Reference(fast=fast), TEXTS)

        real = os.path.join(src, "models", "hf", "all-MiniLM-L6-v2")
        if not os.path.exists(os.path.join(real, "tokenizer.json")):
            real = "/work/main/models/hf/all-MiniLM-L6-v2"
        if os.path.exists(os.path.join(real, "tokenizer.json")):
            failures += compare("real: all-MiniLM-L6-v2", real,
                                Reference(Tokenizer.from_file(os.path.join(real, "tokenizer.json"))), TEXTS)
        else:
            print("real all-MiniLM-L6-v2 tokenizer not found (optional; `make hf-models` places it)")
        failures += check_real_gpt2()
    print(f"hf_tokenizers: {'all equal' if not failures else f'{failures} mismatches'}")
    sys.exit(1 if failures else 0)


main()
