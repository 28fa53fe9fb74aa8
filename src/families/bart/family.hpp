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
//   model.cpp    info, and the passes: the transformer family's
#pragma once

#include "families/family.hpp"

namespace vkf {

class BartFamily final : public Family {
 public:
  const char* name() const override { return "bart"; }
  std::vector<std::string> aliases() const override { return {"marian", "mbart"}; }
  void read_config(const ConfigReader& r, ModelConfig& c) const override;
  std::unique_ptr<ModelWeights> build_weights(Loader& L, const ModelConfig& c) const override;
  bool supports(Task task) const override { return task != Task::Embed; }
  ModelInfo info(const Model& m) const override;
  uint32_t output_dim(const Model& m) const override;
  Batch prepare(Task task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                const RunOptions& o) const override;
  std::unique_ptr<Plan> make_plan(const Model& m, const PlanKey& key) const override;
  void record(Recorder& rec, const Model& m, Plan& p) const override;
  std::unique_ptr<LogitsSource> logits_source(Session::Impl& s, const std::vector<Ids>& src,
                                              const GenerateOptions& o) const override;
};

/// The registry's entry (src/families/families.cmake).
inline const Family& bart_family() {
  static const BartFamily family;
  return family;
}

}  // namespace vkf
