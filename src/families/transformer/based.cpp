#include "families/transformer/based.hpp"

#include "families/transformer/family.hpp"
#include "run/logits_source.hpp"
#include "run/slot_source.hpp"

namespace vkf {

uint32_t TransformerBasedFamily::output_dim(const Model& m) const { return transformer_family().output_dim(m); }

Batch TransformerBasedFamily::prepare(Task task, const Model& m, const std::vector<Ids>& src,
                                      const std::vector<Ids>& tgt, const RunOptions& o) const {
  return transformer_family().prepare(task, m, src, tgt, o);
}

std::unique_ptr<Plan> TransformerBasedFamily::make_plan(const Model& m, const PlanKey& key) const {
  return transformer_family().make_plan(m, key);
}

void TransformerBasedFamily::record(Recorder& rec, const Model& m, Plan& p) const {
  transformer_family().record(rec, m, p);
}

std::unique_ptr<LogitsSource> TransformerBasedFamily::logits_source(Runner& s, const std::vector<Ids>& src,
                                                                    const GenerateOptions& o) const {
  return transformer_family().logits_source(s, src, o);
}

std::unique_ptr<SlotSource> TransformerBasedFamily::slot_source(Runner& s, uint32_t slots, uint32_t max_len,
                                                                DType kv_cache) const {
  return transformer_family().slot_source(s, slots, max_len, kv_cache);
}

}  // namespace vkf
