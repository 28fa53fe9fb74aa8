// The WordPiece model (models/wordpiece/mod.rs): greedy longest match from the
// left, "##" before every piece but the first; a word with a part no piece
// covers, or longer than max_input_chars_per_word, is one unk token.
#include "model/json_text.hpp"
#include "text/hf/models.hpp"
#include "text/hf/unicode.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {
namespace {

class WordPiece final : public Model {
 public:
  WordPiece(Vocab vocab, std::string unk, std::string prefix, size_t max_chars, std::string where)
      : vocab_(std::move(vocab)),
        unk_(std::move(unk)),
        prefix_(std::move(prefix)),
        max_chars_(max_chars),
        where_(std::move(where)) {}

  void tokenize(const std::string& word, std::vector<Token>& out, WordCache&) const override {
    size_t chars = 0;
    for (char c : word) chars += (uint8_t(c) & 0xC0) != 0x80;
    if (chars > max_chars_) return push_unk(out);
    const size_t first = out.size();
    std::string sub;
    for (size_t start = 0; start < word.size();) {
      size_t end = word.size();
      bool found = false;
      while (start < end) {
        sub.assign(start > 0 ? prefix_ : std::string());
        sub.append(word, start, end - start);
        if (const auto id = vocab_.find(sub)) {
          out.push_back({*id, sub});
          found = true;
          break;
        }
        do --end;  // back one character
        while (end > start && (uint8_t(word[end]) & 0xC0) == 0x80);
      }
      if (!found) {
        out.resize(first);
        return push_unk(out);
      }
      start = end;
    }
  }
  std::optional<int32_t> token_to_id(const std::string& t) const override { return vocab_.find(t); }
  std::optional<std::string> id_to_token(int32_t id) const override { return vocab_.token(id); }
  size_t vocab_size() const override { return vocab_.size(); }
  size_t id_bound() const override { return vocab_.id_bound(); }

 private:
  void push_unk(std::vector<Token>& out) const {
    const auto id = vocab_.find(unk_);
    if (!id) throw Error(where_ + ": unk_token \"" + printable(unk_, 40) + "\" is not in the vocabulary");
    out.push_back({*id, unk_});
  }

  Vocab vocab_;
  std::string unk_, prefix_;
  size_t max_chars_;
  std::string where_;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece(const JsonNode& j) {
  return std::make_unique<WordPiece>(Vocab(j.at("vocab")), j.has("unk_token") ? j.str("unk_token") : "[UNK]",
                                     j.has("continuing_subword_prefix") ? j.str("continuing_subword_prefix") : "##",
                                     size_t(j.integer("max_input_chars_per_word", 0, INT32_MAX, 100)),
                                     j.file() + ": " + j.path());
}

std::unique_ptr<Model> make_wordpiece(Vocab vocab, const std::string& unk_token, const std::string& where) {
  return std::make_unique<WordPiece>(std::move(vocab), unk_token, "##", 100, where);
}

}  // namespace vkf::text::hf
