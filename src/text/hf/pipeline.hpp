// The stages of a Hugging Face tokenizer (`tokenizers` 0.19): normalizer,
// pre-tokenizer, model, post-processor, decoder. Each is built from its
// tokenizer.json object by a make_* factory; ids and tokens are all vkformer
// keeps (no offsets).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/hf/json_node.hpp"

namespace vkf::text::hf {

/// A piece of the text on its way through the pipeline. Pieces that are added
/// tokens (`added_id` >= 0) are not normalized, split or tokenized further.
struct Piece {
  std::string text;       ///< UTF-8
  bool at_start = false;  ///< starts at offset 0 of the input (Metaspace's prepend_scheme "first")
  int32_t added_id = -1;  ///< the id when this piece is an added token
};
using Pieces = std::vector<Piece>;

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  /// Normalizes UTF-8 `s` in place.
  virtual void normalize(std::string& s) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Splits every piece that is not an added token; empty pieces are dropped.
  virtual void pre_tokenize(Pieces& pieces) const = 0;
};

/// A token of the model: id and text.
struct Token {
  int32_t id;
  std::string value;
};

/// Words already tokenized during one encode call (text -> tokens).
using WordCache = std::unordered_map<std::string, std::vector<Token>>;

class Model {
 public:
  virtual ~Model() = default;
  /// Appends the tokens of one pre-tokenized word (not empty) to `out`.
  virtual void tokenize(const std::string& word, std::vector<Token>& out, WordCache& cache) const = 0;
  virtual std::optional<int32_t> token_to_id(const std::string& token) const = 0;
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  /// Number of entries of the model's vocabulary (HF's get_vocab_size()).
  virtual size_t vocab_size() const = 0;
  /// One more than the largest id of the model's vocabulary (ids may leave gaps).
  virtual size_t id_bound() const = 0;
};

/// One sequence's ids, type ids and tokens, as the post-processors pass them on.
struct Encoded {
  std::vector<int32_t> ids, type_ids;
  std::vector<std::string> tokens;
  void append(const Encoded& o);
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  /// Adds the special tokens (when `add_special`) and sets the type ids; `encs` holds one
  /// sequence or a pair, and may come back as more parts, concatenated by the caller.
  virtual void process(std::vector<Encoded>& encs, bool add_special) const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  /// HF's decode_chain: tokens in, strings out (then joined by the caller).
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

/// Builders from the tokenizer.json objects; `depth` counts Sequence nesting (kMaxDepth).
std::unique_ptr<Normalizer> make_normalizer(const JsonNode& j, int depth = 0);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonNode& j, int depth = 0);
std::unique_ptr<Model> make_model(const JsonNode& j);
std::unique_ptr<PostProcessor> make_post_processor(const JsonNode& j, int depth = 0);
std::unique_ptr<Decoder> make_decoder(const JsonNode& j, int depth = 0);
/// The "Precompiled" normalizer: SentencePiece's precompiled_charsmap (base64).
std::unique_ptr<Normalizer> make_precompiled(const JsonNode& j);

/// Member `key` of `j`: a string of exactly one character.
char32_t one_char(const JsonNode& j, const char* key);
/// Metaspace's prepend_scheme (pre-tokenizer and decoder), with the older add_prefix_space.
enum class PrependScheme { Always, First, Never };
PrependScheme prepend_scheme(const JsonNode& j);

/// A stage, or a whole Sequence, may make the text at most kMaxGrowth times longer plus
/// kGrowthSlack bytes: replacements feeding each other would otherwise grow it exponentially.
constexpr size_t kMaxGrowth = 64, kGrowthSlack = size_t(1) << 20;
/// Fails when `after` bytes exceed what `before` bytes may grow to ("<what>: the text grows ...").
void check_growth(size_t before, size_t after, const char* what);

/// Appends `part` to `parts`, or its parts() when it is a `Seq` itself: one level of
/// Sequence, so that its check_growth() bounds the whole chain.
template <class Seq, class Part>
void flatten_into(std::vector<std::unique_ptr<Part>>& parts, std::unique_ptr<Part> part) {
  if (auto* seq = dynamic_cast<Seq*>(part.get())) {
    for (auto& p : seq->parts()) parts.push_back(std::move(p));
  } else {
    parts.push_back(std::move(part));
  }
}

/// Fails when `depth` exceeds kMaxDepth ("... nested more than 16 deep").
void check_depth(const JsonNode& j, int depth);

}  // namespace vkf::text::hf
