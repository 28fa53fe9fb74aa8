// A GPT-2 model runs as the transformer family's decoder-only model: the
// forward pass and the KV-cached generation are that family's, on the
// TransformerWeights build_weights made (families/transformer/).
#include "families/gpt2/config.hpp"
#include "families/gpt2/family.hpp"
#include "run/logits_source.hpp"

namespace vkf {

ModelInfo Gpt2Family::info(const Model& m) const {
  ModelInfo i;
  i.architecture = gpt2_config(m.config()).architecture;
  i.max_tokens = m.config().max_positions;
  return i;
}

std::unique_ptr<LogitsSource> Gpt2Family::logits_source(Runner& s, const std::vector<Ids>& src,
                                                        const GenerateOptions& o) const {
  if (!gpt2_config(s.model.config()).lm_head)
    throw Error("a GPT2Model (hidden states only) cannot generate: generation needs GPT2LMHeadModel's LM head");
  return TransformerBasedFamily::logits_source(s, src, o);
}

}  // namespace vkf
