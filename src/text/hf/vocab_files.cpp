// Directories without tokenizer.json: the pipeline transformers' "fast"
// conversion builds (convert_slow_tokenizer.py: BertConverter, GPT2Converter,
// RobertaConverter) from vocab.txt, or from vocab.json + merges.txt.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "io/read_file.hpp"
#include "model/json_parse.hpp"
#include "model/json_text.hpp"
#include "text/hf/hf_tokenizer.hpp"
#include "text/hf/models.hpp"
#include "text/hf/unicode.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {
namespace {

std::string slurp(const std::string& path) {
  std::string s = io::read_file(path, "the vocabulary");
  if (!valid_utf8(s)) throw Error(path + ": not valid UTF-8");
  return s;
}

/// Python's universal newlines: "\r\n" and "\r" read as "\n"; then split on "\n".
std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' || s[i] == '\n') {
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      out.emplace_back();
    } else {
      out.back() += s[i];
    }
  }
  return out;
}

/// tokenizer_config.json's value for special token `role`, or `def`.
std::string special(const nlohmann::json& config, const char* role, const std::string& def) {
  auto it = config.find(role);
  if (it == config.end() || it->is_null()) return def;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  throw Error(std::string("tokenizer_config.json: ") + role + " must be a string or {\"content\": ...}, got " +
              brief_json(*it));
}

bool config_bool(const nlohmann::json& config, const char* key, bool def) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return def;
  if (!it->is_boolean()) throw Error(std::string("tokenizer_config.json: ") + key + " must be true or false");
  return it->get<bool>();
}

/// The special tokens (role, default content, lstrip) as added tokens, ordered by id
/// as transformers adds them; config's added_tokens_decoder, when present, instead.
std::vector<AddedToken> special_tokens(const nlohmann::json& config, const Vocab& vocab,
                                       const std::vector<std::pair<const char*, std::string>>& roles,
                                       const std::string& lstrip_role) {
  std::vector<std::pair<int64_t, AddedToken>> list;
  auto decoder = config.find("added_tokens_decoder");
  if (decoder != config.end() && decoder->is_object()) {
    const JsonNode d(*decoder, "tokenizer_config.json", "added_tokens_decoder");
    for (auto it = decoder->begin(); it != decoder->end(); ++it) {
      const JsonNode t(it.value(), d.file(), d.path() + "[\"" + printable(it.key(), 20) + "\"]");
      AddedToken a;
      a.content = t.str("content");
      a.special = t.boolean("special", false);
      a.single_word = t.boolean("single_word", false);
      a.lstrip = t.boolean("lstrip", false);
      a.rstrip = t.boolean("rstrip", false);
      a.normalized = t.boolean("normalized", !a.special);
      int64_t id = 0;
      try {
        id = std::stoll(it.key());
      } catch (const std::exception&) {
        t.fail("is not under an integer id");
      }
      list.emplace_back(id, std::move(a));
    }
  }
  int64_t next = int64_t(vocab.size());
  for (const auto& [role, def] : roles) {
    const std::string content = special(config, role, def);
    if (content.empty() || std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.second.content == content; }))
      continue;
    AddedToken a;
    a.content = content;
    a.special = true;
    a.normalized = false;
    a.lstrip = role == lstrip_role;
    list.emplace_back(vocab.find(content).value_or(int32_t(next++)), std::move(a));
  }
  std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<AddedToken> out;
  for (auto& e : list) out.push_back(std::move(e.second));
  return out;
}

/// The special-token roles with their defaults (tokenizer_config.json overrides them later).
void default_roles(Parts& p, const nlohmann::json& config, const std::vector<std::pair<const char*, std::string>>& roles) {
  for (const auto& [role, def] : roles) p.special_tokens[role] = special(config, role, def);
}

