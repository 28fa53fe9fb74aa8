// The "bart" family: Hugging Face's BART, Marian (OPUS-MT) and mBART
// encoder–decoders, read from a directory as HF saves them. Their layers are
// the transformer family's encoder–decoder (post-LN for BART and Marian, pre-LN
// with final norms for mBART), so the forward pass and the KV-cached generation
// are that family's; what is theirs is here:
//   config.cpp   read_config     BartConfig / MarianConfig / MBartConfig keys and
//                                defaults, what is refused
//   weights.cpp  build_weights   HF's tensor names (with or without "model."): q/k/v
//                                fused at load, BART's position table sliced past its
//                                offset of 2, Marian's computed, final_logits_bias
//   model.cpp    info, and generation's refusal for the bare models
#pragma once

#include "families/transformer/based.hpp"

namespace vkf {

class BartFamily final : public TransformerBasedFamily {
 public:
  const char* name() const override { return "bart"; }
  std::vector<std::string> aliases() const override { return {"marian", "mbart"}; }
  void read_config(const ConfigReader& r, ModelConfig& c) const override;
  std::unique_ptr<ModelWeights> build_weights(Loader& L, const ModelConfig& c) const override;
  ModelInfo info(const Model& m) const override;
  std::unique_ptr<LogitsSource> logits_source(Runner& s, const std::vector<Ids>& src,
                                              const GenerateOptions& o) const override;
};

/// The registry's entry (src/families/families.cmake).
inline const Family& bart_family() {
  static const BartFamily family;
  return family;
}

}  // namespace vkf
