// `vkformer embed`: sentence embeddings with a "use_lite" model directory
// (Universal Sentence Encoder lite): a cosine-similarity table, JSON or .npy.
#pragma once

#include <string>
#include <vector>

#include "vkformer/context.hpp"

namespace vkf::tools {

struct EmbedOptions {
  std::string model_dir;
  std::vector<std::string> sentences;  ///< embedded in order, after those of `input` (text_input.hpp)
  std::string input;                   ///< a file of sentences, "-" for stdin; empty: none
  std::vector<std::string> ids;        ///< "5,17,42" per sequence: ids instead of text (no tokenizer)
  std::string precision = "fp32";
  std::string out;                     ///< .npy of float32 [n, d]; empty: none
  bool json = false;                   ///< print {"embeddings": [[...], ...]}
  bool profile = false;                ///< then one more call with timestamps: device time per op
  unsigned repeat = 1;                 ///< embed this many times; report the first and the median of the others
  unsigned batch_size = 64;            ///< texts per submission
  std::string pooling;                 ///< RunOptions::pooling: "" the directory's, mean, cls, max, mean_sqrt_len
  bool normalize = false;              ///< L2-normalize even if the directory does not say so
};

/// Returns the exit code; errors are thrown as vkf::Error.
int run_embed(const ContextOptions& ctx_opts, const EmbedOptions& o);

}  // namespace vkf::tools
