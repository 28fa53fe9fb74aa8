// A GGUF file's tokenizer as the tokenizer.json of HF's pipeline (gguf_tokenizer.hpp).
#include "text/gguf_tokenizer.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "model/json_text.hpp"
#include "text/hf/hf_tokenizer.hpp"
#include "text/hf/models.hpp"
#include "text/hf/unicode.hpp"
#include "vkformer/error.hpp"

namespace vkf::text {
namespace {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int32_t { kUndefined = 0, kNormal, kUnknown, kControl, kUserDefined, kUnused, kByte };

// The pre-tokenizer regexes of llama.cpp's llm_tokenizer_bpe (src/llama-vocab.cpp), per
// LLAMA_VOCAB_PRE_TYPE_*. llama.cpp runs them one after the other, each splitting the
// pieces of the one before and keeping the text between matches as pieces: HF's Split
// with behavior Isolated. Where transformers' GGUF conversion differs (it uses plain
// ByteLevel, GPT-2's regex, for every "gpt2" vocab), these follow llama.cpp: it is what
// the file's creator tokenized with. (For "smollm" this is SmolLM2's own tokenizer.json:
// Digits(individual_digits) then ByteLevel's GPT-2 regex.)
const char* const kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kPoro = R"( ?[^(\s|.,!?…。，、।۔،)]+)";
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreType {
  std::vector<std::string> regexes;
  bool ignore_merges = false;  ///< a word that is a whole token is that token
  bool add_bos = false;        ///< llama.cpp's default when add_bos_token is absent
};

const std::vector<std::pair<std::vector<std::string>, PreType>>& pre_types() {
  static const std::vector<std::pair<std::vector<std::string>, PreType>> table = {
      {{"default", ""}, {{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}}},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral"}, {{kLlama3}, true, true}},
      {{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {{kLlama3}}},
      {{"deepseek-coder"}, {{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", "[一-龥ࠀ-一가-퟿]+", R"(\p{N})"}}},
      {{"falcon"}, {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}}},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}, {{R"(\p{N})", kGpt2}}},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "mpt", "olmo", "jais",
        "exaone4"},
       {{kGpt2}}},
      {{"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"}, {{kQwen2}}},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {{kPoro}}},
      {{"viking"}, {{kPoro, R"(\p{N})"}}},
      {{"tekken"}, {{kTekken}, true, true}},
      {{"gpt-4o", "llama4"}, {{kGpt4o}}},
  };
  return table;
}

const PreType* find_pre(const std::string& name) {
  for (const auto& [names, type] : pre_types())
    if (std::find(names.begin(), names.end(), name) != names.end()) return &type;
  return nullptr;
}

[[noreturn]] void fail(const GgufVocab& v, const std::string& key, const std::string& what) {
  throw Error(v.path + ": tokenizer.ggml." + key + " " + what);
}

/// Checks the metadata that both kinds share.
void check(const GgufVocab& v) {
  const size_t n = v.tokens.size();
  if (n == 0) fail(v, "tokens", "is missing or empty");
  if (n > size_t(INT32_MAX)) fail(v, "tokens", "has " + std::to_string(n) + " entries, more than 2^31 - 1");
  for (size_t i = 0; i < n; ++i)
    if (!hf::valid_utf8(v.tokens[i]))
      fail(v, "tokens[" + std::to_string(i) + "]", "\"" + printable(v.tokens[i], 40) + "\" is not valid UTF-8");
  if (!v.scores.empty() && v.scores.size() != n)
    fail(v, "scores", "has " + std::to_string(v.scores.size()) + " entries for " + std::to_string(n) + " tokens");
  if (!v.token_types.empty() && v.token_types.size() != n)
    fail(v, "token_type", "has " + std::to_string(v.token_types.size()) + " entries for " + std::to_string(n) + " tokens");
  for (size_t i = 0; i < v.token_types.size(); ++i)
    if (v.token_types[i] < kUndefined || v.token_types[i] > kByte)
      fail(v, "token_type[" + std::to_string(i) + "]",
           "is " + std::to_string(v.token_types[i]) + ", not a token type (0 to 6)");
  const std::pair<const char*, const std::optional<int64_t>*> ids[] = {
      {"bos_token_id", &v.bos_id}, {"eos_token_id", &v.eos_id},   {"unknown_token_id", &v.unk_id},
      {"padding_token_id", &v.pad_id}, {"seperator_token_id", &v.sep_id}, {"cls_token_id", &v.cls_id},
      {"mask_token_id", &v.mask_id}};
  for (const auto& [key, id] : ids)
    if (*id && (**id < 0 || uint64_t(**id) >= n))
      fail(v, key, std::to_string(**id) + " is outside the vocabulary (" + std::to_string(n) + " tokens)");
}

