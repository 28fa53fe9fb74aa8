// Records the Transformer stack, layer by layer, as kernel dispatches. The
// model's layout (post-LN or pre-LN, encoder or decoder layer) lives here and
// only here; planning (which buffers, which shapes) is the caller's business.
#pragma once

#include "model/weights.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/recorder.hpp"

namespace vkf {

/// Activation buffers for batch × len tokens. The residual stream is `x`;
/// layers leave their output in `x` (swapping `x` and `y` where that saves a copy).
struct Activations {
  uint32_t batch = 0, len = 0;
  Tensor x, y, n, qkv, attn, q, f;  ///< [batch, len, d | 3d | d_ff]
  Activations() = default;
  Activations(Context& ctx, const ModelConfig& cfg, uint32_t batch, uint32_t len);
};

/// Where self-attention gets its keys and values, and what it may see.
struct SelfAttentionSpec {
  const Tensor* key_padding = nullptr;  ///< [batch, ≥ kv_len] i32, nonzero = masked
  uint32_t key_padding_stride = 0;
  bool causal = false;
  /// KV cache [slots, max_len, 2d] (K in columns [0, d), V in [d, 2d)): this
  /// call's K/V rows are appended at row `past`, and attention reads rows
  /// [0, past + len). Without a cache, K/V come from this call's projection.
  Tensor* cache = nullptr;
  uint32_t past = 0;
  uint32_t cache_batch_stride = 0;      ///< elements between sequences; 0: max_len·2d
};

/// Cross-attention keys and values: the memory projected by cross_kv.
struct CrossAttentionSpec {
  const Tensor* kv = nullptr;           ///< [batch, src_len, 2d]
  uint32_t src_len = 0;
  const Tensor* key_padding = nullptr;  ///< [batch, src_len] i32
};

/// a.x = token embedding (× √d if configured) + positions.
/// y = act(x·Wᵀ + b) + residual: one GEMM with its epilogue, for every family's layers.
OpInfo linear(Recorder& rec, const Tensor& x, const LinearWeights& w, Tensor& y,
              Activation act = Activation::None, const Tensor* residual = nullptr);

void record_embedding(Recorder& rec, const ModelConfig& cfg, const Tensor& table,
                      const Tensor& positions, const Tensor& ids, const Tensor* position_ids,
                      uint32_t pos_offset, Activations& a);
/// One nn.TransformerEncoderLayer on a.x.
void record_encoder_layer(Recorder& rec, const ModelConfig& cfg, const EncoderLayerWeights& w,
                          Activations& a, const SelfAttentionSpec& self);
/// One nn.TransformerDecoderLayer on a.x.
void record_decoder_layer(Recorder& rec, const ModelConfig& cfg, const DecoderLayerWeights& w,
                          Activations& a, const SelfAttentionSpec& self,
                          const CrossAttentionSpec& cross);
/// a.x = LayerNorm(a.x) (the stacks' optional final norm).
void record_final_norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, Activations& a);
/// out = memory · cross_kvᵀ + b: the decoder layer's cross-attention K and V.
void record_cross_kv(Recorder& rec, const DecoderLayerWeights& w, const Tensor& memory, Tensor& out);
/// out = a.x · generatorᵀ + b.
void record_generator(Recorder& rec, const LinearWeights& g, const Activations& a, Tensor& out);

}  // namespace vkf
