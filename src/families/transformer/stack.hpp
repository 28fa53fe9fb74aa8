// Records the Transformer stack, layer by layer, as kernel dispatches. The
// model's layout (post-LN or pre-LN, encoder or decoder layer) lives here and
// only here; planning (which buffers, which shapes) is the caller's business.
// Every caller records whole stacks through record_encoder_stack and
// record_decoder_stack.
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
  Tensor n, qkv, attn, q, f;  ///< scratch [batch, len, d | 3d | d | d | d_ff]
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
  /// KV cache [slots, max_len, 2d] (K in columns [0, d), V in [d, 2d)): this
  /// call's K/V rows are appended at row `past`, and attention reads rows
  /// [0, past + len). Without a cache, K/V come from this call's projection.
  Tensor* cache = nullptr;
  uint32_t past = 0;
  uint32_t cache_batch_stride = 0;      ///< elements between sequences; 0: max_len·2d
  /// Or, for one token per sequence (len 1), sequence b's own row: its K/V go
  /// there and it reads rows [0, rows[b]] (key_padding masks the rest, up to
  /// the longest). A continuous batch's sequences have different lengths.
  const std::vector<uint32_t>* rows = nullptr;
};

/// Cross-attention keys and values: the memory projected by cross_kv.
struct CrossAttentionSpec {
  const Tensor* kv = nullptr;           ///< [batch, src_len, 2d]
  uint32_t src_len = 0;
  const Tensor* key_padding = nullptr;  ///< [batch, src_len] i32
};

/// A stack's token ids and their positions.
struct StackInput {
  const Tensor* ids = nullptr;           ///< [batch, len] i32
  const Tensor* position_ids = nullptr;  ///< [batch, len] i32; null: pos_offset + index
  uint32_t pos_offset = 0;
};

/// Self-attention of every layer of a stack: `self`, with self.cache set to
/// caches[l] for layer l when `caches` is given (the KV-cached paths).
struct StackAttention {
  SelfAttentionSpec self;
  std::vector<Tensor>* caches = nullptr;
};

/// The decoder's cross-attention memory: the encoder output, projected into
/// `kv` by each layer as it comes (the forward pass), or each layer's K/V
/// projected beforehand (`layer_kv`, the decode steps).
struct DecoderMemory {
  const Tensor* encoder_out = nullptr;            ///< [batch, src_len, d]
  Tensor* kv = nullptr;                           ///< [batch, src_len, 2d], reused by every layer
  const std::vector<Tensor>* layer_kv = nullptr;  ///< or: layer l's [batch, src_len, 2d]
  uint32_t src_len = 0;
  const Tensor* key_padding = nullptr;            ///< [batch, src_len] i32
};

/// The encoder stack (and the decoder-only model's causal stack) on a.x():
/// source embedding as "<scope>.embed", each layer as "<scope>.N", the final
/// norm (if any) under "<scope>.norm".
void record_encoder_stack(Recorder& rec, const ModelConfig& cfg, const TransformerWeights& w,
                          const std::string& scope, const StackInput& in, Activations& a,
                          const StackAttention& att);
/// Only the layers of an encoder stack, each as "<scope>.N", on the a.x() a
/// family's own embedding left (BERT's word + position + type, then LayerNorm).
void record_encoder_layers(Recorder& rec, const ModelConfig& cfg, const std::vector<EncoderLayerWeights>& layers,
                           const std::string& scope, Activations& a, const StackAttention& att);
/// The decoder stack on a.x(), scoped like the encoder's.
void record_decoder_stack(Recorder& rec, const ModelConfig& cfg, const TransformerWeights& w,
                          const std::string& scope, const StackInput& in, Activations& a,
                          const StackAttention& att, const DecoderMemory& memory);

/// out = memory · cross_kvᵀ + b: the decoder layer's cross-attention K and V.
void record_cross_kv(Recorder& rec, const DecoderLayerWeights& w, const Tensor& memory, Tensor& out);
/// out = a.x() · generatorᵀ + b.
void record_generator(Recorder& rec, const LinearWeights& g, Activations& a, Tensor& out);

}  // namespace vkf