std::unique_ptr<Normalizer> bert_normalizer(const nlohmann::json& config) {
  nlohmann::json n = {{"type", "BertNormalizer"},
                      {"clean_text", true},
                      {"handle_chinese_chars", config_bool(config, "tokenize_chinese_chars", true)},
                      {"lowercase", config_bool(config, "do_lower_case", true)}};
  auto sa = config.find("strip_accents");
  if (sa != config.end() && !sa->is_null()) n["strip_accents"] = config_bool(config, "strip_accents", false);
  return make_normalizer(JsonNode(n, "tokenizer_config.json", "(BertNormalizer)"));
}

template <class T>
std::unique_ptr<T> from_json(std::unique_ptr<T> (*make)(const JsonNode&, int), const nlohmann::json& j) {
  return make(JsonNode(j, "tokenizer_config.json", "(built)"), 0);
}

Parts bert(const std::string& dir, const nlohmann::json& config) {
  const std::string file = dir + "/vocab.txt";
  Vocab vocab;
  std::vector<std::string> lines = split_lines(slurp(file));
  if (!lines.empty() && lines.back().empty()) lines.pop_back();  // readlines(): no line after the last "\n"
  for (size_t i = 0; i < lines.size(); ++i) vocab.add(lines[i], int32_t(i));
  if (vocab.size() == 0) throw Error(file + ": empty vocabulary");
  Parts p;
  const std::vector<std::pair<const char*, std::string>> roles = {
      {"unk_token", "[UNK]"}, {"sep_token", "[SEP]"}, {"pad_token", "[PAD]"}, {"cls_token", "[CLS]"},
      {"mask_token", "[MASK]"}};
  p.added_tokens = special_tokens(config, vocab, roles, "");
  default_roles(p, config, roles);
  const std::string unk = special(config, "unk_token", "[UNK]");
  const std::string cls = special(config, "cls_token", "[CLS]"), sep = special(config, "sep_token", "[SEP]");
  p.normalizer = bert_normalizer(config);
  p.pre_tokenizer = from_json(make_pre_tokenizer, {{"type", "BertPreTokenizer"}});
  p.decoder = from_json(make_decoder, {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}});
  // The ids of [CLS] and [SEP]: in the vocabulary, or where the added tokens put them.
  auto id_of = [&](const std::string& t) -> int32_t {
    if (auto id = vocab.find(t)) return *id;
    int32_t next = int32_t(vocab.size());
    for (const AddedToken& a : p.added_tokens) {
      if (vocab.find(a.content)) continue;
      if (a.content == t) return next;
      ++next;
    }
    throw Error(file + ": \"" + printable(t, 40) + "\" is not in the vocabulary");
  };
  const nlohmann::json cls_j = {{"id", cls}, {"ids", {id_of(cls)}}, {"tokens", {cls}}};
  const nlohmann::json sep_j = {{"id", sep}, {"ids", {id_of(sep)}}, {"tokens", {sep}}};
  auto piece = [](const char* kind, const std::string& id, int type) {
    return nlohmann::json{{kind, {{"id", id}, {"type_id", type}}}};
  };
  p.post_processor = from_json(
      make_post_processor,
      {{"type", "TemplateProcessing"},
       {"single", {piece("SpecialToken", cls, 0), piece("Sequence", "A", 0), piece("SpecialToken", sep, 0)}},
       {"pair",
        {piece("SpecialToken", cls, 0), piece("Sequence", "A", 0), piece("SpecialToken", sep, 0),
         piece("Sequence", "B", 1), piece("SpecialToken", sep, 1)}},
       {"special_tokens", {{cls, cls_j}, {sep, sep_j}}}});
  p.model = make_wordpiece(std::move(vocab), unk, file);
  return p;
}

