// The "transformer" family: torch.nn.Transformer stacks (docs/model-format.md)
// as encoder–decoder, encoder-only, or decoder-only (a causal encoder stack)
// models. Each method is defined in the file about its subject:
//   config.cpp        read_config        config.json's keys
//   weights.cpp       build_weights      state_dict() names -> TransformerWeights
//   forward_pass.cpp  prepare, make_plan, record: one forward pass per shape
//   generation.cpp    logits_source      KV-cached decoding (and recomputation)
//   stack.cpp         the layers and stacks all of them record
#pragma once

#include "model/family.hpp"

namespace vkf {

class TransformerFamily final : public Family {
 public:
  const char* name() const override { return "transformer"; }
  void read_config(const ConfigReader& r, ModelConfig& c) const override;
  std::unique_ptr<ModelWeights> build_weights(Loader& L, const ModelConfig& c) const override;
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

/// The registry's entry (src/families/families.cmake).
inline const Family& transformer_family() {
  static const TransformerFamily family;
  return family;
}

}  // namespace vkf
