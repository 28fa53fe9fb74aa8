#include "families/transformer/stack.hpp"

#include <algorithm>
#include <cmath>

namespace vkf {
namespace {

/// Each sequence's one new K/V row into its own row s.rows[b] of the cache: one
/// copy per sequence (copy_rows writes every batch at the same row).
void append_own_rows(Recorder& rec, const ModelConfig& cfg, Activations& a, const SelfAttentionSpec& s) {
  const uint32_t q = cfg.q_width(), kv = cfg.kv_width();
  const int64_t max_len = s.cache->dim(-2);
  const Tensor src = a.qkv.reshaped({1, int64_t(a.batch), int64_t(q) + 2 * int64_t(kv)});
  Tensor dst = s.cache->reshaped({1, s.cache->dim(0) * max_len, 2 * int64_t(kv)});
  for (uint32_t b = 0; b < a.batch; ++b) {
    CopyRowsArgs c;
    c.src = &src;
    c.src_col = q;
    c.src_row0 = b;
    c.dst = &dst;
    c.dst_row0 = uint32_t(b * max_len + (*s.rows)[b]);
    c.width = 2 * kv;
    copy_rows(rec, c);
  }
}

/// The attention of a.attn's heads: shape, scale and variant from the config and `a`.
FlashAttentionArgs attention_args(const ModelConfig& cfg, Activations& a, uint32_t kv_len) {
  FlashAttentionArgs f;
  f.shape = {a.batch, cfg.n_heads, cfg.head_width(), a.len, kv_len, cfg.kv_heads};
  f.scale = cfg.scale_scores ? float(1.0 / std::sqrt(double(cfg.head_width()))) : 1.0f;
  f.out = &a.attn;
  f.variant = a.attention_variant;
  return f;
}

/// a.attn = self-attention over `in` (which holds a.x() or its norm).
void self_attention(Recorder& rec, const ModelConfig& cfg, const LinearWeights& qkv_w,
                    const Tensor& in, Activations& a, const SelfAttentionSpec& s) {
  const uint32_t q = cfg.q_width(), kv = cfg.kv_width(), kv_cols = 2 * kv;
  linear(rec, in, qkv_w, a.qkv, Activation::None, nullptr, a.gemm_variant);
  if (s.rope_inv_freq) {  // Q and K heads side by side in a.qkv, rotated in place before the cache copy
    RopeArgs r;
    r.x = &a.qkv;
    r.heads = cfg.n_heads + cfg.kv_head_count();
    r.head_dim = cfg.head_width();
    r.inv_freq = s.rope_inv_freq;
    r.position_ids = s.position_ids;
    r.pos_offset = s.pos_offset;
    r.interleaved = cfg.rope_interleaved;
    rope(rec, r);
  }
  FlashAttentionArgs f = attention_args(cfg, a, a.len);
  f.q = {&a.qkv, 0};
  if (s.cache && s.rows) {
    append_own_rows(rec, cfg, a, s);
    const uint32_t max_len = uint32_t(s.cache->dim(-2));
    f.k = {s.cache, 0, kv_cols, max_len * kv_cols};
    f.v = {s.cache, kv, kv_cols, max_len * kv_cols};
    f.shape.kv_len = *std::max_element(s.rows->begin(), s.rows->end()) + 1;
  } else if (s.cache) {
    CopyRowsArgs c;
    c.src = &a.qkv;
    c.src_col = q;
    c.dst = s.cache;
    c.dst_row0 = s.past;
    c.dst_batch_stride = s.cache_batch_stride;
    c.batch = a.batch;
    c.rows = a.len;
    c.width = kv_cols;
    copy_rows(rec, c);
    const uint32_t bs = s.cache_batch_stride ? s.cache_batch_stride
                                             : uint32_t(s.cache->dim(-2) * s.cache->dim(-1));
    f.k = {s.cache, 0, kv_cols, bs};
    f.v = {s.cache, kv, kv_cols, bs};
    f.shape.kv_len = s.past + a.len;
  } else {
    f.k = {&a.qkv, q};
    f.v = {&a.qkv, q + kv};
  }
  f.mask.key_padding = s.key_padding;
  f.mask.key_padding_stride = s.key_padding_stride;
  f.mask.causal = s.causal && !s.rows;  // own rows: key_padding hides each sequence's future
  f.mask.causal_offset = s.cache ? s.past : 0;
  // A continuous batch's own rows, and a cached batch of unequal prompts, carry the
  // window in key_padding (TransformerSlots::step, CachedSource::record_step).
  f.mask.window = f.mask.causal && !s.key_padding_has_window ? cfg.sliding_window : 0;
  f.bias = s.bias;
  flash_attention(rec, f);
}

/// a.attn = attention of queries `in` over the memory's keys and values (padding only, no position bias).
void cross_attention(Recorder& rec, const ModelConfig& cfg, const DecoderLayerWeights& w,
                     const Tensor& in, Activations& a, const CrossAttentionSpec& c) {
  linear(rec, in, w.cross_q, a.q, Activation::None, nullptr, a.gemm_variant);
  FlashAttentionArgs f = attention_args(cfg, a, c.src_len);
  f.q = {&a.q, 0};
  f.k = {c.kv, 0};
  f.v = {c.kv, cfg.kv_width()};
  f.mask.key_padding = c.key_padding;
  flash_attention(rec, f);
}

/// y = the config's norm of x: LayerNorm (γ, β) or RMSNorm (γ).
void block_norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, const Tensor& x, Tensor& y) {
  if (cfg.norm == NormKind::RMSNorm)
    rmsnorm(rec, {&x, &w.gamma, &y, cfg.layer_norm_eps});
  else
    layer_norm(rec, cfg, w, x, y);
}

/// out = ff2(act(ff1(in))) + residual, or gated: ff2(act(ff1(in)) ⊙ ff_up(in)) + residual.
void feed_forward(Recorder& rec, const ModelConfig& cfg, const LinearWeights& ff1, const LinearWeights& ff_up,
                  const LinearWeights& ff2, const Tensor& in, Activations& a, Tensor& out, const Tensor& residual) {
  linear(rec, in, ff1, a.f, cfg.activation, nullptr, a.gemm_variant);
  const Tensor* hidden = &a.f;
  if (cfg.gated_ffn) {
    linear(rec, in, ff_up, a.g, Activation::None, nullptr, a.gemm_variant);
    mul(rec, {&a.f, &a.g, &a.g});
    hidden = &a.g;
  }
  linear(rec, *hidden, ff2, out, Activation::None, &residual, a.gemm_variant);
}

/// a.x() = token embedding (× √d if configured) + positions; the stream starts over.
void record_embedding(Recorder& rec, const ModelConfig& cfg, const Tensor& table, const Tensor& positions,
                      const StackInput& in, Activations& a) {
  a.restart();
  EmbeddingArgs e;
  e.ids = in.ids;
  e.table = &table;
  e.positions = positions.empty() ? nullptr : &positions;
  e.position_ids = e.positions ? in.position_ids : nullptr;
  e.pos_offset = in.pos_offset;
  e.scale = cfg.scale_embeddings ? float(std::sqrt(double(cfg.d_model))) : 1.0f;
  e.out = &a.x();
  embedding(rec, e);
}

// Post-LN (the paper, BERT): x = N(x + SA(x)); x = N(x + FF(x)).
// Pre-LN (GPT-2, T5):         x = x + SA(N(x)); x = x + FF(N(x)).
// N is the config's norm (block_norm), FF plain or gated (feed_forward).
/// One nn.TransformerEncoderLayer on a.x().
void record_encoder_layer(Recorder& rec, const ModelConfig& cfg, const EncoderLayerWeights& w,
                          Activations& a, const SelfAttentionSpec& self) {
  if (!cfg.norm_first) {
    self_attention(rec, cfg, w.qkv, a.x(), a, self);
    linear(rec, a.attn, w.attn_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    block_norm(rec, cfg, w.norm1, a.y(), a.x());
    feed_forward(rec, cfg, w.ff1, w.ff_up, w.ff2, a.x(), a, a.y(), a.x());
    block_norm(rec, cfg, w.norm2, a.y(), a.x());
  } else {
    block_norm(rec, cfg, w.norm1, a.x(), a.n);
    self_attention(rec, cfg, w.qkv, a.n, a, self);
    linear(rec, a.attn, w.attn_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    block_norm(rec, cfg, w.norm2, a.y(), a.n);
    feed_forward(rec, cfg, w.ff1, w.ff_up, w.ff2, a.n, a, a.x(), a.y());
  }
}

/// One nn.TransformerDecoderLayer on a.x().
void record_decoder_layer(Recorder& rec, const ModelConfig& cfg, const DecoderLayerWeights& w,
                          Activations& a, const SelfAttentionSpec& self, const CrossAttentionSpec& cross) {
  if (!cfg.norm_first) {
    self_attention(rec, cfg, w.self_qkv, a.x(), a, self);
    linear(rec, a.attn, w.self_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    block_norm(rec, cfg, w.norm1, a.y(), a.x());
    cross_attention(rec, cfg, w, a.x(), a, cross);
    linear(rec, a.attn, w.cross_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    block_norm(rec, cfg, w.norm2, a.y(), a.x());
    feed_forward(rec, cfg, w.ff1, w.ff_up, w.ff2, a.x(), a, a.y(), a.x());
    block_norm(rec, cfg, w.norm3, a.y(), a.x());
  } else {
    block_norm(rec, cfg, w.norm1, a.x(), a.n);
    self_attention(rec, cfg, w.self_qkv, a.n, a, self);
    linear(rec, a.attn, w.self_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    block_norm(rec, cfg, w.norm2, a.y(), a.n);
    cross_attention(rec, cfg, w, a.n, a, cross);
    linear(rec, a.attn, w.cross_out, a.x(), Activation::None, &a.y(), a.gemm_variant);
    block_norm(rec, cfg, w.norm3, a.x(), a.n);
    feed_forward(rec, cfg, w.ff1, w.ff_up, w.ff2, a.n, a, a.y(), a.x());
    a.flip();
  }
}

/// a.x() = norm(a.x()) (the stacks' optional final norm, and BART's norm after the embedding).
void record_final_norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, Activations& a) {
  block_norm(rec, cfg, w, a.x(), a.y());
  a.flip();
}

/// The stack's self-attention with its relative-position bias (if the config
/// has one) recorded from `table` for this call's queries and keys.
SelfAttentionSpec stack_self(Recorder& rec, const ModelConfig& cfg, const Tensor& table, const Tensor& inv_freq,
                             const StackInput& in, const Activations& a, const StackAttention& att,
                             const std::string& scope) {
  SelfAttentionSpec s = att.self;
  if (cfg.positional_encoding == PositionalEncoding::Rotary) {
    if (inv_freq.empty()) throw Error("internal: a rotary stack was recorded without its inverse frequencies");
    s.rope_inv_freq = &inv_freq;
    s.position_ids = in.position_ids;
    s.pos_offset = in.pos_offset;
    return s;
  }
  if (cfg.positional_encoding != PositionalEncoding::RelativeBias) return s;
  if (!att.position_bias || att.position_bias->bias.empty())
    throw Error("internal: a relative-position bias stack was recorded without its PositionBias");
  if (s.rows) throw Error("a relative-position bias needs one position per call, not one row per sequence");
  rec.set_scope(scope + ".bias");
  const uint32_t past = s.cache || att.caches ? s.past : 0;  // queries after the cached rows
  PositionBiasArgs p;
  p.table = &table;
  p.buckets = &att.position_bias->buckets;
  p.q_len = a.len;
  p.kv_len = past + a.len;
  p.q_offset = past;
  p.out = &att.position_bias->bias;
  position_bias(rec, p);
  s.bias = &att.position_bias->bias;
  return s;
}

/// Layer l's self-attention: the stack's, with layer l's cache.
SelfAttentionSpec layer_self(const SelfAttentionSpec& self, const StackAttention& att, size_t l) {
  SelfAttentionSpec s = self;
  if (att.caches) s.cache = &(*att.caches)[l];
  return s;
}

}  // namespace

Activations::Activations(Context& ctx, const ModelConfig& cfg, uint32_t b, uint32_t l) : batch(b), len(l) {
  const int64_t B = b, L = l, d = cfg.d_model, qw = cfg.q_width(), kv = cfg.kv_width(), ff = cfg.d_ff;
  stream_[0] = ctx.tensor({B, L, d});
  stream_[1] = ctx.tensor({B, L, d});
  n = ctx.tensor({B, L, d});
  qkv = ctx.tensor({B, L, qw + 2 * kv});
  attn = ctx.tensor({B, L, qw});
  q = ctx.tensor({B, L, qw});
  f = ctx.tensor({B, L, ff});
  if (cfg.gated_ffn) g = ctx.tensor({B, L, ff});
}

PositionBias::PositionBias(Context& ctx, const ModelConfig& cfg, bool bidirectional, uint32_t q_len,
                           uint32_t kv_cap) {
  const auto table = t5_buckets(cfg.relative_buckets, cfg.relative_max_distance, bidirectional);
  buckets = ctx.tensor_i32({int64_t(table.size())}, table);
  bias = ctx.tensor({cfg.n_heads, q_len, kv_cap});
}

void record_encoder_stack(Recorder& rec, const ModelConfig& cfg, const TransformerWeights& w,
                          const std::string& scope, const StackInput& in, Activations& a,
                          const StackAttention& att) {
  const SelfAttentionSpec self = stack_self(rec, cfg, w.src_position_bias, w.rope_inv_freq, in, a, att, scope);
  rec.set_scope(scope + ".embed");
  record_embedding(rec, cfg, w.src_embed, w.src_pos, in, a);
  if (w.src_embed_norm) record_final_norm(rec, cfg, *w.src_embed_norm, a);
  for (size_t l = 0; l < w.encoder.size(); ++l) {
    rec.set_scope(scope + "." + std::to_string(l));
    record_encoder_layer(rec, cfg, w.encoder[l], a, layer_self(self, att, l));
  }
  rec.set_scope(scope + ".norm");
  if (w.encoder_norm) record_final_norm(rec, cfg, *w.encoder_norm, a);
}

void record_encoder_layers(Recorder& rec, const ModelConfig& cfg, const std::vector<EncoderLayerWeights>& layers,
                           const std::string& scope, Activations& a, const StackAttention& att) {
  for (size_t l = 0; l < layers.size(); ++l) {
    rec.set_scope(scope + "." + std::to_string(l));
    record_encoder_layer(rec, cfg, layers[l], a, layer_self(att.self, att, l));
  }
}

void record_decoder_stack(Recorder& rec, const ModelConfig& cfg, const TransformerWeights& w,
                          const std::string& scope, const StackInput& in, Activations& a,
                          const StackAttention& att, const DecoderMemory& m) {
  const SelfAttentionSpec self = stack_self(rec, cfg, w.tgt_position_bias, w.rope_inv_freq, in, a, att, scope);
  rec.set_scope(scope + ".embed");
  record_embedding(rec, cfg, w.tgt_embed, w.tgt_pos, in, a);
  if (w.tgt_embed_norm) record_final_norm(rec, cfg, *w.tgt_embed_norm, a);
  for (size_t l = 0; l < w.decoder.size(); ++l) {
    rec.set_scope(scope + "." + std::to_string(l));
    if (!m.layer_kv) record_cross_kv(rec, w.decoder[l], *m.encoder_out, *m.kv);
    const CrossAttentionSpec cross{m.layer_kv ? &(*m.layer_kv)[l] : m.kv, m.src_len, m.key_padding};
    record_decoder_layer(rec, cfg, w.decoder[l], a, layer_self(self, att, l), cross);
  }
  rec.set_scope(scope + ".norm");
  if (w.decoder_norm) record_final_norm(rec, cfg, *w.decoder_norm, a);
}

void record_cross_kv(Recorder& rec, const DecoderLayerWeights& w, const Tensor& memory, Tensor& out) {
  linear(rec, memory, w.cross_kv, out);
}

void record_generator(Recorder& rec, const LinearWeights& g, Activations& a, Tensor& out) {
  linear(rec, a.x(), g, out, Activation::None, nullptr, a.gemm_variant);
}

}  // namespace vkf
