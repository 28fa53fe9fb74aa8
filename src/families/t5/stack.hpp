// Records T5's encoder and decoder stacks as kernel dispatches: pre-norm
// blocks (RMSNorm, attention or FFN, residual add in the GEMM's epilogue),
// each stack's relative-position bias computed once and added by every layer's
// self-attention. Planning (which buffers, which shapes) is the caller's.
#pragma once

#include <string>
#include <vector>

#include "families/layers.hpp"
#include "families/t5/config.hpp"
#include "families/t5/weights.hpp"

namespace vkf {

/// Activation buffers for batch × len tokens. The residual stream flips
/// between two buffers; every recording starts in the first, so recordings of
/// one stack leave their output in the same buffer.
struct T5Activations {
  uint32_t batch = 0, len = 0;
  Tensor n, qkv, attn, q, f, g;  ///< [B, L, d | 3·inner | inner | inner | d_ff | d_ff (gated)]
  T5Activations() = default;
  T5Activations(Context& ctx, const ModelConfig& cfg, uint32_t batch, uint32_t len);
  Tensor& x() { return stream_[cur_]; }
  Tensor& y() { return stream_[1 - cur_]; }
  void flip() { cur_ = 1 - cur_; }
  void restart() { cur_ = 0; }

 private:
  Tensor stream_[2];  ///< [B, L, d]
  int cur_ = 0;
};

/// A stack's self-attention: padding, the bias every layer adds, and (decode
/// steps) the KV caches the new rows are appended to at row `past`.
struct T5SelfAttention {
  const Tensor* key_padding = nullptr;  ///< [batch, ≥ kv_len] i32, nonzero = masked
  const Tensor* bias = nullptr;         ///< [heads, len, ≥ kv_len] from record_t5_bias
  std::vector<Tensor>* caches = nullptr;  ///< per layer [slots, max_len, 2·inner] (K | V)
  uint32_t past = 0;
};

/// Cross-attention keys and values: projected from the encoder output by each
/// layer as it comes (`encoder_out` into `kv`), or each layer's beforehand (`layer_kv`).
struct T5Memory {
  const Tensor* encoder_out = nullptr;            ///< [batch, src_len, d]
  Tensor* kv = nullptr;                           ///< [batch, src_len, 2·inner] scratch
  const std::vector<Tensor>* layer_kv = nullptr;  ///< or layer l's [batch, src_len, 2·inner]
  uint32_t src_len = 0;
  const Tensor* key_padding = nullptr;            ///< [batch, src_len] i32
};

/// out = the bias of `q_len` queries from position q_offset over kv_len keys,
/// from a stack's bucket table and the buckets (t5_buckets) on the device.
void record_t5_bias(Recorder& rec, const Tensor& table, const Tensor& buckets, uint32_t q_len, uint32_t kv_len,
                    uint32_t q_offset, Tensor& out);
/// The encoder on ids [batch, len]: embedding, blocks ("<scope>.N"), final norm; output a.x().
void record_t5_encoder(Recorder& rec, const ModelConfig& cfg, const T5Weights& w, const std::string& scope,
                       const Tensor& ids, T5Activations& a, const T5SelfAttention& self);
/// The decoder on ids [batch, len], as the encoder, with cross-attention over `memory`.
void record_t5_decoder(Recorder& rec, const ModelConfig& cfg, const T5Weights& w, const std::string& scope,
                       const Tensor& ids, T5Activations& a, const T5SelfAttention& self, const T5Memory& memory);
/// out = a.x() · lm_headᵀ (the d^-0.5 of a tied head is in the final norm).
void record_t5_head(Recorder& rec, const T5Weights& w, T5Activations& a, Tensor& out);

}  // namespace vkf
