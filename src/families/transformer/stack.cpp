#include "families/transformer/stack.hpp"

#include <algorithm>
#include <cmath>

namespace vkf {
namespace {

/// Each sequence's one new K/V row into its own row s.rows[b] of the cache: one
/// copy per sequence (copy_rows writes every batch at the same row).
void append_own_rows(Recorder& rec, Activations& a, uint32_t d, const SelfAttentionSpec& s) {
  const int64_t max_len = s.cache->dim(-2);
  const Tensor src = a.qkv.reshaped({1, int64_t(a.batch), 3 * int64_t(d)});
  Tensor dst = s.cache->reshaped({1, s.cache->dim(0) * max_len, 2 * int64_t(d)});
  for (uint32_t b = 0; b < a.batch; ++b) {
    CopyRowsArgs c;
    c.src = &src;
    c.src_col = d;
    c.src_row0 = b;
    c.dst = &dst;
    c.dst_row0 = uint32_t(b * max_len + (*s.rows)[b]);
    c.width = 2 * d;
    copy_rows(rec, c);
  }
}

/// a.attn = self-attention over `in` (which holds a.x() or its norm).
void self_attention(Recorder& rec, const ModelConfig& cfg, const LinearWeights& qkv_w,
                    const Tensor& in, Activations& a, const SelfAttentionSpec& s) {
  const uint32_t d = cfg.d_model, hd = d / cfg.n_heads;
  linear(rec, in, qkv_w, a.qkv, Activation::None, nullptr, a.gemm_variant);
  FlashAttentionArgs f;
  f.q = {&a.qkv, 0};
  f.shape = {a.batch, cfg.n_heads, hd, a.len, a.len};
  if (s.cache && s.rows) {
    append_own_rows(rec, a, d, s);
    const uint32_t max_len = uint32_t(s.cache->dim(-2));
    f.k = {s.cache, 0, 2 * d, max_len * 2 * d};
    f.v = {s.cache, d, 2 * d, max_len * 2 * d};
    f.shape.kv_len = *std::max_element(s.rows->begin(), s.rows->end()) + 1;
  } else if (s.cache) {
    CopyRowsArgs c;
    c.src = &a.qkv;
    c.src_col = d;
    c.dst = s.cache;
    c.dst_row0 = s.past;
    c.dst_batch_stride = s.cache_batch_stride;
    c.batch = a.batch;
    c.rows = a.len;
    c.width = 2 * d;
    copy_rows(rec, c);
    const uint32_t bs = s.cache_batch_stride ? s.cache_batch_stride
                                             : uint32_t(s.cache->dim(-2) * s.cache->dim(-1));
    f.k = {s.cache, 0, 2 * d, bs};
    f.v = {s.cache, d, 2 * d, bs};
    f.shape.kv_len = s.past + a.len;
  } else {
    f.k = {&a.qkv, d};
    f.v = {&a.qkv, 2 * d};
  }
  f.mask.key_padding = s.key_padding;
  f.mask.key_padding_stride = s.key_padding_stride;
  f.mask.causal = s.causal && !s.rows;  // own rows: key_padding hides each sequence's future
  f.mask.causal_offset = s.cache ? s.past : 0;
  f.scale = float(1.0 / std::sqrt(double(hd)));
  f.out = &a.attn;
  flash_attention(rec, f);
}

/// a.attn = attention of queries `in` over the memory's keys and values.
void cross_attention(Recorder& rec, const ModelConfig& cfg, const DecoderLayerWeights& w,
                     const Tensor& in, Activations& a, const CrossAttentionSpec& c) {
  const uint32_t d = cfg.d_model, hd = d / cfg.n_heads;
  linear(rec, in, w.cross_q, a.q, Activation::None, nullptr, a.gemm_variant);
  FlashAttentionArgs f;
  f.q = {&a.q, 0};
  f.k = {c.kv, 0};
  f.v = {c.kv, d};
  f.shape = {a.batch, cfg.n_heads, hd, a.len, c.src_len};
  f.mask.key_padding = c.key_padding;
  f.scale = float(1.0 / std::sqrt(double(hd)));
  f.out = &a.attn;
  flash_attention(rec, f);
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

// Post-LN (the paper, BERT): x = LN(x + SA(x)); x = LN(x + FF(x)).
// Pre-LN (GPT-2):            x = x + SA(LN(x)); x = x + FF(LN(x)).
/// One nn.TransformerEncoderLayer on a.x().
void record_encoder_layer(Recorder& rec, const ModelConfig& cfg, const EncoderLayerWeights& w,
                          Activations& a, const SelfAttentionSpec& self) {
  const Activation act = cfg.activation;
  if (!cfg.norm_first) {
    self_attention(rec, cfg, w.qkv, a.x(), a, self);
    linear(rec, a.attn, w.attn_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    layer_norm(rec, cfg, w.norm1, a.y(), a.x());
    linear(rec, a.x(), w.ff1, a.f, act, nullptr, a.gemm_variant);
    linear(rec, a.f, w.ff2, a.y(), Activation::None, &a.x(), a.gemm_variant);
    layer_norm(rec, cfg, w.norm2, a.y(), a.x());
  } else {
    layer_norm(rec, cfg, w.norm1, a.x(), a.n);
    self_attention(rec, cfg, w.qkv, a.n, a, self);
    linear(rec, a.attn, w.attn_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    layer_norm(rec, cfg, w.norm2, a.y(), a.n);
    linear(rec, a.n, w.ff1, a.f, act, nullptr, a.gemm_variant);
    linear(rec, a.f, w.ff2, a.x(), Activation::None, &a.y(), a.gemm_variant);
  }
}

/// One nn.TransformerDecoderLayer on a.x().
void record_decoder_layer(Recorder& rec, const ModelConfig& cfg, const DecoderLayerWeights& w,
                          Activations& a, const SelfAttentionSpec& self, const CrossAttentionSpec& cross) {
  const Activation act = cfg.activation;
  if (!cfg.norm_first) {
    self_attention(rec, cfg, w.self_qkv, a.x(), a, self);
    linear(rec, a.attn, w.self_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    layer_norm(rec, cfg, w.norm1, a.y(), a.x());
    cross_attention(rec, cfg, w, a.x(), a, cross);
    linear(rec, a.attn, w.cross_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    layer_norm(rec, cfg, w.norm2, a.y(), a.x());
    linear(rec, a.x(), w.ff1, a.f, act, nullptr, a.gemm_variant);
    linear(rec, a.f, w.ff2, a.y(), Activation::None, &a.x(), a.gemm_variant);
    layer_norm(rec, cfg, w.norm3, a.y(), a.x());
  } else {
    layer_norm(rec, cfg, w.norm1, a.x(), a.n);
    self_attention(rec, cfg, w.self_qkv, a.n, a, self);
    linear(rec, a.attn, w.self_out, a.y(), Activation::None, &a.x(), a.gemm_variant);
    layer_norm(rec, cfg, w.norm2, a.y(), a.n);
    cross_attention(rec, cfg, w, a.n, a, cross);
    linear(rec, a.attn, w.cross_out, a.x(), Activation::None, &a.y(), a.gemm_variant);
    layer_norm(rec, cfg, w.norm3, a.x(), a.n);
    linear(rec, a.n, w.ff1, a.f, act, nullptr, a.gemm_variant);
    linear(rec, a.f, w.ff2, a.y(), Activation::None, &a.x(), a.gemm_variant);
    a.flip();
  }
}

/// a.x() = LayerNorm(a.x()) (the stacks' optional final norm, and BART's norm after the embedding).
void record_final_norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, Activations& a) {
  layer_norm(rec, cfg, w, a.x(), a.y());
  a.flip();
}

/// Layer l's self-attention: the stack's, with layer l's cache.
SelfAttentionSpec layer_self(const StackAttention& att, size_t l) {
  SelfAttentionSpec s = att.self;
  if (att.caches) s.cache = &(*att.caches)[l];
  return s;
}

}  // namespace

Activations::Activations(Context& ctx, const ModelConfig& cfg, uint32_t b, uint32_t l) : batch(b), len(l) {
  const int64_t B = b, L = l, d = cfg.d_model;
  stream_[0] = ctx.tensor({B, L, d});
  stream_[1] = ctx.tensor({B, L, d});
  n = ctx.tensor({B, L, d});
  qkv = ctx.tensor({B, L, 3 * d});
  attn = ctx.tensor({B, L, d});
  q = ctx.tensor({B, L, d});
  f = ctx.tensor({B, L, int64_t(cfg.d_ff)});
}

void record_encoder_stack(Recorder& rec, const ModelConfig& cfg, const TransformerWeights& w,
                          const std::string& scope, const StackInput& in, Activations& a,
                          const StackAttention& att) {
  rec.set_scope(scope + ".embed");
  record_embedding(rec, cfg, w.src_embed, w.src_pos, in, a);
  if (w.src_embed_norm) record_final_norm(rec, cfg, *w.src_embed_norm, a);
  record_encoder_layers(rec, cfg, w.encoder, scope, a, att);
  rec.set_scope(scope + ".norm");
  if (w.encoder_norm) record_final_norm(rec, cfg, *w.encoder_norm, a);
}

void record_encoder_layers(Recorder& rec, const ModelConfig& cfg, const std::vector<EncoderLayerWeights>& layers,
                           const std::string& scope, Activations& a, const StackAttention& att) {
  for (size_t l = 0; l < layers.size(); ++l) {
    rec.set_scope(scope + "." + std::to_string(l));
    record_encoder_layer(rec, cfg, layers[l], a, layer_self(att, l));
  }
}

void record_decoder_stack(Recorder& rec, const ModelConfig& cfg, const TransformerWeights& w,
                          const std::string& scope, const StackInput& in, Activations& a,
                          const StackAttention& att, const DecoderMemory& m) {
  rec.set_scope(scope + ".embed");
  record_embedding(rec, cfg, w.tgt_embed, w.tgt_pos, in, a);
  if (w.tgt_embed_norm) record_final_norm(rec, cfg, *w.tgt_embed_norm, a);
  for (size_t l = 0; l < w.decoder.size(); ++l) {
    rec.set_scope(scope + "." + std::to_string(l));
    if (!m.layer_kv) record_cross_kv(rec, w.decoder[l], *m.encoder_out, *m.kv);
    const CrossAttentionSpec cross{m.layer_kv ? &(*m.layer_kv)[l] : m.kv, m.src_len, m.key_padding};
    record_decoder_layer(rec, cfg, w.decoder[l], a, layer_self(att, l), cross);
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
