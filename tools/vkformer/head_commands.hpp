// The commands that read an HF encoder's head: `vkformer classify` (sequence
// and token classifiers: labels with scores) and `vkformer fill-mask` (a
// masked LM's top tokens for each mask), as HF's pipelines print them.
#pragma once

#include <string>
#include <vector>

#include "vkformer/context.hpp"

namespace vkf::tools {

struct HeadOptions {
  std::string model_dir;
  std::vector<std::string> texts;  ///< after those of `input` (text_input.hpp)
  std::string input;
  std::string precision = "fp32";
  unsigned top_k = 0;              ///< 0: the command's default (classify 1, fill-mask 5)
  unsigned batch_size = 32;        ///< texts per submission
  bool json = false;
};

/// Each returns the exit code; errors are thrown as vkf::Error.
int run_classify(const ContextOptions& ctx_opts, const HeadOptions& o);
int run_fill_mask(const ContextOptions& ctx_opts, const HeadOptions& o);

}  // namespace vkf::tools
