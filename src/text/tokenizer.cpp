// Tokenizer::load: the project's own tokenizer.json kinds by "type", else a Hugging
// Face tokenizer (src/text/hf); and the defaults of the newer virtuals.
#include "io/read_file.hpp"
#include "vkformer/tokenizer.hpp"

#include <nlohmann/json.hpp>
#include <unicode/unistr.h>
#include <unicode/locid.h>
#include <unicode/ustring.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "model/gguf_model.hpp"
#include "model/json_text.hpp"
#include "text/char_tokenizer.hpp"
#include "text/hf/hf_tokenizer.hpp"
#include "text/marian_tokenizer.hpp"
#include "text/sentencepiece.hpp"
#include "text/utf8.hpp"
#include "vkformer/error.hpp"

namespace vkf {

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& dir) {
  if (is_gguf_file(dir)) return text::load_gguf_tokenizer(gguf_vocab(GgufFile(dir)));  // tokenizer.ggml.*
  const std::string file = dir + "/tokenizer.json";
  const bool present = io::exists(file);
  if (!present && text::is_marian_dir(dir)) return text::load_marian(dir);  // OPUS-MT: source.spm + vocab.json
  if (!present) {
    std::error_code ec;
    if (std::filesystem::exists(dir + "/vocab.txt", ec) || std::filesystem::exists(dir + "/vocab.json", ec))
      return text::hf::load_hf_dir(dir, nullptr);
    throw Error(file + ": cannot open (the model directory needs a tokenizer.json, or vocab.txt, or vocab.json + "
                "merges.txt, see docs/tokenizer.md)");
  }
  const nlohmann::json j = text::hf::parse_json(file, io::read_file(file, "the tokenizer"));
  if (!j.is_object()) throw Error(file + ": must be a JSON object, got " + std::string(j.type_name()));
  if (text::hf::is_hf_tokenizer_json(j)) return text::hf::load_hf_dir(dir, &j);
  static const char* kKnown = "\"char\", \"sentencepiece_unigram\"; or HF's format with a \"model\" object";
  if (!j.contains("type")) throw Error(file + ": missing field \"type\" (known types: " + kKnown + ")");
  if (!j["type"].is_string())
    throw Error(file + ": field \"type\" must be a string (known types: " + kKnown + "), got " + brief_json(j["type"]));
  const std::string& type = j["type"].get_ref<const std::string&>();
  if (type == "char") return text::make_char_tokenizer(j, file);
  if (type == "sentencepiece_unigram") return text::load_sentencepiece_unigram(j, file);
  throw Error(file + ": field \"type\" is unknown: " + brief_json(j["type"]) + " (known types: " + kKnown + ")");
}

Encoding Tokenizer::encode_with(std::string_view text, const EncodeOptions& o) const {
  Encoding e;
  e.ids = encode(text);
  if (o.max_length > 0 && e.ids.size() > o.max_length) {
    e.ids.resize(o.max_length);
    e.truncated = true;
  }
  e.type_ids.assign(e.ids.size(), 0);
  for (int32_t id : e.ids) e.tokens.push_back(id_to_token(id));
  return e;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool) const { return decode(ids); }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view) const { return std::nullopt; }

std::string Tokenizer::id_to_token(int32_t id) const { return decode(std::vector<int32_t>{id}); }

uint32_t Tokenizer::model_max_length() const { return 0; }

std::optional<std::string> Tokenizer::special_token(std::string_view) const { return std::nullopt; }

std::string unicode_lower(std::string_view utf8) {
  text::decode_utf8(utf8, "unicode_lower");
  if (utf8.size() > size_t(INT32_MAX) / 4) throw Error("unicode_lower: longer than 512 MiB");
  const icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), int32_t(utf8.size())));
  icu::UnicodeString lower = u;
  lower.toLower(icu::Locale::getRoot());
  std::string out;
  lower.toUTF8String(out);
  return out;
}

}  // namespace vkf
