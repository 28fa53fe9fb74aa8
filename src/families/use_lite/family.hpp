// The "use_lite" family: Universal Sentence Encoder lite (docs/model-format.md),
// a sentence encoder: it embeds, and has no forward pass over tokens or generation.
//   config.cpp   read_config     its keys, and UseLiteConfig
//   weights.cpp  build_weights   embed, timing, layers.{i}.*, pooler -> UseLiteWeights
//   encoder.cpp  prepare, make_plan, record: one embedding pass per shape
#pragma once

#include "model/family.hpp"

namespace vkf {

class UseLiteFamily final : public Family {
 public:
  const char* name() const override { return "use_lite"; }
  void read_config(const ConfigReader& r, ModelConfig& c) const override;
  std::unique_ptr<ModelWeights> build_weights(Loader& L, const ModelConfig& c) const override;
  bool supports(Task task) const override { return task == Task::Embed; }
  std::string refusal(Task task) const override;
  uint32_t output_dim(const Model& m) const override { return m.config().d_model; }
  Batch prepare(Task task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                const RunOptions& o) const override;
  std::unique_ptr<Plan> make_plan(const Model& m, const PlanKey& key) const override;
  void record(Recorder& rec, const Model& m, Plan& p) const override;
};

/// The registry's entry (src/families/families.cmake).
inline const Family& use_lite_family() {
  static const UseLiteFamily family;
  return family;
}

}  // namespace vkf
