// Greedy and beam search over any family's next-token logits.
#pragma once

#include "run/logits_source.hpp"
#include "vkformer/session.hpp"

namespace vkf {

/// Generates up to o.max_new_tokens after each of `batch` sources (greedy for
/// o.beam 1, else beam search), stopping at cfg.eos_id unless !o.stop_at_eos.
/// Each decode step's wall time goes into stats (steps, step_ms).
std::vector<Ids> search(LogitsSource& logits, uint32_t batch, const ModelConfig& cfg,
                        const GenerateOptions& o, RunStats& stats);

}  // namespace vkf
