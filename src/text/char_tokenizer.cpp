#include "text/char_tokenizer.hpp"

#include <unordered_map>
#include <vector>

#include "model/json_text.hpp"
#include "text/utf8.hpp"
#include "vkformer/error.hpp"

namespace vkf::text {
namespace {

constexpr uint32_t kReplacement = 0xFFFD;  // what an unknown character decodes to

class CharTokenizer final : public Tokenizer {
 public:
  CharTokenizer(const nlohmann::json& j, const std::string& file) {
    auto field = [&](const char* name) -> const nlohmann::json& {
      if (!j.contains(name)) throw Error(file + ": missing field \"" + name + "\"");
      return j[name];
    };
    const auto& vocab = field("vocab");
    if (!vocab.is_array() || vocab.empty())
      throw Error(file + ": field \"vocab\" must be a non-empty array of strings (one per id)");
    if (vocab.size() > size_t(INT32_MAX)) throw Error(file + ": field \"vocab\" has too many entries");
    const int32_t n = int32_t(vocab.size());
    auto special = [&](const char* name) {
      const auto& v = field(name);
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n)
        throw Error(file + ": field \"" + name + "\" must be an integer id in [0, " + std::to_string(n) +
                    "), got " + brief_json(v));
      return int32_t(v.get<int64_t>());
    };
    pad_ = special("pad_id");
    bos_ = special("bos_id");
    eos_ = special("eos_id");
    unk_ = special("unk_id");
    if (pad_ == bos_ || pad_ == eos_ || pad_ == unk_ || bos_ == eos_ || bos_ == unk_ || eos_ == unk_)
      throw Error(file + ": fields \"pad_id\", \"bos_id\", \"eos_id\", \"unk_id\" must be four different ids");
    chars_.assign(size_t(n), 0);
    names_.assign(size_t(n), std::string());
    for (int32_t id = 0; id < n; ++id) {
      const auto& e = vocab[size_t(id)];
      const std::string where = file + ": \"vocab\"[" + std::to_string(id) + "]";
      if (!e.is_string()) throw Error(where + " must be a string, got " + brief_json(e));
      if (is_special(id)) {  // its text is only a name, e.g. "<pad>"
        names_[size_t(id)] = e.get<std::string>();
        continue;
      }
      const auto cps = decode_utf8(e.get_ref<const std::string&>(), where);
      if (cps.size() != 1)
        throw Error(where + " must be exactly one character, got " + brief_json(e));
      if (!ids_.emplace(cps[0], id).second)
        throw Error(where + " " + brief_json(e) + " is already id " + std::to_string(ids_[cps[0]]));
      chars_[size_t(id)] = cps[0];
    }
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> out;
    for (uint32_t cp : decode_utf8(text, "")) {
      auto it = ids_.find(cp);
      out.push_back(it == ids_.end() ? unk_ : it->second);
    }
    return out;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
      const int32_t id = ids[i];
      if (id < 0 || size_t(id) >= chars_.size())
        throw Error("id " + std::to_string(id) + " at position " + std::to_string(i) +
                    " is outside the vocabulary of " + std::to_string(chars_.size()));
      if (id == pad_ || id == bos_ || id == eos_) continue;
      append_utf8(out, id == unk_ ? kReplacement : chars_[size_t(id)]);
    }
    return out;
  }

  uint32_t vocab_size() const override { return uint32_t(chars_.size()); }

  std::optional<std::string> special_token(std::string_view role) const override {
    for (const auto& [name, id] : {std::pair{"pad_token", pad_}, {"bos_token", bos_}, {"eos_token", eos_},
                                   {"unk_token", unk_}})
      if (role == name) return names_[size_t(id)];
    return std::nullopt;
  }
  std::optional<int32_t> token_to_id(std::string_view token) const override {
    for (int32_t id : {pad_, bos_, eos_, unk_})
      if (token == names_[size_t(id)]) return id;
    const auto cps = decode_utf8(token, "token_to_id");
    if (cps.size() != 1) return std::nullopt;
    auto it = ids_.find(cps[0]);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }

 private:
  bool is_special(int32_t id) const { return id == pad_ || id == bos_ || id == eos_ || id == unk_; }

  int32_t pad_ = 0, bos_ = 0, eos_ = 0, unk_ = 0;
  std::vector<uint32_t> chars_;                 // id -> code point (0 for the special ids)
  std::vector<std::string> names_;              // id -> the special ids' names ("<pad>"), else ""
  std::unordered_map<uint32_t, int32_t> ids_;   // code point -> id
};

}  // namespace

std::unique_ptr<Tokenizer> make_char_tokenizer(const nlohmann::json& j, const std::string& file) {
  return std::make_unique<CharTokenizer>(j, file);
}

}  // namespace vkf::text
