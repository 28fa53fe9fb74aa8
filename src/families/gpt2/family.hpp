// The "gpt2" family: Hugging Face's GPT-2 (and DistilGPT-2), read from a
// directory as HF saves it: GPT2LMHeadModel (logits, generation) or GPT2Model
// (hidden states). Its layers are the transformer family's decoder-only model
// (a causal pre-LN encoder stack with learned positions), so the forward pass
// and the KV-cached generation are that family's; what is GPT-2's own is here:
//   config.cpp   read_config     HF's GPT2Config keys and defaults, what is refused
//   weights.cpp  build_weights   HF's tensor names (with or without "transformer."),
//                                Conv1D weights transposed once at load time
//   model.cpp    info, and the passes: the transformer family's decoder-only model
// Padding is on the right, masked by position (GPT-2 has no padding token):
// each sequence has positions 0..len-1, as when it runs alone.
#pragma once

#include "families/transformer/based.hpp"

namespace vkf {

class Gpt2Family final : public TransformerBasedFamily {
 public:
  const char* name() const override { return "gpt2"; }
  void read_config(const ConfigReader& r, ModelConfig& c) const override;
  std::unique_ptr<ModelWeights> build_weights(Loader& L, const ModelConfig& c) const override;
  ModelInfo info(const Model& m) const override;
  std::unique_ptr<LogitsSource> logits_source(Runner& s, const std::vector<Ids>& src,
                                              const GenerateOptions& o) const override;
};

/// The registry's entry (src/families/families.cmake).
inline const Family& gpt2_family() {
  static const Gpt2Family family;
  return family;
}

}  // namespace vkf
