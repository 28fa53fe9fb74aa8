// The bart family's own settings, beyond ModelConfig's.
#pragma once

#include <string>

#include "model/family.hpp"

namespace vkf {

struct BartConfig : FamilyConfig {
  std::string architecture;       ///< architectures[0], e.g. BartForConditionalGeneration, MarianMTModel
  bool lm_head = true;            ///< *ForConditionalGeneration / MarianMTModel: logits; *Model: hidden states
  bool tied = true;               ///< tie_word_embeddings: the LM head is the decoder's embedding
  int32_t pad_token_id = 1;       ///< HF's pad token (padding itself is masked by position: ModelConfig::pad_id is -1)
  bool shared_embeddings = true;  ///< one table for both stacks (Marian's share_encoder_decoder_embeddings)
};

/// A bart-family config's own settings. @throws vkf::Error for another family's config.
const BartConfig& bart_config(const ModelConfig& c);

}  // namespace vkf
