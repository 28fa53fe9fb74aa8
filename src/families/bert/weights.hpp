// The bert family's tensors on the device.
#pragma once

#include <optional>
#include <vector>

#include "families/transformer/weights.hpp"

namespace vkf {

struct BertWeights : ModelWeights {
  Tensor word;        ///< word_embeddings [vocab, d]
  Tensor position;    ///< position_embeddings [max_positions, d]
  Tensor type;        ///< token_type_embeddings [type_vocab_size, d]; empty without token types
  NormWeights embed_norm;
  std::vector<EncoderLayerWeights> layers;  ///< query, key and value packed as qkv [3d, d]
  std::optional<LinearWeights> pooler;      ///< pooler.dense, tanh; when the file has it
  // The head: [dense (+ act) (+ LayerNorm)] then out.
  std::optional<LinearWeights> head_dense;  ///< RoBERTa's classifier.dense, DistilBERT's pre_classifier, the LM transform
  std::optional<NormWeights> head_norm;     ///< the LM transform's LayerNorm
  LinearWeights head_out;                   ///< the classifier, or the LM decoder (tied to `word` when not stored)
};

}  // namespace vkf
