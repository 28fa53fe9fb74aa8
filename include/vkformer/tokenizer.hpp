// Text <-> token ids, as a model directory's tokenizer files describe (docs/tokenizer.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vkf {

/// How Tokenizer::encode_with encodes.
struct EncodeOptions {
  /// Add the special tokens of the tokenizer's post-processor ([CLS] ... [SEP], <s> ... </s>).
  bool add_special_tokens = true;
  /// At most this many ids in all, special tokens included (the end of the text is cut,
  /// as HF's truncation=True); 0: no truncation.
  uint32_t max_length = 0;
};

/// The result of Tokenizer::encode_with.
struct Encoding {
  std::vector<int32_t> ids;          ///< token ids
  std::vector<int32_t> type_ids;     ///< segment (token type) id of each token: 0 for one sequence
  std::vector<std::string> tokens;   ///< the text of each token, as the vocabulary spells it
  bool truncated = false;            ///< true when max_length cut the text
};

/// A tokenizer loaded from a model directory: the project's own tokenizer.json kinds
/// ("char": one id per character, the dates model; "sentencepiece_unigram": Universal
/// Sentence Encoder lite), or a Hugging Face tokenizer (tokenizer.json in HF's format,
/// or vocab.txt, or vocab.json + merges.txt; docs/tokenizer.md lists what is supported).
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Ids of `text` (UTF-8). The project's own kinds add no BOS or EOS; a Hugging Face
  /// tokenizer returns what HF's `tokenizer.encode(text)` does (special tokens included).
  /// @throws vkf::Error if `text` is not valid UTF-8, naming the byte offset.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;

  /// Ids, type ids and tokens of `text` under options `o`. The default (the project's
  /// own kinds) is encode(), cut to max_length.
  /// @throws vkf::Error for invalid UTF-8, or a max_length smaller than the special tokens.
  virtual Encoding encode_with(std::string_view text, const EncodeOptions& o) const;

  /// Text of `ids`; the special ids (padding, BOS, EOS, [CLS]...) are left out.
  /// @throws vkf::Error for an id outside the vocabulary.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;

  /// Text of `ids`, the special tokens left out when `skip_special_tokens` (HF's decode).
  /// The default (the project's own kinds, which always leave them out) is decode(ids).
  /// @throws vkf::Error for an id outside the vocabulary.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const;

  /// The id of vocabulary entry `token` (added tokens included), or nullopt.
  virtual std::optional<int32_t> token_to_id(std::string_view token) const;

  /// The vocabulary entry of `id`.
  /// @throws vkf::Error for an id outside the vocabulary.
  virtual std::string id_to_token(int32_t id) const;

  /// Number of ids: one more than the largest id (added tokens included).
  virtual uint32_t vocab_size() const = 0;

  /// tokenizer_config.json's model_max_length; 0 when unknown.
  virtual uint32_t model_max_length() const;

  /// The token playing `role` ("cls_token", "sep_token", "pad_token", "mask_token",
  /// "unk_token", "bos_token", "eos_token"), as tokenizer_config.json or the defaults of
  /// the vocabulary-file formats name it; nullopt when there is none.
  virtual std::optional<std::string> special_token(std::string_view role) const;

  /// Loads the tokenizer of model directory `dir`: DIR/tokenizer.json (the project's
  /// kinds by "type", or HF's format), else DIR/vocab.txt or DIR/vocab.json + merges.txt,
  /// with DIR/tokenizer_config.json when present.
  /// @throws vkf::Error naming the file and the field that is missing or wrong.
  static std::unique_ptr<Tokenizer> load(const std::string& dir);
};

/// Python's str.lower() of UTF-8 `utf8`: full Unicode lowercase mappings, final sigma
/// included (ICU). sentence-transformers lowercases this way with do_lower_case.
/// @throws vkf::Error if `utf8` is not valid UTF-8, naming the byte offset.
std::string unicode_lower(std::string_view utf8);

}  // namespace vkf
