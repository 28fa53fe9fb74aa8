// MarianTokenizer as transformers 4.44 runs it (tokenization_marian.py, the slow
// tokenizer PreTrainedTokenizer drives):
//  encode: the text is split on the special tokens' literal text (</s>, <unk>,
//    <pad>); a leading language code ">>xx<<" (Python's re ">>.+<<") becomes a
//    token and every match is cut from the text; each piece of text goes through
//    source.spm's EncodeAsPieces, each piece to its vocab.json id (<unk>'s when
//    missing); </s> is appended.
//  decode: ids to pieces through the target vocabulary (vocab.json, or
//    target_vocab.json with separate_vocabs), special ids skipped, the pieces
//    through target.spm's DecodePieces, "▁" to spaces, stripped, and HF's
//    clean_up_tokenization when tokenizer_config.json says so (HF's default: yes).
// Moses punctuation normalization is not applied: transformers applies it only
// in prepare_seq2seq_batch, and only with sacremoses installed.
#include "io/read_file.hpp"
#include "text/marian_tokenizer.hpp"

#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <unordered_map>

#include "model/json_parse.hpp"
#include "model/json_text.hpp"
#include "vkformer/error.hpp"

namespace vkf::text {
namespace {

using json = nlohmann::json;

std::string read_file(const std::string& path) {
  if (!io::exists(path))
    throw Error(path + ": cannot open (a Marian tokenizer needs source.spm, target.spm and vocab.json)");
  return io::read_file(path, "a Marian tokenizer file");
}

json read_json(const std::string& path) {
  try {
    return parse_json_bounded(read_file(path));
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + json_error_text(e));
  }
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::string& path) {
  const std::string bytes = read_file(path);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp->LoadFromSerializedProto(bytes);
  if (!status.ok()) throw Error(path + ": not a SentencePiece model (" + status.ToString() + ")");
  return sp;
}

/// token -> id of a vocab.json; `path` names it in errors.
std::unordered_map<std::string, int32_t> read_vocab(const std::string& path) {
  const json j = read_json(path);
  if (!j.is_object()) throw Error(path + ": must be an object of token: id");
  std::unordered_map<std::string, int32_t> v;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
      throw Error(path + ": the id of \"" + printable(it.key(), 40) + "\" must be an integer >= 0, got " +
                  brief_json(*it));
    v[it.key()] = it->get<int32_t>();
  }
  return v;
}

class MarianTokenizer final : public Tokenizer {
 public:
  explicit MarianTokenizer(const std::string& dir) {
    const std::string cfg_path = dir + "/tokenizer_config.json";
    json cfg = json::object();
    std::error_code ec;
    if (std::filesystem::exists(cfg_path, ec)) cfg = read_json(cfg_path);
    auto str = [&](const char* key, const char* def) {
      auto it = cfg.find(key);
      if (it == cfg.end() || it->is_null()) return std::string(def);
      if (it->is_string()) return it->get<std::string>();
      if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        return (*it)["content"].get<std::string>();
      throw Error(cfg_path + ": \"" + key + "\" must be a string, got " + brief_json(*it));
    };
    auto flag = [&](const char* key, bool def) {
      auto it = cfg.find(key);
      if (it == cfg.end() || it->is_null()) return def;
      if (!it->is_boolean()) throw Error(cfg_path + ": \"" + key + "\" must be true or false");
      return it->get<bool>();
    };
    source_ = load_spm(dir + "/source.spm");
    target_ = load_spm(dir + "/target.spm");
    encoder_ = read_vocab(dir + "/vocab.json");
    const auto target_vocab = flag("separate_vocabs", false) ? read_vocab(dir + "/target_vocab.json") : encoder_;
    for (const auto& [tok, id] : target_vocab) decoder_[id] = tok;
    cleanup_ = flag("clean_up_tokenization_spaces", true);
    if (auto it = cfg.find("model_max_length"); it != cfg.end() && it->is_number_integer() &&
                                                 it->get<int64_t>() > 0 && it->get<int64_t>() <= INT32_MAX)
      max_length_ = uint32_t(it->get<int64_t>());
    for (const char* role : {"eos_token", "unk_token", "pad_token"}) {
      const std::string tok = str(role, role[0] == 'e' ? "</s>" : role[0] == 'u' ? "<unk>" : "<pad>");
      auto it = encoder_.find(tok);
      if (it == encoder_.end())
        throw Error(dir + "/vocab.json: has no " + role + " \"" + printable(tok, 40) + "\"");
      specials_[role] = tok;
      special_ids_.push_back(it->second);
      special_texts_.push_back(tok);
    }
    eos_ = encoder_.at(specials_["eos_token"]);
    unk_ = encoder_.at(specials_["unk_token"]);
    for (const auto& [tok, id] : encoder_) size_ = std::max<uint32_t>(size_, uint32_t(id) + 1);
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    // The text between special tokens' literal text goes to SentencePiece piece by piece.
    size_t start = 0;
    while (start <= text.size()) {
      size_t best = std::string_view::npos, which = 0;
      for (size_t s = 0; s < special_texts_.size(); ++s) {
        const size_t at = text.find(special_texts_[s], start);
        if (at < best) best = at, which = s;
      }
      encode_text(text.substr(start, best == std::string_view::npos ? std::string_view::npos : best - start), ids);
      if (best == std::string_view::npos) break;
      ids.push_back(special_ids_[which]);
      start = best + special_texts_[which].size();
    }
    ids.push_back(eos_);
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids) const override { return decode(ids, true); }

  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override {
    std::vector<std::string> pieces;
    std::string out;
    for (int32_t id : ids) {
      const bool special = std::find(special_ids_.begin(), special_ids_.end(), id) != special_ids_.end();
      if (special && skip_special) continue;
      const std::string tok = id_to_token(id);
      if (special) {
        out += decode_pieces(pieces) + tok + " ";
        pieces.clear();
      } else {
        pieces.push_back(tok);
      }
    }
    out += decode_pieces(pieces);
    out = replace_all(out, "\xE2\x96\x81", " ");
    const size_t b = out.find_first_not_of(" \t\n\r\f\v"), e = out.find_last_not_of(" \t\n\r\f\v");
    out = b == std::string::npos ? "" : out.substr(b, e - b + 1);
    if (cleanup_)  // PreTrainedTokenizerBase.clean_up_tokenization
      for (const auto& [from, to] : {std::pair<const char*, const char*>{" .", "."}, {" ?", "?"}, {" !", "!"},
                                    {" ,", ","}, {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"},
                                    {" 've", "'ve"}, {" 're", "'re"}})
        out = replace_all(out, from, to);
    return out;
  }

  std::optional<int32_t> token_to_id(std::string_view token) const override {
    auto it = encoder_.find(std::string(token));
    if (it == encoder_.end()) return std::nullopt;
    return it->second;
  }
  std::string id_to_token(int32_t id) const override {
    if (id < 0 || uint32_t(id) >= size_)
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(size_) + ")");
    auto it = decoder_.find(id);
    return it == decoder_.end() ? specials_.at("unk_token") : it->second;
  }
  uint32_t vocab_size() const override { return size_; }
  uint32_t model_max_length() const override { return max_length_; }
  std::optional<std::string> special_token(std::string_view role) const override {
    auto it = specials_.find(std::string(role));
    if (it == specials_.end()) return std::nullopt;
    return it->second;
  }

