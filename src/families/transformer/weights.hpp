// A transformer model's tensors on the device, named for what they do in the layer.
#pragma once

#include <optional>
#include <vector>

#include "model/weights.hpp"

namespace vkf {

class Loader;

// Widths: q = ModelConfig::q_width(), kv = kv_width() (both d for most
// families). A LinearWeights without a bias has none; an RMSNorm has no β.

struct EncoderLayerWeights {
  LinearWeights qkv;        ///< self_attn.in_proj_{weight,bias}: [q + 2·kv, d], Q, K, V packed
  LinearWeights attn_out;   ///< self_attn.out_proj [d, q]
  /// linear1 [d_ff, d], linear2 [d, d_ff]; a gated FFN's gate (activated) is ff1, its up ff_up.
  LinearWeights ff1, ff2, ff_up;
  NormWeights norm1, norm2; ///< before (pre-LN) or after (post-LN) attention, and the FFN
};

struct DecoderLayerWeights {
  LinearWeights self_qkv, self_out;  ///< self_attn
  LinearWeights cross_q;             ///< multihead_attn.in_proj rows [0, q)
  LinearWeights cross_kv;            ///< multihead_attn.in_proj rows [q, q + 2·kv)
  LinearWeights cross_out;           ///< multihead_attn.out_proj
  LinearWeights ff1, ff2, ff_up;
  NormWeights norm1, norm2, norm3;   ///< self-attention, cross-attention, FFN
};

struct TransformerWeights : ModelWeights {
  Tensor src_embed;   ///< [src_vocab, d]
  Tensor tgt_embed;   ///< [tgt_vocab, d], enc–dec only
  Tensor src_pos;     ///< [max_positions, d]: learned table or position_table(); empty for "none"
  Tensor tgt_pos;     ///< the same for the decoder (enc–dec only)
  /// PositionalEncoding::RelativeBias: each stack's bucket table [relative_buckets, n_heads].
  Tensor src_position_bias, tgt_position_bias;
  /// PositionalEncoding::Rotary: RoPE's inverse frequencies [head_dim / 2] f32 (the family's, with its scaling).
  Tensor rope_inv_freq;
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
