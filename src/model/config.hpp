// config.json from memory: load_config() without the file (the fuzz target's entry point).
#pragma once

#include <string>

#include "vkformer/model.hpp"

namespace vkf {

/// Parses and checks config.json text; `path` names it in messages.
/// @throws vkf::Error as load_config() does.
ModelConfig parse_config(const std::string& path, const std::string& text);

}  // namespace vkf
