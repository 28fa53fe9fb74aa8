// The tokenizer of a GGUF file's metadata (src/text/gguf_tokenizer.cpp), host only.
// GgufReference.*: the cases tests/gguf_tokenizer_check.py writes (VKF_GGUF_CASES =
// "VOCAB.json:REF.json;..."): ids and decoded text equal to HF's/SentencePiece's on every
// text; skipped without it. The rest: small hand-made vocabularies and bad metadata.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "text/gguf_tokenizer.hpp"
#include "vkformer/error.hpp"

namespace {

using vkf::text::GgufVocab;
using vkf::text::load_gguf_tokenizer;

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

GgufVocab vocab_from_json(const nlohmann::json& j) {
  GgufVocab v;
  v.path = j.value("path", "");
  v.model = j.value("model", "");
  v.pre = j.value("pre", "");
  if (j.contains("tokens")) v.tokens = j["tokens"].get<std::vector<std::string>>();
  if (j.contains("scores")) v.scores = j["scores"].get<std::vector<float>>();
  if (j.contains("token_types")) v.token_types = j["token_types"].get<std::vector<int32_t>>();
  if (j.contains("merges")) v.merges = j["merges"].get<std::vector<std::string>>();
  auto id = [&](const char* k, std::optional<int64_t>& out) {
    if (j.contains(k)) out = j[k].get<int64_t>();
  };
  id("bos_id", v.bos_id), id("eos_id", v.eos_id), id("unk_id", v.unk_id), id("pad_id", v.pad_id);
  id("sep_id", v.sep_id), id("cls_id", v.cls_id), id("mask_id", v.mask_id);
  auto flag = [&](const char* k, std::optional<bool>& out) {
    if (j.contains(k)) out = j[k].get<bool>();
  };
  flag("add_bos", v.add_bos), flag("add_eos", v.add_eos), flag("add_space_prefix", v.add_space_prefix);
  return v;
}

TEST(GgufReference, IdsAndDecodeEqualOnEveryText) {
  const char* cases = std::getenv("VKF_GGUF_CASES");
  if (!cases) GTEST_SKIP() << "VKF_GGUF_CASES is not set: run by tests/gguf_tokenizer_check.py (ctest gguf_tokenizer)";
  std::stringstream list(cases);
  std::string item;
  while (std::getline(list, item, ';')) {
    const size_t colon = item.find(':');
    ASSERT_NE(colon, std::string::npos) << item;
    const nlohmann::json vj = read_json(item.substr(0, colon)), ref = read_json(item.substr(colon + 1));
    const std::string name = ref["name"];
    const auto tok = load_gguf_tokenizer(vocab_from_json(vj));
    const auto& texts = ref["texts"];
    size_t id_bad = 0, dec_bad = 0, dec_s_bad = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      const std::string text = texts[i];
      const auto want = ref["ids"][i].get<std::vector<int32_t>>();
      const auto got = tok->encode(text);
      if (got != want && ++id_bad <= 5) {
        ADD_FAILURE() << name << ": ids of " << nlohmann::json(text).dump() << ": got " << nlohmann::json(got).dump()
                      << ", want " << nlohmann::json(want).dump();
      }
      if (ref["decoded"][i].is_null()) continue;  // ids only
      const std::string dec = tok->decode(want), dec_want = ref["decoded"][i];
      if (dec != dec_want && ++dec_bad <= 5)
        ADD_FAILURE() << name << ": decode of " << nlohmann::json(text).dump() << ": got " << nlohmann::json(dec).dump()
                      << ", want " << nlohmann::json(dec_want).dump();
      const std::string dec_s = tok->decode(want, false), dec_s_want = ref["decoded_special"][i];
      if (dec_s != dec_s_want && ++dec_s_bad <= 5)
        ADD_FAILURE() << name << ": decode (special kept) of " << nlohmann::json(text).dump() << ": got "
                      << nlohmann::json(dec_s).dump() << ", want " << nlohmann::json(dec_s_want).dump();
    }
    for (auto it = ref["roles"].begin(); it != ref["roles"].end(); ++it)
      EXPECT_EQ(tok->special_token(it.key()).value_or("(none)"), it.value().get<std::string>()) << name << " " << it.key();
    std::printf("%s: %zu texts: ids %zu differ, decode %zu differ, decode (special kept) %zu differ\n", name.c_str(),
                texts.size(), id_bad, dec_bad, dec_s_bad);
    EXPECT_EQ(id_bad, 0u) << name;
    EXPECT_EQ(dec_bad, 0u) << name;
    EXPECT_EQ(dec_s_bad, 0u) << name;
  }
}

