// Records the Transformer stack, layer by layer, as kernel dispatches: the one
// block every family but use_lite runs on. What the families' blocks differ in
// is configuration (ModelConfig): the norm (LayerNorm or RMSNorm) and where it
// sits (post-LN or pre-LN), the positions (learned, sinusoidal, T5's relative
// bias), head width and K/V heads, a plain or gated FFN and its activation, and
// biases (a LinearWeights without one has none). The layout lives here and only
// here; planning (which buffers, which shapes) is the caller's business. Every
// caller records whole stacks through record_encoder_stack and record_decoder_stack.
#pragma once

#include <string>
#include <vector>

#include "families/layers.hpp"
#include "families/transformer/weights.hpp"

namespace vkf {

/// Activation buffers for batch × len tokens. The residual stream flips
/// between two buffers where that saves a copy: x() is where it is now, y() the
/// other one. The embedding starts every recording in the first buffer, so every
/// recording of the same stack leaves its output in the same buffer.
struct Activations {
  uint32_t batch = 0, len = 0;
  /// Scratch [batch, len, ·]: n [d], qkv [q + 2·kv] (ModelConfig::q_width, kv_width),
  /// attn and q [q], f [d_ff], and g [d_ff] for a gated FFN.
  Tensor n, qkv, attn, q, f, g;
  /// GemmArgs::variant of every linear layer: "" picks by shape; a continuous
  /// decode batch (run/decode_batch.cpp) says "gemv", whose rows each sum as
  /// they do alone, whatever the batch size.
  std::string gemm_variant;
  /// FlashAttentionArgs::variant: a decode batch says "untuned", which bypasses
  /// the tuning database, whose entries are per batch size and cache length
  /// and could sum a row differently in a batch than alone.
  std::string attention_variant;
  Activations() = default;
  Activations(Context& ctx, const ModelConfig& cfg, uint32_t batch, uint32_t len);
  Tensor& x() { return stream_[cur_]; }
  Tensor& y() { return stream_[1 - cur_]; }
  /// y() becomes the stream.
  void flip() { cur_ = 1 - cur_; }
  /// The stream goes back to the first buffer (a recording starts).
  void restart() { cur_ = 0; }

