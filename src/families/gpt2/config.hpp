// The gpt2 family's own settings, beyond ModelConfig's.
#pragma once

#include <string>

#include "model/family.hpp"

namespace vkf {

struct Gpt2Config : FamilyConfig {
  std::string architecture;  ///< architectures[0]: GPT2LMHeadModel (the default) or GPT2Model
  bool lm_head = true;       ///< GPT2LMHeadModel: logits over the vocabulary; GPT2Model: hidden states
  bool tied = true;          ///< tie_word_embeddings: the LM head is wte (lm_head.weight may be absent)
};

/// A gpt2 config's own settings. @throws vkf::Error for another family's config.
const Gpt2Config& gpt2_config(const ModelConfig& c);

}  // namespace vkf