// A byte-level vocabulary: the 256 byte characters of GPT-2, a few merges, two control tokens.
GgufVocab tiny_gpt2() {
  GgufVocab v;
  v.path = "tiny.gguf";
  v.model = "gpt2";
  v.pre = "smollm";
  v.tokens = {"<|endoftext|>", "<|im_start|>"};
  auto byte_char = [](int b) {  // GPT-2's bytes_to_unicode
    int c = b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
      int n = 0;
      for (int x = 0; x < b; ++x)
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
      c = 256 + n;
    }
    std::string s;
    if (c < 0x80) s += char(c);
    else s += char(0xC0 | (c >> 6)), s += char(0x80 | (c & 0x3F));
    return s;
  };
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_char(b));
  v.tokens.push_back("he");           // 258
  v.tokens.push_back("hel");          // 259
  v.tokens.push_back("\u0120h");      // 260 " h"
  v.tokens.push_back("12");           // 261: never made by smollm (digits are split)
  v.merges = {"h e", "he l", "\u0120 h", "1 2"};
  v.token_types.assign(v.tokens.size(), 1);
  v.token_types[0] = v.token_types[1] = 3;
  v.bos_id = 1;
  v.eos_id = 0;
  return v;
}

TEST(GgufTokenizer, Gpt2SmollmBasics) {
  const auto tok = load_gguf_tokenizer(tiny_gpt2());
  // 'h'=104 -> id 106, 'e' -> 103, 'l' -> 110, ' ' is byte 32 -> id 34.
  EXPECT_EQ(tok->encode("hel"), (std::vector<int32_t>{259}));
  EXPECT_EQ(tok->encode("hel hel"), (std::vector<int32_t>{259, 34, 259}));  // " h" loses to "he"
  EXPECT_EQ(tok->encode("12"), (std::vector<int32_t>{2 + '1', 2 + '2'}));  // smollm splits digits
  EXPECT_EQ(tok->encode("<|im_start|>hel<|endoftext|>"), (std::vector<int32_t>{1, 259, 0}));
  EXPECT_EQ(tok->decode({1, 259, 260, 0}), "hel h");
  EXPECT_EQ(tok->decode({1, 259, 260, 0}, false), "<|im_start|>hel h<|endoftext|>");
  EXPECT_EQ(tok->special_token("bos_token").value_or(""), "<|im_start|>");
  EXPECT_EQ(tok->special_token("eos_token").value_or(""), "<|endoftext|>");
  EXPECT_FALSE(tok->special_token("pad_token"));
  EXPECT_EQ(tok->token_to_id("<|im_start|>"), 1);
}

TEST(GgufTokenizer, Gpt2BosWhenAsked) {
  GgufVocab v = tiny_gpt2();
  v.add_bos = true;
  v.add_eos = true;
  EXPECT_EQ(load_gguf_tokenizer(v)->encode("hel"), (std::vector<int32_t>{1, 259, 0}));
  v.pre = "gpt-2";  // GPT-2's regex: digit runs stay whole
  v.add_bos = v.add_eos = std::nullopt;
  EXPECT_EQ(load_gguf_tokenizer(v)->encode("12"), (std::vector<int32_t>{261}));
  v.pre = "llama-bpe";  // llama.cpp adds BOS by default for Llama 3
  EXPECT_EQ(load_gguf_tokenizer(v)->encode("12"), (std::vector<int32_t>{1, 261}));
}

// A SentencePiece-style vocabulary with byte fallback.
GgufVocab tiny_llama() {
  GgufVocab v;
  v.path = "spm.gguf";
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {2, 3, 3};
  v.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.tokens.push_back(name);
    v.token_types.push_back(6);
    v.scores.push_back(0);
  }
  // 259.. : pieces with scores (higher merges first)
  const std::pair<const char*, float> pieces[] = {{"\u2581", -1}, {"a", -2}, {"b", -3}, {"\u2581a", -4},
                                                  {"ab", -5},     {"\u2581ab", -6}, {"c", -7}};
  for (const auto& [p, s] : pieces) {
    v.tokens.push_back(p);
    v.token_types.push_back(1);
    v.scores.push_back(s);
  }
  return v;
}

TEST(GgufTokenizer, LlamaSentencePieceBpe) {
  const auto tok = load_gguf_tokenizer(tiny_llama());
  const int32_t sp = 259, a = 260, b = 261, spa = 262, ab = 263, spab = 264, c = 265;
  (void)a, (void)ab;
  EXPECT_EQ(tok->encode("ab"), (std::vector<int32_t>{1, spab}));
  EXPECT_EQ(tok->encode("ab c"), (std::vector<int32_t>{1, spab, sp, c}));
  EXPECT_EQ(tok->encode(""), (std::vector<int32_t>{1}));
  // "d" is no piece: its byte token <0x64> = 3 + 0x64; "é" is two bytes.
  EXPECT_EQ(tok->encode("d"), (std::vector<int32_t>{1, sp, 3 + 0x64}));
  EXPECT_EQ(tok->encode("é"), (std::vector<int32_t>{1, sp, 3 + 0xC3, 3 + 0xA9}));
  // After a special token, a U+2581 again (llama.cpp's is_prev_special).
  EXPECT_EQ(tok->encode("<s>ab"), (std::vector<int32_t>{1, 1, spab}));
  EXPECT_EQ(tok->decode({1, spab, sp, c, sp, 3 + 0xC3, 3 + 0xA9, 2}), "ab c é");
  EXPECT_EQ(tok->special_token("unk_token").value_or(""), "<unk>");
  EXPECT_EQ(tok->special_token("bos_token").value_or(""), "<s>");  // llama.cpp's default ids 1, 2, 0
  GgufVocab v = tiny_llama();
  v.add_bos = false;
  v.add_space_prefix = false;
  EXPECT_EQ(load_gguf_tokenizer(v)->encode("ab b"), (std::vector<int32_t>{ab, sp, b}));
  EXPECT_EQ(load_gguf_tokenizer(v)->decode({ab, sp, b}), "ab b");
}