/// The ids given by the keys, with llama.cpp's defaults for "llama" (bos 1, eos 2, unk 0).
struct SpecialIds {
  std::optional<int64_t> bos, eos, unk, pad, sep, cls, mask;
};
SpecialIds special_ids(const GgufVocab& v, bool spm) {
  SpecialIds s{v.bos_id, v.eos_id, v.unk_id, v.pad_id, v.sep_id, v.cls_id, v.mask_id};
  const auto n = int64_t(v.tokens.size());
  if (spm) {
    if (!s.bos && n > 1) s.bos = 1;
    if (!s.eos && n > 2) s.eos = 2;
    if (!s.unk) s.unk = 0;
  }
  return s;
}

nlohmann::json added_tokens(const GgufVocab& v, const SpecialIds& s) {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&](size_t id, bool special) {
    out.push_back({{"id", id}, {"content", v.tokens[id]}, {"single_word", false}, {"lstrip", false},
                   {"rstrip", false}, {"normalized", false}, {"special", special}});
  };
  if (v.token_types.empty()) {
    // No types: the unk, BOS and EOS tokens are special, as transformers' conversion makes them.
    std::vector<int64_t> seen;
    for (const auto& id : {s.unk, s.bos, s.eos})
      if (id && std::find(seen.begin(), seen.end(), *id) == seen.end()) seen.push_back(*id), add(size_t(*id), true);
    return out;
  }
  // llama.cpp matches CONTROL, USER_DEFINED and UNKNOWN tokens in the text (parse_special).
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const int32_t t = v.token_types[i];
    if ((t == kControl || t == kUnknown || t == kUserDefined) && !v.tokens[i].empty()) add(i, t != kUserDefined);
  }
  return out;
}

nlohmann::json template_processing(const GgufVocab& v, const SpecialIds& s, bool add_bos, bool add_eos) {
  nlohmann::json single = nlohmann::json::array(), pair = nlohmann::json::array(), specials = nlohmann::json::object();
  auto special = [&](const char* key, const std::optional<int64_t>& id, int type_id) {
    if (!id) fail(v, key, "is missing, and add_" + std::string(key).substr(0, 3) + "_token is true");
    const std::string& t = v.tokens[size_t(*id)];
    specials[t] = {{"id", t}, {"ids", {*id}}, {"tokens", {t}}};
    return nlohmann::json{{"SpecialToken", {{"id", t}, {"type_id", type_id}}}};
  };
  auto seq = [](const char* id, int type_id) {
    return nlohmann::json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
  };
  for (int k = 0; k < 2; ++k) {
    nlohmann::json& out = k == 0 ? single : pair;
    for (int part = 0; part <= k; ++part) {
      if (add_bos) out.push_back(special("bos_token_id", s.bos, part));
      out.push_back(seq(part == 0 ? "A" : "B", part));
      if (add_eos) out.push_back(special("eos_token_id", s.eos, part));
    }
  }
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

nlohmann::json vocab_object(const GgufVocab& v) {
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < v.tokens.size(); ++i) vocab[v.tokens[i]] = i;  // a repeated token: the last id, as llama.cpp
  return vocab;
}

