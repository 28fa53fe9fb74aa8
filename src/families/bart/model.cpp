// A BART, Marian or mBART model runs as the transformer family's encoder–decoder:
// the forward pass and the KV-cached generation are that family's, on the
// TransformerWeights build_weights made (families/transformer/).
#include "families/bart/config.hpp"
#include "families/bart/family.hpp"
#include "families/transformer/family.hpp"
#include "run/logits_source.hpp"
#include "run/session_impl.hpp"

namespace vkf {

ModelInfo BartFamily::info(const Model& m) const {
  ModelInfo i;
  i.architecture = bart_config(m.config()).architecture;
  i.max_tokens = m.config().max_positions;
  return i;
}

uint32_t BartFamily::output_dim(const Model& m) const { return transformer_family().output_dim(m); }

Batch BartFamily::prepare(Task task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                          const RunOptions& o) const {
  return transformer_family().prepare(task, m, src, tgt, o);
}

std::unique_ptr<Plan> BartFamily::make_plan(const Model& m, const PlanKey& key) const {
  return transformer_family().make_plan(m, key);
}

void BartFamily::record(Recorder& rec, const Model& m, Plan& p) const { transformer_family().record(rec, m, p); }

std::unique_ptr<LogitsSource> BartFamily::logits_source(Session::Impl& s, const std::vector<Ids>& src,
                                                        const GenerateOptions& o) const {
  const BartConfig& b = bart_config(s.model.config());
  if (!b.lm_head)
    throw Error("a " + b.architecture + " (hidden states only) cannot generate: generation needs the LM head of " +
                (s.model.config().model_type == "marian" ? "MarianMTModel" : "*ForConditionalGeneration"));
  return transformer_family().logits_source(s, src, o);
}

}  // namespace vkf
