// The t5 family's own settings, beyond ModelConfig's. T5's relative-position
// buckets (t5_buckets) are the shared block's.
#pragma once

#include <string>
#include <vector>

#include "model/family.hpp"
#include "families/transformer/stack.hpp"

namespace vkf {

/// HF's T5Config keys as read; read_config also sets the shared block's
/// fields from them (ModelConfig::head_dim = d_kv, gated_ffn, relative_buckets...).
struct T5Config : FamilyConfig {
  std::string architecture;     ///< T5ForConditionalGeneration (the default) or T5EncoderModel
  bool lm_head = true;          ///< false: T5EncoderModel, the encoder's hidden states only
  uint32_t d_kv = 64;           ///< head width; d_kv·num_heads may differ from d_model
  uint32_t num_buckets = 32, max_distance = 128;
  bool gated = false;           ///< feed_forward_proj "gated-ACT": act(x·wi_0) ⊙ x·wi_1
  bool tied = true;             ///< tie_word_embeddings: the head is `shared`, output × d_model^-0.5
};

/// A t5 config's own settings. @throws vkf::Error for another family's config.
const T5Config& t5_config(const ModelConfig& c);

}  // namespace vkf