/// tokenizer.ggml.merges as pairs, checked: "a b" with both tokens and their join in the vocabulary.
std::vector<std::pair<std::string, std::string>> bpe_merges(const GgufVocab& v) {
  if (v.merges.empty()) fail(v, "merges", "is missing or empty (a \"gpt2\" vocabulary needs its merges)");
  std::unordered_map<std::string, size_t> ids;
  for (size_t i = 0; i < v.tokens.size(); ++i) ids[v.tokens[i]] = i;
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(v.merges.size());
  for (size_t i = 0; i < v.merges.size(); ++i) {
    const std::string& m = v.merges[i];
    const std::string key = "merges[" + std::to_string(i) + "]";
    const size_t sp = m.find(' ', 1);  // as llama.cpp: the first space after the first byte
    if (m.empty() || sp == std::string::npos || sp + 1 >= m.size() || m.find(' ', sp + 1) != std::string::npos)
      fail(v, key, "\"" + printable(m, 60) + "\" is not two tokens separated by one space");
    std::string a = m.substr(0, sp), b = m.substr(sp + 1);
    for (const std::string* t : std::initializer_list<const std::string*>{&a, &b, nullptr}) {
      const std::string s = t ? *t : a + b;
      if (!ids.count(s))
        fail(v, key, "\"" + printable(m, 60) + "\": " + (t ? "" : "the merged token ") + "\"" + printable(s, 40) +
                         "\" is not in tokenizer.ggml.tokens");
    }
    out.emplace_back(std::move(a), std::move(b));
  }
  return out;
}

/// SentencePiece BPE merges from the scores: every split of a token into two tokens,
/// ranked by the score of the token (equal scores, equal ranks), as llama.cpp's SPM
/// tokenizer merges the adjacent pair whose join scores best, leftmost first.
std::vector<hf::RankedMerge> spm_merges(const GgufVocab& v) {
  std::unordered_map<std::string, size_t> ids;
  for (size_t i = 0; i < v.tokens.size(); ++i) ids[v.tokens[i]] = i;
  std::vector<float> distinct;
  for (size_t i = 0; i < v.tokens.size(); ++i) distinct.push_back(v.scores.empty() ? 0.f : v.scores[i]);
  std::sort(distinct.begin(), distinct.end(), std::greater<float>());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<hf::RankedMerge> out;
  for (const auto& [t, id] : ids) {
    const float score = v.scores.empty() ? 0.f : v.scores[id];
    const auto rank = uint32_t(std::lower_bound(distinct.begin(), distinct.end(), score, std::greater<float>()) -
                               distinct.begin());
    for (size_t k = hf::utf8_length(uint8_t(t[0])); k < t.size(); k += hf::utf8_length(uint8_t(t[k]))) {
      std::string a = t.substr(0, k), b = t.substr(k);
      if (ids.count(a) && ids.count(b)) out.push_back({std::move(a), std::move(b), rank});
    }
  }
  return out;
}

}  // namespace

