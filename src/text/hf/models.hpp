// What the three models share: a vocabulary of token -> id.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/hf/pipeline.hpp"

namespace vkf::text::hf {

/// A token <-> id table read from {"token": id, ...}.
class Vocab {
 public:
  Vocab() = default;
  /// From the JSON object `j` (ids in [0, 2^31)).
  explicit Vocab(const JsonNode& j);
  void add(const std::string& token, int32_t id);
  std::optional<int32_t> find(const std::string& token) const {
    auto it = ids_.find(token);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> token(int32_t id) const {
    auto it = tokens_.find(id);
    if (it == tokens_.end()) return std::nullopt;
    return it->second;
  }
  size_t size() const { return ids_.size(); }
  /// One more than the largest id (ids need not be dense: {"a": 0, "b": 1000000}).
  size_t id_bound() const { return bound_; }

 private:
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<int32_t, std::string> tokens_;
  size_t bound_ = 0;
};

std::unique_ptr<Model> make_wordpiece(const JsonNode& j);
std::unique_ptr<Model> make_bpe(const JsonNode& j);
std::unique_ptr<Model> make_unigram(const JsonNode& j);

/// A BPE model from parts (vocab.json + merges.txt directories).
std::unique_ptr<Model> make_bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                const std::string& where);
/// The options of a BPE model (tokenizer.json's "model" fields).
struct BpeOptions {
  std::optional<std::string> unk, prefix, suffix;
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
};
/// One merge with its own rank: the lowest rank is applied first, and among equal ranks
/// the leftmost pair (SentencePiece's BPE, and llama.cpp's SPM tokenizer, merge the
/// best-scoring pair, leftmost first: equal scores are equal ranks).
struct RankedMerge {
  std::string left, right;
  uint32_t rank;
};
/// A BPE model whose merges carry their ranks (ties allowed); `where` prefixes errors.
std::unique_ptr<Model> make_bpe(Vocab vocab, const std::vector<RankedMerge>& merges, const BpeOptions& o,
                                const std::string& where);
/// A WordPiece model from parts (vocab.txt directories).
std::unique_ptr<Model> make_wordpiece(Vocab vocab, const std::string& unk_token, const std::string& where);

}  // namespace vkf::text::hf
