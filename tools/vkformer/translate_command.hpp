// `vkformer translate`: text in, text out, through a model directory's tokenizer
// (tokenizer.json, docs/tokenizer.md) and an encoder-decoder model.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vkformer/context.hpp"

namespace vkf::tools {

struct TranslateOptions {
  std::string model_dir;
  std::vector<std::string> texts;  ///< one output line per text, in order (after --input's)
  std::string input;               ///< a file of texts (JSON array or one per line), "-": stdin
  std::string precision = "fp32";
  unsigned beam = 0;               ///< 0: generation_config.json's num_beams (else 1)
  unsigned max_new_tokens = 0;     ///< 0: max_positions
  unsigned batch_size = 256;       ///< texts per padded batch
  std::optional<double> length_penalty;  ///< unset: generation_config.json's (else 1)
};

/// Tokenizes every text (the model's tokenizer: tokenizer.json, or a Marian
/// tokenizer's source.spm + vocab.json), generates with the directory's
/// generation_config.json under the options given, generates for them in padded batches of up to
/// batch_size texts (the encoder runs once per batch, decoding uses the KV
/// cache), prints the detokenized outputs in order.
/// @throws vkf::Error naming the text, file or option that is wrong.
int run_translate(const ContextOptions& ctx_opts, const TranslateOptions& o);

}  // namespace vkf::tools
