// The "bert" family: Hugging Face's BERT and its kin, read from a directory as
// HF saves it (save_pretrained or a Hub snapshot): model_type "bert",
// "roberta", "xlm-roberta" and "distilbert", their base models and their
// sequence-classification, token-classification and masked-LM heads, and
// sentence-transformers directories on top of them (docs/model-format.md).
//   config.cpp   read_config     HF's config keys, the head, sentence-transformers' modules
//   weights.cpp  build_weights   HF's tensor names (with or without the base model's prefix)
//   encoder.cpp  prepare, make_plan, record: embeddings, post-LN layers, the head or pooling
#pragma once

#include "model/family.hpp"

namespace vkf {

class BertFamily final : public Family {
 public:
  const char* name() const override { return "bert"; }
  std::vector<std::string> aliases() const override { return {"roberta", "xlm-roberta", "distilbert"}; }
  void read_config(const ConfigReader& r, ModelConfig& c) const override;
  std::unique_ptr<ModelWeights> build_weights(Loader& L, const ModelConfig& c) const override;
  bool supports(Task task) const override { return task != Task::Generate; }
  std::string refusal(Task task) const override;
  uint32_t output_dim(const Model& m) const override;
  ModelInfo info(const Model& m) const override;
  Batch prepare(Task task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                const RunOptions& o) const override;
  std::unique_ptr<Plan> make_plan(const Model& m, const PlanKey& key) const override;
  void record(Recorder& rec, const Model& m, Plan& p) const override;
};

/// The registry's entry (src/families/families.cmake).
inline const Family& bert_family() {
  static const BertFamily family;
  return family;
}

}  // namespace vkf
