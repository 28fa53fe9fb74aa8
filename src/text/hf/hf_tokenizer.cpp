// HfTokenizer: encode (added tokens, normalizer, pre-tokenizer, model, truncation,
// post-processor) and decode, as `tokenizers` 0.19's TokenizerImpl.
#include "text/hf/hf_tokenizer.hpp"

#include "text/utf8.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {
namespace {

class HfTokenizer final : public Tokenizer {
 public:
  explicit HfTokenizer(Parts p) : p_(std::move(p)) {
    added_.add(p_.added_tokens, *p_.model, p_.normalizer.get());
    if (p_.post_processor) {
      // Counted on an empty sequence: processors in a Sequence may add more than each alone.
      std::vector<Encoded> probe(1);
      p_.post_processor->process(probe, true);
      for (const Encoded& e : probe) specials_ += e.ids.size();
    }
  }

  std::vector<int32_t> encode(std::string_view text) const override { return encode_with(text, {}).ids; }

  Encoding encode_with(std::string_view text, const EncodeOptions& o) const override {
    decode_utf8(text, "tokenizer input");  // refuses invalid UTF-8, naming the byte offset
    Pieces pieces = added_.extract_and_normalize(std::string(text), p_.normalizer.get());
    if (p_.pre_tokenizer) p_.pre_tokenizer->pre_tokenize(pieces);
    Encoded e;
    std::vector<Token> tokens;
    WordCache cache;
    for (const Piece& piece : pieces) {
      if (piece.added_id >= 0) tokens.push_back({piece.added_id, piece.text});
      else p_.model->tokenize(piece.text, tokens, cache);
    }
    for (Token& t : tokens) {
      e.ids.push_back(t.id);
      e.tokens.push_back(std::move(t.value));
    }
    e.type_ids.assign(e.ids.size(), 0);

    Encoding out;
    if (o.max_length > 0) {
      const size_t specials = o.add_special_tokens ? specials_ : 0;
      if (specials > o.max_length)
        throw Error("max_length " + std::to_string(o.max_length) + " is less than the " + std::to_string(specials) +
                    " special tokens this tokenizer adds");
      const size_t keep = o.max_length - specials;
      if (e.ids.size() > keep) {
        e.ids.resize(keep);
        e.type_ids.resize(keep);
        e.tokens.resize(keep);
        out.truncated = true;
      }
    }
    std::vector<Encoded> parts{std::move(e)};
    if (p_.post_processor) p_.post_processor->process(parts, o.add_special_tokens);
    Encoded all;
    for (const Encoded& part : parts) all.append(part);
    out.ids = std::move(all.ids);
    out.type_ids = std::move(all.type_ids);
    out.tokens = std::move(all.tokens);
    return out;
  }

  std::string decode(const std::vector<int32_t>& ids) const override { return decode(ids, true); }

  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const override {
    std::vector<std::string> tokens;
    for (size_t i = 0; i < ids.size(); ++i) {
      auto t = added_.id_to_token(ids[i], *p_.model);
      if (!t)
        throw Error("decode: id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                    " is not in the vocabulary");
      if (skip_special_tokens && added_.is_special(*t)) continue;
      tokens.push_back(std::move(*t));
    }
    if (!p_.decoder) {
      std::string out;
      for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
      return out;
    }
    p_.decoder->decode_chain(tokens);
    std::string out;
    for (const std::string& t : tokens) out += t;
    return out;
  }

  uint32_t vocab_size() const override {
    return uint32_t(std::max<int64_t>(int64_t(p_.model->id_bound()), int64_t(added_.max_id()) + 1));
  }
  std::optional<int32_t> token_to_id(std::string_view token) const override {
    return added_.token_to_id(std::string(token), *p_.model);
  }
  std::string id_to_token(int32_t id) const override {
    auto t = added_.id_to_token(id, *p_.model);
    if (!t) throw Error("id_to_token: id " + std::to_string(id) + " is not in the vocabulary");
    return *t;
  }
  uint32_t model_max_length() const override { return p_.model_max_length; }
  std::optional<std::string> special_token(std::string_view role) const override {
    auto it = p_.special_tokens.find(std::string(role));
    if (it == p_.special_tokens.end()) return std::nullopt;
    return it->second;
  }

 private:
  Parts p_;
  AddedVocabulary added_;
  size_t specials_ = 0;  ///< ids the post-processor adds to one sequence
};

}  // namespace

std::unique_ptr<Tokenizer> make_tokenizer(Parts parts) { return std::make_unique<HfTokenizer>(std::move(parts)); }

}  // namespace vkf::text::hf
