// A t5 model's tensors on the device, named for what they do in the block.
#pragma once

#include <optional>
#include <vector>

#include "model/weights.hpp"

namespace vkf {

/// One T5Block: layer.0 self-attention, (decoder) layer.1 cross-attention, then the FFN.
struct T5BlockWeights {
  Tensor self_norm, cross_norm, ff_norm;  ///< RMSNorm γ [d]
  LinearWeights qkv;        ///< SelfAttention.{q,k,v} packed: [3·inner, d], no bias
  LinearWeights self_o;     ///< SelfAttention.o [d, inner]
  LinearWeights cross_q;    ///< EncDecAttention.q [inner, d]
  LinearWeights cross_kv;   ///< EncDecAttention.{k,v} packed: [2·inner, d]
  LinearWeights cross_o;    ///< EncDecAttention.o [d, inner]
  LinearWeights wi, wi_1;   ///< DenseReluDense.wi (or wi_0) [d_ff, d]; gated: wi_1 [d_ff, d]
  LinearWeights wo;         ///< DenseReluDense.wo [d, d_ff]
};

struct T5Weights : ModelWeights {
  Tensor shared;                        ///< [vocab, d], the embedding of both stacks
  Tensor encoder_bias, decoder_bias;    ///< block.0's relative_attention_bias [num_buckets, heads]
  std::vector<T5BlockWeights> encoder, decoder;
  Tensor encoder_norm, decoder_norm;    ///< final_layer_norm γ; the decoder's × d^-0.5 with a tied head
  std::optional<LinearWeights> lm_head; ///< `shared` when tied, else lm_head.weight
};

/// A t5 model's weights. @throws vkf::Error for another family's model.
const T5Weights& t5_weights(const Model& m);

}  // namespace vkf
