// Text <-> token ids, as a model directory's tokenizer.json describes (docs/tokenizer.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

/// A tokenizer loaded from DIR/tokenizer.json. Its "type" field picks the kind:
/// "char" (one id per character, the dates model) or "sentencepiece_unigram"
/// (Universal Sentence Encoder lite).
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Ids of `text` (UTF-8), without BOS or EOS.
  /// @throws vkf::Error if `text` is not valid UTF-8, naming the byte offset.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;

  /// Text of `ids`; the special ids (padding, BOS, EOS) are left out.
  /// @throws vkf::Error for an id outside the vocabulary.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;

  /// Number of ids.
  virtual uint32_t vocab_size() const = 0;

  /// Loads DIR/tokenizer.json.
  /// @throws vkf::Error naming the file and the field that is missing or wrong.
  static std::unique_ptr<Tokenizer> load(const std::string& dir);
};

}  // namespace vkf
