// The "llama" family: Hugging Face's Llama-architecture decoders, LlamaForCausalLM
// (Llama 2 and 3, SmolLM, TinyLlama), MistralForCausalLM and Qwen2ForCausalLM, read
// from a directory as HF saves them. Their layers are the shared block's causal
// stack: pre-norm RMSNorm, rotary positions, grouped-query attention, a SwiGLU
// FFN; the forward pass and the KV-cached and continuous-batch generation are
// the transformer family's. What is theirs is here:
//   config.cpp   read_config     LlamaConfig / MistralConfig / Qwen2Config keys and
//                                defaults (transformers 4.44), what is refused
//   rope.cpp     llama_inv_freq  RoPE's inverse frequencies with rope_theta and rope_scaling
//                                (linear, dynamic, llama3), in fp32 as transformers computes them
//   weights.cpp  build_weights   HF's tensor names: q/k/v stacked at load, Qwen2's
//                                q/k/v biases, a tied or separate LM head
//   model.cpp    info
#pragma once

#include "families/transformer/based.hpp"

namespace vkf {

class LlamaFamily final : public TransformerBasedFamily {
 public:
  const char* name() const override { return "llama"; }
  std::vector<std::string> aliases() const override { return {"mistral", "qwen2"}; }
  void read_config(const ConfigReader& r, ModelConfig& c) const override;
  std::unique_ptr<ModelWeights> build_weights(Loader& L, const ModelConfig& c) const override;
  ModelInfo info(const Model& m) const override;
};

/// The registry's entry (src/families/families.cmake).
inline const Family& llama_family() {
  static const LlamaFamily family;
  return family;
}

}  // namespace vkf
