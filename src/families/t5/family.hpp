// The "t5" family: Hugging Face's T5 (v1.0, v1.1, Flan-T5), read from a
// directory as HF saves it: T5ForConditionalGeneration (logits, generation)
// or T5EncoderModel (the encoder's hidden states). Pre-norm blocks with
// weight-only RMSNorm, no biases, no 1/√d score scaling, a bucketed
// relative-position bias from each stack's layer 0 shared by all its layers,
// relu or gated FFNs. Each method is defined in the file about its subject:
//   config.cpp          read_config      HF's T5Config keys and defaults, what is refused
//   position_bias.cpp   t5_buckets       the bucket of each relative position
//   weights.cpp         build_weights    HF's tensor names
//   stack.cpp           the encoder and decoder stacks
//   forward_pass.cpp    prepare, make_plan, record
//   generation.cpp      logits_source    the KV-cached decoder
// Padding is masked by position on both sides: T5's pad id 0 is also the
// decoder's start token.
#pragma once

#include "families/family.hpp"

namespace vkf {

class T5Family final : public Family {
 public:
  const char* name() const override { return "t5"; }
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
inline const Family& t5_family() {
  static const T5Family family;
  return family;
}

}  // namespace vkf