Parts byte_level_bpe(const std::string& dir, const nlohmann::json& config) {
  const std::string vocab_file = dir + "/vocab.json", merges_file = dir + "/merges.txt";
  nlohmann::json vj;
  try {
    vj = parse_json_bounded(slurp(vocab_file));
  } catch (const nlohmann::json::exception& e) {
    throw Error(vocab_file + ": not valid JSON: " + json_error_text(e));
  }
  Vocab vocab(JsonNode(vj, vocab_file, "(vocabulary)"));
  // GPT2Tokenizer: read().split("\n")[1:-1], each line split on whitespace.
  std::vector<std::string> lines = split_lines(slurp(merges_file));
  std::vector<std::pair<std::string, std::string>> merges;
  std::unordered_map<std::string, bool> seen;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    std::vector<std::string> parts;
    std::string cur;
    for (char32_t c : to_u32(lines[i])) {
      if (is_whitespace(c)) {
        if (!cur.empty()) parts.push_back(std::move(cur)), cur.clear();
      } else {
        cur += to_utf8(c);
      }
    }
    if (!cur.empty()) parts.push_back(std::move(cur));
    if (parts.size() != 2)
      throw Error(merges_file + ": line " + std::to_string(i + 1) + " must be two tokens separated by a space, got \"" +
                  printable(lines[i], 60) + "\"");
    if (seen.emplace(parts[0] + " " + parts[1], true).second) merges.emplace_back(parts[0], parts[1]);
  }
  std::string cls = config.value("tokenizer_class", std::string());
  const bool roberta = cls.empty() ? vocab.find("<mask>").has_value() && vocab.find("<s>").has_value()
                                   : cls.rfind("Roberta", 0) == 0;
  const bool prefix_space = config_bool(config, "add_prefix_space", false);
  Parts p;
  p.pre_tokenizer =
      from_json(make_pre_tokenizer, {{"type", "ByteLevel"}, {"add_prefix_space", prefix_space}, {"use_regex", true}});
  p.decoder = from_json(make_decoder, {{"type", "ByteLevel"}});
  if (roberta) {
    const std::vector<std::pair<const char*, std::string>> roles = {
        {"bos_token", "<s>"}, {"eos_token", "</s>"}, {"sep_token", "</s>"}, {"cls_token", "<s>"},
        {"unk_token", "<unk>"}, {"pad_token", "<pad>"}, {"mask_token", "<mask>"}};
    p.added_tokens = special_tokens(config, vocab, roles, "mask_token");
    default_roles(p, config, roles);
    const std::string c = special(config, "cls_token", "<s>"), s = special(config, "sep_token", "</s>");
    const auto cid = vocab.find(c), sid = vocab.find(s);
    if (!cid || !sid) throw Error(vocab_file + ": \"" + printable(cid ? s : c, 40) + "\" is not in the vocabulary");
    p.post_processor = from_json(make_post_processor, {{"type", "RobertaProcessing"}, {"cls", {c, *cid}}, {"sep", {s, *sid}}});
  } else {
    const std::vector<std::pair<const char*, std::string>> roles = {
        {"unk_token", "<|endoftext|>"}, {"bos_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}};
    p.added_tokens = special_tokens(config, vocab, roles, "");
    default_roles(p, config, roles);
    if (config_bool(config, "add_bos_token", false)) {
      const std::string bos = special(config, "bos_token", "<|endoftext|>");
      const auto id = vocab.find(bos);
      if (!id) throw Error(vocab_file + ": \"" + printable(bos, 40) + "\" is not in the vocabulary");
      p.post_processor = from_json(
          make_post_processor,
          {{"type", "TemplateProcessing"},
           {"single", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
           {"pair", {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                     {{"Sequence", {{"id", "B"}, {"type_id", 0}}}}}},
           {"special_tokens", {{bos, {{"id", bos}, {"ids", {*id}}, {"tokens", {bos}}}}}}});
    }
  }
  p.model = make_bpe(std::move(vocab), merges, vocab_file);
  return p;
}

}  // namespace

Parts build_from_vocab_files(const std::string& dir, const nlohmann::json& config_in) {
  const nlohmann::json config = config_in.is_object() ? config_in : nlohmann::json::object();
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir + "/vocab.txt", ec)) return bert(dir, config);
  if (fs::exists(dir + "/vocab.json", ec) && fs::exists(dir + "/merges.txt", ec)) return byte_level_bpe(dir, config);
  throw Error(dir + ": no tokenizer: expected tokenizer.json, vocab.txt (WordPiece) or vocab.json + merges.txt "
                    "(byte-level BPE), see docs/tokenizer.md");
}

}  // namespace vkf::text::hf
