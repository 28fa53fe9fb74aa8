// The "char" tokenizer (docs/tokenizer.md): one id per Unicode code point.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "vkformer/tokenizer.hpp"

namespace vkf::text {

/// From the parsed tokenizer.json `j` ("type": "char"); `file` names it in errors.
/// @throws vkf::Error naming the file and the field that is missing or wrong.
std::unique_ptr<Tokenizer> make_char_tokenizer(const nlohmann::json& j, const std::string& file);

}  // namespace vkf::text
