// Where generation gets next-token logits from. A search (greedy or beam) keeps
// `slots` hypotheses, `beam` per source; after each choice it says, for every
// slot, which slot's history it continues (its parent) and with which token.
#pragma once

#include <memory>
#include <vector>

#include "run/session_impl.hpp"

namespace vkf {

class LogitsSource {
 public:
  virtual ~LogitsSource() = default;
  /// Logits [slots, vocab] for the first generated position (every slot of a
  /// source starts with the same history).
  virtual std::vector<float> start() = 0;
  /// Extends each slot's history: slot s becomes history(parents[s]) + tokens[s].
  /// Returns the logits [slots, vocab] for the next position.
  virtual std::vector<float> step(const std::vector<int32_t>& tokens,
                                  const std::vector<int32_t>& parents) = 0;
};

/// The encoder once, then one submission per step: each decoder layer keeps
/// its self-attention K/V in a cache (double-buffered so beams can be
/// reordered by gathering), and cross-attention K/V are computed once.
std::unique_ptr<LogitsSource> make_cached_source(Session::Impl& s, const std::vector<Ids>& src,
                                                 uint32_t beam, uint32_t max_new_tokens);
/// Every step runs the whole forward pass on each slot's full history: the
/// reference the cached path is checked against.
std::unique_ptr<LogitsSource> make_recompute_source(Session::Impl& s, const std::vector<Ids>& src,
                                                    uint32_t beam);

}  // namespace vkf
