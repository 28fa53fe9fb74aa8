// `vkformer tokenize`: text to ids (or ids to text) with a model directory's tokenizer
// (no device needed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vkf::tools {

struct TokenizeOptions {
  std::string model_dir;
  std::vector<std::string> texts;  ///< tokenized in order, after those of `input`
  std::string input;               ///< a file of texts, "-" for stdin; empty: none (text_input.hpp)
  bool json = false;               ///< print [[ids...], ...] instead of one line of ids per text
  bool tokens = false;             ///< print the tokens too
  bool decode = false;             ///< the texts are id lists ("5 17 42" or "5,17,42"): print their text
  bool no_special = false;         ///< encode without the special tokens ([CLS], <s>...)
  bool keep_special = false;       ///< decode keeps the special tokens
  uint32_t max_length = 0;         ///< truncate to this many ids, special tokens included; 0: no limit
};

/// Returns the exit code; errors are thrown as vkf::Error.
int run_tokenize(const TokenizeOptions& o);

}  // namespace vkf::tools
