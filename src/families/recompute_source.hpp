// Generation without a cache: every step runs the whole forward pass over each
// hypothesis (GenerateOptions::use_cache false), the reference a family's
// KV-cached decoder is checked against.
#pragma once

#include <memory>

#include "run/logits_source.hpp"
#include "model/family.hpp"

namespace vkf {

/// Enc–dec models: each hypothesis starts at `start` (the decoder's start token,
/// run/search.hpp's decoder_start()); decoder-only ones continue their prompt.
std::unique_ptr<LogitsSource> recompute_source(Runner& s, const std::vector<Ids>& src, uint32_t beam,
                                               int32_t start);

}  // namespace vkf
