// The bert family's own settings, read from HF's config.json and, for a
// sentence-transformers directory, its modules.json, 1_Pooling/config.json and
// sentence_bert_config.json.
#pragma once

#include <string>
#include <vector>

#include "model/family.hpp"

namespace vkf {

/// Which of the kin: they differ in tensor names, position ids and heads.
enum class BertFlavor { Bert, Roberta, DistilBert };

/// The head `architectures` names; None is the base model (*Model).
enum class BertHead { None, SequenceClassification, TokenClassification, MaskedLM };

struct BertConfig : FamilyConfig {
  BertFlavor flavor = BertFlavor::Bert;
  std::string architecture;      ///< architectures[0], or "<Type>Model" when absent
  BertHead head = BertHead::None;
  uint32_t type_vocab_size = 0;  ///< 0: no token types (DistilBERT, or a table of 0 rows)
  uint32_t max_tokens = 0;       ///< longest sequence: positions minus RoBERTa's offset
  Activation head_act = Activation::GeluErf;  ///< the masked-LM transform's activation
  // Heads.
  uint32_t num_labels = 0;
  std::vector<std::string> labels;  ///< id2label, by id
  /// "problem_type": "" (not given), single_label_classification,
  /// multi_label_classification or regression; classify_function() reads it.
  std::string problem_type;
  // sentence-transformers (modules.json); pooling "" when the directory has none.
  std::string pooling;              ///< "mean", "cls", "max" or "mean_sqrt_len"
  bool normalize = false;           ///< a Normalize module follows the pooling
  uint32_t max_seq_length = 0;      ///< sentence_bert_config.json; 0: not given
  bool do_lower_case = false;       ///< sentence_bert_config.json: texts lowercased first
};

/// A bert-family config's own settings. @throws vkf::Error for another family's config.
const BertConfig& bert_config(const ModelConfig& c);

/// How scores come from a sequence classifier's logits, as HF's text-classification
/// pipeline decides: "none" (regression), "sigmoid" (multi-label, or one label), "softmax".
const char* classify_function(const BertConfig& b);

/// The base model's tensor prefix as HF's heads save it ("bert.", "roberta.", "distilbert.").
const char* bert_prefix(BertFlavor f);

}  // namespace vkf
