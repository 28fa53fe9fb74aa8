// The use_lite family (Universal Sentence Encoder lite, docs/model-format.md):
// its buffers for one padded batch shape, and the recording of its layers.
#pragma once

#include <memory>

#include "model/weights.hpp"
#include "vkformer/recorder.hpp"

namespace vkf {

/// Buffers of one (batch, len) shape and its command buffer, recorded once.
struct UseLitePlan {
  /// Per-layer scratch at one attention width w (embed_dim or d_model).
  struct Width {
    Tensor norm, qkv, attn;  ///< [B, L, w], [B, L, 3w], [B, L, w]
  };
  uint32_t batch = 0, len = 0;
  Tensor ids, pad;                 ///< [B, L] i32; pad: 1 past a sequence's end
  Tensor embedded;                 ///< [B, L, embed_dim]: the first layer's input
  Width first, rest;               ///< scratch of the first layer, and of the others
  Tensor residual;                 ///< [B, L, d]: the first layer's projected input
  Tensor x, mid, f;                ///< [B, L, d], [B, L, d], [B, L, d_ff]
  Tensor pooled, dense, out;       ///< [B, d]
  std::unique_ptr<Recorder> rec;
  bool recorded = false;
  UseLitePlan(Context& ctx, const ModelConfig& cfg, uint32_t batch, uint32_t len, bool profiling);
};

/// Records embedding, layers, pooling, tanh dense and L2 normalization; the
/// embeddings end in p.out.
void record_use_lite(Recorder& rec, const ModelConfig& cfg, const UseLiteWeights& w, UseLitePlan& p);

}  // namespace vkf