 private:
  static std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
    return s;
  }

  std::string decode_pieces(const std::vector<std::string>& pieces) const {
    std::string text;
    const auto status = target_->Decode(pieces, &text);
    if (!status.ok()) throw Error("target.spm: cannot decode (" + status.ToString() + ")");
    return text;
  }

  /// Python's re.sub(">>.+<<", "", text): ">>", at least one character other than a
  /// newline, then the last "<<" of that line.
  static size_t code_end(std::string_view t, size_t at) {
    if (t.compare(at, 2, ">>") != 0) return std::string_view::npos;
    const size_t line = std::min(t.find('\n', at + 2), t.size());
    if (line < at + 5) return std::string_view::npos;
    const size_t last = t.rfind("<<", line - 2);
    return last != std::string_view::npos && last >= at + 3 ? last + 2 : std::string_view::npos;
  }

  void encode_text(std::string_view text, std::vector<int32_t>& ids) const {
    std::string rest;
    if (const size_t end = code_end(text, 0); end != std::string_view::npos) ids.push_back(id_of(text.substr(0, end)));
    for (size_t i = 0; i < text.size();) {
      if (const size_t end = code_end(text, i); end != std::string_view::npos) {
        i = end;
      } else {
        rest += text[i++];
      }
    }
    std::vector<std::string> pieces;
    const auto status = source_->Encode(rest, &pieces);
    if (!status.ok()) throw Error("source.spm: cannot encode (" + status.ToString() + ")");
    for (const std::string& p : pieces) ids.push_back(id_of(p));
  }

  int32_t id_of(std::string_view piece) const {
    auto it = encoder_.find(std::string(piece));
    return it == encoder_.end() ? unk_ : it->second;
  }

  std::unique_ptr<sentencepiece::SentencePieceProcessor> source_, target_;
  std::unordered_map<std::string, int32_t> encoder_;
  std::unordered_map<int32_t, std::string> decoder_;
  std::map<std::string, std::string> specials_;
  std::vector<int32_t> special_ids_;
  std::vector<std::string> special_texts_;
  int32_t eos_ = 0, unk_ = 0;
  uint32_t size_ = 0, max_length_ = 0;
  bool cleanup_ = true;
};

}  // namespace

bool is_marian_dir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir + "/source.spm", ec)) return true;
  const auto text = io::read_file_if_present(dir + "/tokenizer_config.json", "the tokenizer config");
  if (!text) return false;
  json j;
  try {
    j = parse_json_bounded(*text);
  } catch (const json::exception&) {
    return false;  // not a Marian directory that this check can tell; the tokenizer loader says what is wrong
  }
  return j.is_object() && j.value("tokenizer_class", json()).is_string() &&
         j["tokenizer_class"].get<std::string>() == "MarianTokenizer";
}

std::unique_ptr<Tokenizer> load_marian(const std::string& dir) { return std::make_unique<MarianTokenizer>(dir); }

}  // namespace vkf::text
