// `vkformer soak`: many forward passes over alternating shapes and batch sizes,
// checking that outputs stay identical and that memory and validation stay quiet.
#pragma once

#include <string>

#include "vkformer/context.hpp"

namespace vkf::tools {

struct SoakOptions {
  std::string model_dir, precision = "fp32";
  unsigned iterations = 1000;
  unsigned shapes = 20;             ///< distinct (batch, lengths); more than the 16 plans a Session keeps
  double max_rss_growth_mib = 8.0;  ///< allowed host RSS growth from after warm-up to the end
  bool json = false;
};

/// Returns 0 when every output matched its shape's first run, the allocator
/// ends where it started, RSS grew less than the limit and the validation layer
/// (when on) said nothing; 1 otherwise.
int run_soak(const ContextOptions& ctx_opts, const SoakOptions& o);

}  // namespace vkf::tools