std::string gguf_supported_pre_tokenizers() {
  std::string out;
  for (const auto& [names, type] : pre_types())
    for (const std::string& n : names)
      if (!n.empty()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

nlohmann::json gguf_tokenizer_json(const GgufVocab& v) {
  const bool spm = v.model == "llama", bpe = v.model == "gpt2";
  if (!spm && !bpe)
    throw Error(v.path + ": tokenizer.ggml.model \"" + printable(v.model, 40) +
                "\" is not supported (supported: \"gpt2\" (byte-level BPE), \"llama\" (SentencePiece BPE))");
  check(v);
  const PreType* pre = nullptr;
  if (bpe) {
    pre = find_pre(v.pre);
    if (!pre)
      throw Error(v.path + ": tokenizer.ggml.pre \"" + printable(v.pre, 40) +
                  "\" is not supported for tokenizer.ggml.model \"gpt2\" (supported: " +
                  gguf_supported_pre_tokenizers() + ")");
  }
  const SpecialIds s = special_ids(v, spm);
  const bool add_bos = v.add_bos.value_or(spm || pre->add_bos);
  const bool add_eos = v.add_eos.value_or(false);

  nlohmann::json j = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}};
  j["added_tokens"] = added_tokens(v, s);
  nlohmann::json model = {{"type", "BPE"}, {"dropout", nullptr}, {"continuing_subword_prefix", nullptr},
                          {"end_of_word_suffix", nullptr}, {"vocab", vocab_object(v)}};
  if (bpe) {
    nlohmann::json merges = nlohmann::json::array();
    for (auto& [a, b] : bpe_merges(v)) merges.push_back({std::move(a), std::move(b)});
    model["merges"] = std::move(merges);
    model["unk_token"] = s.unk ? nlohmann::json(v.tokens[size_t(*s.unk)]) : nlohmann::json(nullptr);
    model["fuse_unk"] = false;
    model["byte_fallback"] = false;
    model["ignore_merges"] = pre->ignore_merges;
    j["normalizer"] = nullptr;
    nlohmann::json seq = nlohmann::json::array();
    for (const std::string& re : pre->regexes)
      seq.push_back({{"type", "Split"}, {"pattern", {{"Regex", re}}}, {"behavior", "Isolated"}, {"invert", false}});
    seq.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}});
    j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", seq}};
    j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  } else {
    // The merges are made from the scores in load_gguf_tokenizer (ranked, which JSON cannot say).
    model["merges"] = nlohmann::json::array();
    model["unk_token"] = v.tokens[size_t(*s.unk)];
    model["fuse_unk"] = true;
    model["byte_fallback"] = true;
    model["ignore_merges"] = false;
    const bool prefix = v.add_space_prefix.value_or(true);
    nlohmann::json norm = nlohmann::json::array();
    // One U+2581 before the text and after each special token (llama.cpp's is_prev_special):
    // HF's Prepend runs on every piece between added tokens, which is the same.
    if (prefix) norm.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
    norm.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}});
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", norm}};
    j["pre_tokenizer"] = nullptr;
    nlohmann::json dec = nlohmann::json::array({{{"type", "ByteFallback"}}, {{"type", "Fuse"}},
                                                {{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}}});
    if (prefix) dec.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["decoder"] = {{"type", "Sequence"}, {"decoders", dec}};
  }
  j["model"] = std::move(model);
  j["post_processor"] = add_bos || add_eos ? template_processing(v, s, add_bos, add_eos) : nlohmann::json(nullptr);
  return j;
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufVocab& v) {
  nlohmann::json j = gguf_tokenizer_json(v);
  // The model is built here rather than from the JSON: every id keeps its token even when
  // a token is repeated (a JSON object keeps the last), the "llama" merges carry ranks, and
  // nothing is parsed twice.
  hf::BpeOptions o;
  const nlohmann::json& m = j["model"];
  if (m["unk_token"].is_string()) o.unk = m["unk_token"].get<std::string>();
  o.fuse_unk = m["fuse_unk"].get<bool>();
  o.byte_fallback = m["byte_fallback"].get<bool>();
  o.ignore_merges = m["ignore_merges"].get<bool>();
  std::vector<hf::RankedMerge> merges;
  if (v.model == "llama") {
    merges = spm_merges(v);
  } else {
    const nlohmann::json& jm = m["merges"];
    merges.reserve(jm.size());
    for (size_t i = 0; i < jm.size(); ++i)
      merges.push_back({jm[i][0].get<std::string>(), jm[i][1].get<std::string>(), uint32_t(i)});
  }
  j["model"]["vocab"] = nlohmann::json::object();
  j["model"]["merges"] = nlohmann::json::array();
  j["model"]["unk_token"] = nullptr;
  hf::Parts p = hf::parse_tokenizer_json(j, v.path + " (tokenizer.ggml.*)");
  hf::Vocab vocab;
  for (size_t i = 0; i < v.tokens.size(); ++i) vocab.add(v.tokens[i], int32_t(i));
  p.model = hf::make_bpe(std::move(vocab), merges, o, v.path + " (tokenizer.ggml.*)");
  const SpecialIds s = special_ids(v, v.model == "llama");
  const std::pair<const char*, const std::optional<int64_t>*> roles[] = {
      {"bos_token", &s.bos}, {"eos_token", &s.eos}, {"unk_token", &s.unk}, {"pad_token", &s.pad},
      {"sep_token", &s.sep}, {"cls_token", &s.cls}, {"mask_token", &s.mask}};
  for (const auto& [role, id] : roles)
    if (*id) p.special_tokens[role] = v.tokens[size_t(**id)];
  return hf::make_tokenizer(std::move(p));
}

}  // namespace vkf::text
