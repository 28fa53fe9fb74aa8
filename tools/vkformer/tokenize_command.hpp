// `vkformer tokenize`: text to ids with a model directory's tokenizer.json (no device needed).
#pragma once

#include <string>
#include <vector>

namespace vkf::tools {

struct TokenizeOptions {
  std::string model_dir;
  std::vector<std::string> texts;  ///< tokenized in order, after those of `input`
  std::string input;               ///< a file of texts, "-" for stdin; empty: none (text_input.hpp)
  bool json = false;               ///< print [[ids...], ...] instead of one line of ids per text
};

/// Returns the exit code; errors are thrown as vkf::Error.
int run_tokenize(const TokenizeOptions& o);

}  // namespace vkf::tools
