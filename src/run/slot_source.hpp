// Next-token logits for a continuous decode batch (run/decode_batch.cpp): a
// family's KV cache with one slot per sequence, each slot at its own length.
// Sequences join (prefill) and leave between steps.
#pragma once

#include <cstdint>
#include <vector>

#include "vkformer/session.hpp"

namespace vkf {

class SlotSource {
 public:
  virtual ~SlotSource() = default;
  /// The most slots, and the most rows (prompt + new tokens) a slot holds.
  virtual uint32_t slots() const = 0;
  virtual uint32_t max_len() const = 0;
  /// Runs `prompt` alone, as Session::generate would, into slot `slot`: a
  /// decoder-only model's prompt fills rows [0, prompt.size()); an enc–dec
  /// model's is the source, and the decoder's `start` token fills row 0.
  /// Returns the logits [vocab] of the first new token.
  virtual std::vector<float> prefill(uint32_t slot, const Ids& prompt, int32_t start) = 0;
  /// One token per slot 0..tokens.size()−1, slot b's at row lengths[b] (what it
  /// holds so far). Returns the logits [tokens.size(), vocab], each row as the
  /// sequence alone would get it.
  virtual std::vector<float> step(const std::vector<int32_t>& tokens, const std::vector<uint32_t>& lengths) = 0;
  /// Slot `from`'s rows [0, rows) into slot `to` (the batch stays packed when one leaves).
  virtual void move(uint32_t from, uint32_t to, uint32_t rows) = 0;
};

}  // namespace vkf
