// The t5 family's own settings, beyond ModelConfig's, and T5's relative-position buckets.
#pragma once

#include <string>
#include <vector>

#include "families/family.hpp"
#include "families/padding.hpp"

namespace vkf {

struct T5Config : FamilyConfig {
  std::string architecture;     ///< T5ForConditionalGeneration (the default) or T5EncoderModel
  bool lm_head = true;          ///< false: T5EncoderModel, the encoder's hidden states only
  uint32_t d_kv = 64;           ///< head width; inner = d_kv·num_heads may differ from d_model
  uint32_t inner = 0;
  uint32_t num_buckets = 32, max_distance = 128;
  bool gated = false;           ///< feed_forward_proj "gated-ACT": act(x·wi_0) ⊙ x·wi_1
  bool tied = true;             ///< tie_word_embeddings: the head is `shared`, output × d_model^-0.5
};

/// pad_batch with padding masked by position, never by id: T5's pad id is also
/// the decoder's start token.
PaddedIds t5_pad_batch(const std::vector<Ids>& seqs, const ModelConfig& cfg, uint32_t vocab, const char* side);

/// A t5 config's own settings. @throws vkf::Error for another family's config.
const T5Config& t5_config(const ModelConfig& c);

/// HF's T5Attention._relative_position_bucket for relative positions
/// −max_rel..max_rel (max_rel = max_distance, past which buckets no longer
/// change): entry r + max_rel is the bucket of memory − query position r, in
/// fp32 as PyTorch computes it (the truncation of a logarithm decides the
/// bucket, so double precision would differ at bucket edges).
std::vector<int32_t> t5_buckets(uint32_t num_buckets, uint32_t max_distance, bool bidirectional);

}  // namespace vkf
