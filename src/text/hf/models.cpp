#include "text/hf/models.hpp"

#include <algorithm>

#include "model/json_text.hpp"
#include "text/hf/unicode.hpp"

namespace vkf::text::hf {

Vocab::Vocab(const JsonNode& j) {
  if (!j.json().is_object()) j.expected("an object {token: id}");
  for (auto it = j.json().begin(); it != j.json().end(); ++it) {
    const JsonNode v(it.value(), j.file(), j.path() + "[\"" + printable(it.key(), 40) + "\"]");
    if (!valid_utf8(it.key())) v.fail("is not valid UTF-8");
    add(it.key(), int32_t(v.as_int(0, INT32_MAX - 1)));
  }
}

void Vocab::add(const std::string& token, int32_t id) {
  ids_[token] = id;
  tokens_[id] = token;
  bound_ = std::max(bound_, size_t(id) + 1);
}

std::unique_ptr<Model> make_model(const JsonNode& j) {
  if (!j.json().is_object()) j.expected("an object");
  std::string t;
  if (j.has("type")) t = j.type();
  else t = j.has("merges") ? "BPE" : j.has("unk_id") || (j.has("vocab") && j.at("vocab").json().is_array()) ? "Unigram" : "WordPiece";
  if (t == "WordPiece") return make_wordpiece(j);
  if (t == "BPE") return make_bpe(j);
  if (t == "Unigram") return make_unigram(j);
  j.unsupported_type("WordPiece, BPE, Unigram");
}

}  // namespace vkf::text::hf
