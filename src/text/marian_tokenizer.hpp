// Hugging Face's MarianTokenizer (OPUS-MT): source.spm and target.spm
// (SentencePiece models, read by the real SentencePiece library) + vocab.json.
#pragma once

#include <memory>
#include <string>

#include "vkformer/tokenizer.hpp"

namespace vkf::text {

/// Whether DIR holds a Marian tokenizer: source.spm, or tokenizer_config.json
/// naming "MarianTokenizer".
bool is_marian_dir(const std::string& dir);

/// Loads DIR/source.spm, DIR/target.spm, DIR/vocab.json (and, with
/// separate_vocabs, DIR/target_vocab.json) with DIR/tokenizer_config.json.
/// @throws vkf::Error naming the missing or bad file.
std::unique_ptr<Tokenizer> load_marian(const std::string& dir);

}  // namespace vkf::text
