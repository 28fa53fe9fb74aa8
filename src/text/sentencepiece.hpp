// The "sentencepiece_unigram" tokenizer (Universal Sentence Encoder lite):
// docs/tokenizer.md. Internal: reached through vkf::Tokenizer::load.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "vkformer/tokenizer.hpp"

namespace vkf::text {

/// Builds the tokenizer from the parsed tokenizer.json `j`; `file` names it in errors.
/// @throws vkf::Error naming `file` and the field that is missing or wrong.
std::unique_ptr<Tokenizer> load_sentencepiece_unigram(const nlohmann::json& j, const std::string& file);

}  // namespace vkf::text
