// A BART, Marian or mBART model runs as the transformer family's encoder–decoder
// (TransformerBasedFamily): what is left here is what it tells about itself.
#include "families/bart/config.hpp"
#include "families/bart/family.hpp"
#include "run/logits_source.hpp"

namespace vkf {

ModelInfo BartFamily::info(const Model& m) const {
  ModelInfo i;
  i.architecture = bart_config(m.config()).architecture;
  i.max_tokens = m.config().max_positions;
  return i;
}

std::unique_ptr<LogitsSource> BartFamily::logits_source(Runner& s, const std::vector<Ids>& src,
                                                        const GenerateOptions& o) const {
  const BartConfig& b = bart_config(s.model.config());
  if (!b.lm_head)
    throw Error("a " + b.architecture + " (hidden states only) cannot generate: generation needs the LM head of " +
                (s.model.config().model_type == "marian" ? "MarianMTModel" : "*ForConditionalGeneration"));
  return TransformerBasedFamily::logits_source(s, src, o);
}

}  // namespace vkf