 private:
  Tensor stream_[2];  ///< [batch, len, d]
  int cur_ = 0;
};

/// Where self-attention gets its keys and values, and what it may see.
struct SelfAttentionSpec {
  const Tensor* key_padding = nullptr;  ///< [batch, ≥ kv_len] i32, nonzero = masked
  uint32_t key_padding_stride = 0;
  bool causal = false;
  /// KV cache [slots, max_len, 2·kv], f32 or f16 (K in columns [0, kv), V in [kv, 2·kv),
  /// kv = ModelConfig::kv_width()): this call's K/V rows are appended (rounded, into f16) at row
  /// `past`, and attention reads rows [0, past + len). Without a cache, K/V
  /// come from this call's projection.
  Tensor* cache = nullptr;
  uint32_t past = 0;
  uint32_t cache_batch_stride = 0;      ///< elements between sequences; 0: max_len·2·kv
  /// Or, for one token per sequence (len 1), sequence b's own row: its K/V go
  /// there and it reads rows [0, rows[b]] (key_padding masks the rest, up to
  /// the longest). A continuous batch's sequences have different lengths.
  const std::vector<uint32_t>* rows = nullptr;
  /// [heads, len, ≥ kv_len] added to every layer's scores: the stack's PositionBias, set by the stack.
  const Tensor* bias = nullptr;
  /// key_padding already hides the keys outside each query's sliding window (rows
  /// and positions differ where a shorter prompt left padding rows in the cache).
  bool key_padding_has_window = false;
  /// PositionalEncoding::Rotary: the inverse frequencies [head_dim / 2], and each
  /// token's position (the StackInput's), set by the stack.
  const Tensor* rope_inv_freq = nullptr;
  const Tensor* position_ids = nullptr;
  uint32_t pos_offset = 0;
};

/// Cross-attention keys and values: the memory projected by cross_kv.
struct CrossAttentionSpec {
  const Tensor* kv = nullptr;           ///< [batch, src_len, 2·kv], f32 or f16
  uint32_t src_len = 0;
  const Tensor* key_padding = nullptr;  ///< [batch, src_len] i32
};

/// A stack's token ids and their positions.
struct StackInput {
  const Tensor* ids = nullptr;           ///< [batch, len] i32
  const Tensor* position_ids = nullptr;  ///< [batch, len] i32; null: pos_offset + index
  uint32_t pos_offset = 0;
};

/// PositionalEncoding::RelativeBias: one stack's bucket of each relative
/// position (uploaded once) and the bias [heads, q_len, kv_cap] that the stack
/// records from its table before its first layer and every layer adds to its
/// scores. Empty for the other kinds.
struct PositionBias {
  Tensor buckets, bias;
  PositionBias() = default;
  /// `bidirectional`: an encoder's buckets (keys on both sides); else a decoder's.
  PositionBias(Context& ctx, const ModelConfig& cfg, bool bidirectional, uint32_t q_len, uint32_t kv_cap);
};

/// Self-attention of every layer of a stack: `self`, with self.cache set to
/// caches[l] for layer l when `caches` is given (the KV-cached paths), and
/// the stack's relative-position bias when the config has one.
struct StackAttention {
  SelfAttentionSpec self;
  std::vector<Tensor>* caches = nullptr;
  PositionBias* position_bias = nullptr;
};

/// The decoder's cross-attention memory: the encoder output, projected into
/// `kv` by each layer as it comes (the forward pass), or each layer's K/V
/// projected beforehand (`layer_kv`, the decode steps).
struct DecoderMemory {
  const Tensor* encoder_out = nullptr;            ///< [batch, src_len, d]
  Tensor* kv = nullptr;                           ///< [batch, src_len, 2·kv], reused by every layer
  const std::vector<Tensor>* layer_kv = nullptr;  ///< or: layer l's [batch, src_len, 2·kv]
  uint32_t src_len = 0;
  const Tensor* key_padding = nullptr;            ///< [batch, src_len] i32
};

/// The encoder stack (and the decoder-only model's causal stack) on a.x():
/// the relative-position bias (if any) as "<scope>.bias", the source embedding
/// as "<scope>.embed", each layer as "<scope>.N", the final norm (if any) under "<scope>.norm".
void record_encoder_stack(Recorder& rec, const ModelConfig& cfg, const TransformerWeights& w,
                          const std::string& scope, const StackInput& in, Activations& a,
                          const StackAttention& att);
/// Only the layers of an encoder stack, each as "<scope>.N", on the a.x() a
/// family's own embedding left (BERT's word + position + type, then LayerNorm).
/// Without a relative-position bias.
void record_encoder_layers(Recorder& rec, const ModelConfig& cfg, const std::vector<EncoderLayerWeights>& layers,
                           const std::string& scope, Activations& a, const StackAttention& att);
/// The decoder stack on a.x(), scoped like the encoder's.
void record_decoder_stack(Recorder& rec, const ModelConfig& cfg, const TransformerWeights& w,
                          const std::string& scope, const StackInput& in, Activations& a,
                          const StackAttention& att, const DecoderMemory& memory);

/// HF's T5Attention._relative_position_bucket for relative positions
/// −max_rel..max_rel (max_rel = max_distance, past which buckets no longer
/// change): entry r + max_rel is the bucket of memory − query position r, in
/// fp32 as PyTorch computes it (the truncation of a logarithm decides the
/// bucket, so double precision would differ at bucket edges).
std::vector<int32_t> t5_buckets(uint32_t num_buckets, uint32_t max_distance, bool bidirectional);

/// out = memory · cross_kvᵀ + b: the decoder layer's cross-attention K and V.
void record_cross_kv(Recorder& rec, const DecoderLayerWeights& w, const Tensor& memory, Tensor& out);
/// out = a.x() · generatorᵀ + b.
void record_generator(Recorder& rec, const LinearWeights& g, Activations& a, Tensor& out);

}  // namespace vkf