TEST(GgufTokenizer, LlamaEqualScoresMergeLeftmostFirst) {
  GgufVocab v = tiny_llama();
  v.add_bos = false;
  v.add_space_prefix = false;
  // "xy" and "yz" score the same: in "xyz" the leftmost pair wins (SentencePiece, llama.cpp).
  for (const char* p : {"x", "y", "z", "yz", "xy"}) {
    v.tokens.push_back(p);
    v.token_types.push_back(1);
    v.scores.push_back(std::string(p).size() == 1 ? -1.f : -9.f);
  }
  const auto n = int32_t(v.tokens.size());
  EXPECT_EQ(load_gguf_tokenizer(v)->encode("xyz"), (std::vector<int32_t>{n - 1, n - 3}));
}

void expect_error(const GgufVocab& v, const std::string& part) {
  try {
    load_gguf_tokenizer(v);
    ADD_FAILURE() << "no error; expected one with: " << part;
  } catch (const vkf::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(part), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.rfind(v.path + ": ", 0), 0u) << m;
  }
}

TEST(GgufTokenizer, BadMetadataNamesFileAndKey) {
  GgufVocab v = tiny_gpt2();
  v.tokens.clear();
  expect_error(v, "tokenizer.ggml.tokens is missing or empty");
  v = tiny_gpt2();
  v.merges.clear();
  expect_error(v, "tokenizer.ggml.merges is missing or empty");
  v = tiny_gpt2();
  v.merges.push_back("hel");
  expect_error(v, "tokenizer.ggml.merges[4] \"hel\" is not two tokens separated by one space");
  v = tiny_gpt2();
  v.merges.push_back("h e l");
  expect_error(v, "tokenizer.ggml.merges[4]");
  v = tiny_gpt2();
  v.merges.push_back("hel qq");
  expect_error(v, "tokenizer.ggml.merges[4] \"hel qq\": \"qq\" is not in tokenizer.ggml.tokens");
  v = tiny_gpt2();
  v.merges.push_back("hel l");
  expect_error(v, "the merged token \"hell\" is not in tokenizer.ggml.tokens");
  v = tiny_gpt2();
  v.token_types.pop_back();
  expect_error(v, "tokenizer.ggml.token_type has 261 entries for 262 tokens");
  v = tiny_gpt2();
  v.token_types[5] = 9;
  expect_error(v, "tokenizer.ggml.token_type[5] is 9");
  v = tiny_gpt2();
  v.scores = {1.f};
  expect_error(v, "tokenizer.ggml.scores has 1 entries for 262 tokens");
  v = tiny_gpt2();
  v.bos_id = 262;
  expect_error(v, "tokenizer.ggml.bos_token_id 262 is outside the vocabulary (262 tokens)");
  v = tiny_gpt2();
  v.eos_id = -1;
  expect_error(v, "tokenizer.ggml.eos_token_id -1 is outside");
  v = tiny_gpt2();
  v.model = "bert";
  expect_error(v, "tokenizer.ggml.model \"bert\" is not supported (supported: \"gpt2\"");
  v = tiny_gpt2();
  v.pre = "no-such-pre";
  expect_error(v, "tokenizer.ggml.pre \"no-such-pre\" is not supported for tokenizer.ggml.model \"gpt2\" (supported: ");
  v = tiny_gpt2();
  v.tokens[300 - 40] = std::string("\xff");
  expect_error(v, "is not valid UTF-8");
  v = tiny_gpt2();
  v.bos_id.reset();
  v.add_bos = true;
  expect_error(v, "tokenizer.ggml.bos_token_id is missing, and add_bos_token is true");
}

TEST(GgufTokenizer, EveryListedPreTokenizerLoads) {
  GgufVocab v = tiny_gpt2();
  std::stringstream names(vkf::text::gguf_supported_pre_tokenizers());
  std::string name;
  int n = 0;
  while (std::getline(names, name, ',')) {
    v.pre = name.substr(name.find_first_not_of(' '));
    const auto tok = load_gguf_tokenizer(v);
    EXPECT_FALSE(tok->encode("Hello world 12345, it's <|im_start|> ünï 日本 \n\n  x").empty()) << v.pre;
    ++n;
  }
  EXPECT_GT(n, 30);
}

}  // namespace
