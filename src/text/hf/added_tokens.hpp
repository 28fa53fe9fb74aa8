// Added tokens (tokenizer/added_vocabulary.rs): tokens found in the text before the
// model runs. Those with "normalized": false are matched in the raw text, the
// others in the normalized text; leftmost-longest, with single_word, lstrip and
// rstrip as `tokenizers` applies them.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "text/hf/pipeline.hpp"

namespace vkf::text::hf {

struct AddedToken {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

class AddedVocabulary {
 public:
  /// HF's add_tokens: each new token takes its id in this vocabulary or the model's,
  /// else the next free id after the model's vocabulary.
  void add(const std::vector<AddedToken>& tokens, const Model& model, const Normalizer* normalizer);
  /// The text split around added tokens, the rest normalized.
  Pieces extract_and_normalize(const std::string& text, const Normalizer* normalizer) const;

  std::optional<int32_t> token_to_id(const std::string& token, const Model& model) const;
  std::optional<std::string> id_to_token(int32_t id, const Model& model) const;
  bool is_special(const std::string& token) const { return special_set_.count(token) > 0; }
  /// The largest id of an added token, or -1.
  int32_t max_id() const;

 private:
  /// A byte trie of patterns: leftmost-longest matching as aho-corasick's.
  struct Matcher {
    std::unordered_map<uint64_t, int32_t> edges;
    std::vector<int32_t> pattern{-1};  ///< node -> index into ids, or -1
    std::vector<int32_t> ids;
    void add(const std::string& pattern, int32_t id);
    /// Longest pattern starting at `at`: its length and id, or length 0.
    std::pair<size_t, int32_t> longest_at(const std::string& s, size_t at) const;
  };
  void split(const Piece& piece, const Matcher& m, Pieces& out) const;

  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<int32_t, AddedToken> tokens_;
  std::vector<AddedToken> added_, special_;
  std::unordered_set<std::string> special_set_;
  Matcher raw_, normalized_;
};

}  // namespace vkf::text::hf
