// A T5 model runs as the transformer family's encoder–decoder (or, as
// T5EncoderModel, encoder-only) model on the shared block: what is left here is
// what it tells about itself and how its inputs are named in errors.
#include "families/padding.hpp"
#include "families/t5/config.hpp"
#include "families/t5/family.hpp"
#include "run/logits_source.hpp"

namespace vkf {

ModelInfo T5Family::info(const Model& m) const {
  ModelInfo i;
  i.architecture = t5_config(m.config()).architecture;
  return i;
}

Batch T5Family::prepare(Task task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                        const RunOptions& o) const {
  const ModelConfig& cfg = m.config();
  if (cfg.encoder_decoder() && tgt.size() != src.size())
    throw Error("a T5 model needs one decoder input per source (starting with decoder_start_token_id " +
                std::to_string(cfg.bos_id) + "): got " + std::to_string(src.size()) + " sources and " +
                std::to_string(tgt.size()) + " targets");
  if (!cfg.encoder_decoder() && !tgt.empty())
    throw Error("target sequences were given, but a T5EncoderModel has no decoder");
  return TransformerBasedFamily::prepare(task, m, src, tgt, o);
}

std::unique_ptr<LogitsSource> T5Family::logits_source(Runner& s, const std::vector<Ids>& src,
                                                      const GenerateOptions& o) const {
  if (!t5_config(s.model.config()).lm_head)
    throw Error("a T5EncoderModel (hidden states only) cannot generate: generation needs "
                "T5ForConditionalGeneration's decoder and LM head");
  return TransformerBasedFamily::logits_source(s, src, o);
}

}  // namespace vkf
