// A transformer model's tensors on the device, named for what they do in the layer.
#pragma once

#include <optional>
#include <vector>

#include "model/weights.hpp"

namespace vkf {

class Loader;

struct EncoderLayerWeights {
  LinearWeights qkv;        ///< self_attn.in_proj_{weight,bias}: [3d, d]
  LinearWeights attn_out;   ///< self_attn.out_proj
  LinearWeights ff1, ff2;   ///< linear1 [d_ff, d], linear2 [d, d_ff]
  NormWeights norm1, norm2;
};

struct DecoderLayerWeights {
  LinearWeights self_qkv, self_out;  ///< self_attn
  LinearWeights cross_q;             ///< multihead_attn.in_proj rows [0, d)
  LinearWeights cross_kv;            ///< multihead_attn.in_proj rows [d, 3d)
  LinearWeights cross_out;           ///< multihead_attn.out_proj
  LinearWeights ff1, ff2;
  NormWeights norm1, norm2, norm3;
};

struct TransformerWeights : ModelWeights {
  Tensor src_embed;   ///< [src_vocab, d]
  Tensor tgt_embed;   ///< [tgt_vocab, d], enc–dec only
  Tensor src_pos;     ///< [max_positions, d]: learned table or position_table(); empty for "none"
  Tensor tgt_pos;     ///< the same for the decoder (enc–dec only)
  /// A LayerNorm right after each stack's embedding (BART's layernorm_embedding); none: nothing.
  std::optional<NormWeights> src_embed_norm, tgt_embed_norm;
  std::vector<EncoderLayerWeights> encoder;
  std::optional<NormWeights> encoder_norm;
  std::vector<DecoderLayerWeights> decoder;
  std::optional<NormWeights> decoder_norm;
  std::optional<LinearWeights> generator;
};

/// The computed position table of cfg.positional_encoding (Sinusoidal or
/// SinusoidalHalves), [max_positions, d_model], uploaded once (empty values in a
/// dry run); both stacks may share it.
Tensor position_table(Loader& L, const ModelConfig& cfg);

/// A transformer model's weights. @throws vkf::Error for another family's model.
const TransformerWeights& transformer_weights(const Model& m);

}  // namespace vkf
