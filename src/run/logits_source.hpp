// Where generation gets next-token logits from (a family's
// Family::logits_source). A search (greedy or beam, run/search.hpp) keeps
// `slots` hypotheses, `beam` per source; after each choice it says, for every
// slot, which slot's history it continues (its parent) and with which token.
#pragma once

#include <cstdint>
#include <vector>

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

}  // namespace vkf
