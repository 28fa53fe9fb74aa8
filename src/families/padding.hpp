// Batches of token ids of different lengths, padded into one [batch, len] block.
#pragma once

#include <cstdint>
#include <vector>

#include "vkformer/session.hpp"

namespace vkf {

/// Ids padded with pad_id into [batch, len], and the key padding mask
/// (1 where the id is pad_id, as PyTorch's `ids == pad_id`). A pad_id < 0
/// means the model has no padding token (GPT-2): the padding is filled with
/// id 0 and masked by position, and no real id is masked; so does
/// ModelConfig::pad_by_position (T5, whose pad id starts the decoder).
struct PaddedIds {
  uint32_t batch = 0, len = 0;
  std::vector<int32_t> ids, pad;
  std::vector<uint32_t> lengths;
};

/// Pads with cfg.pad_id, checking every id against `vocab` and every length
/// against cfg.max_positions; `side` names the input in errors ("source", "target").
/// @throws vkf::Error naming the sequence (from 1) and the id, or the length and
/// the config key of the limit.
PaddedIds pad_batch(const std::vector<Ids>& seqs, const ModelConfig& cfg, uint32_t vocab, const char* side);

}  // namespace vkf
