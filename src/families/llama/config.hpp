#pragma once

#include <string>
#include <vector>

#include "model/family.hpp"

namespace vkf {

/// config.json's "rope_scaling", as transformers 4.44 reads it for Llama.
struct RopeScaling {
  std::string type = "default";  ///< "default" (none), "linear", "dynamic" or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  ///< llama3
  uint32_t original_max_positions = 0;                   ///< llama3's original_max_position_embeddings
};

struct LlamaConfig : FamilyConfig {
  std::string architecture;  ///< architectures[0]: <Name>ForCausalLM (the default) or <Name>Model
  bool lm_head = true;       ///< ...ForCausalLM: logits; ...Model: hidden states
  bool tied = false;         ///< tie_word_embeddings: the LM head is embed_tokens
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool attention_bias = false;  ///< q/k/v/o biases (Llama's attention_bias; Qwen2: q/k/v always)
  bool mlp_bias = false;        ///< gate/up/down biases (Llama's mlp_bias)
};

const LlamaConfig& llama_config(const ModelConfig& c);

/// RoPE's inverse frequencies [head_dim / 2] for a pass whose largest position is
/// seq_len − 1, as transformers 4.44's rope init functions compute them in fp32
/// (seq_len matters to "dynamic" only, past max_position_embeddings).
std::vector<float> llama_inv_freq(const ModelConfig& c, const LlamaConfig& l, uint32_t seq_len);

}  // namespace vkf
