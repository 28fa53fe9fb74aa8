// A family whose models run on the transformer family's stacks (gpt2, bart): it
// reads its own config keys and tensor names into TransformerWeights, and
// everything after (padding, plans, the recorded passes, KV-cached generation)
// is the transformer family's.
#pragma once

#include "model/family.hpp"

namespace vkf {

class TransformerBasedFamily : public Family {
 public:
  bool supports(Task task) const override { return task != Task::Embed; }
  uint32_t output_dim(const Model& m) const override;
  Batch prepare(Task task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                const RunOptions& o) const override;
  std::unique_ptr<Plan> make_plan(const Model& m, const PlanKey& key) const override;
  void record(Recorder& rec, const Model& m, Plan& p) const override;
  std::unique_ptr<LogitsSource> logits_source(Runner& s, const std::vector<Ids>& src,
                                              const GenerateOptions& o) const override;
  std::unique_ptr<SlotSource> slot_source(Runner& s, uint32_t slots, uint32_t max_len,
                                          DType kv_cache) const override;
};

}  // namespace vkf
