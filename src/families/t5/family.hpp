// The "t5" family: Hugging Face's T5 (v1.0, v1.1, Flan-T5), read from a
// directory as HF saves it: T5ForConditionalGeneration (logits, generation)
// or T5EncoderModel (the encoder's hidden states). Its blocks are the shared
// transformer block (families/transformer/) configured as T5's: pre-norm with
// weight-only RMSNorm, no biases, no 1/√d score scaling, a bucketed
// relative-position bias from each stack's layer 0 shared by all its layers,
// relu or gated FFNs. So the forward pass and the KV-cached generation are the
// transformer family's; what is T5's own is here:
//   config.cpp   read_config     HF's T5Config keys and defaults, what is refused
//   weights.cpp  build_weights   HF's tensor names
//   model.cpp    info, prepare (its messages), what it does not run
// Padding is masked by position on both sides: T5's pad id 0 is also the
// decoder's start token.
#pragma once

#include "families/transformer/based.hpp"

namespace vkf {

class T5Family final : public TransformerBasedFamily {
 public:
  const char* name() const override { return "t5"; }
  void read_config(const ConfigReader& r, ModelConfig& c) const override;
  std::unique_ptr<ModelWeights> build_weights(Loader& L, const ModelConfig& c) const override;
  ModelInfo info(const Model& m) const override;
  Batch prepare(Task task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                const RunOptions& o) const override;
  std::unique_ptr<LogitsSource> logits_source(Runner& s, const std::vector<Ids>& src,
                                              const GenerateOptions& o) const override;
};

/// The registry's entry (src/families/families.cmake).
inline const Family& t5_family() {
  static const T5Family family;
  return family;
}

}  // namespace vkf
