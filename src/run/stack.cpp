#include "run/stack.hpp"

#include <cmath>
#include <utility>

namespace vkf {

OpInfo linear(Recorder& rec, const Tensor& x, const LinearWeights& w, Tensor& y, Activation act,
              const Tensor* residual) {
  GemmArgs g;
  g.x = &x;
  g.w = &w.w;
  g.bias = &w.b;
  g.residual = residual;
  g.y = &y;
  g.act = act;
  return gemm(rec, g);
}

namespace {

void norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, const Tensor& x, Tensor& y) {
  layernorm(rec, {&x, nullptr, &w.gamma, &w.beta, &y, cfg.layer_norm_eps, ""});
}

/// a.attn = self-attention over `in` (which holds a.x or its norm).
void self_attention(Recorder& rec, const ModelConfig& cfg, const LinearWeights& qkv_w,
                    const Tensor& in, Activations& a, const SelfAttentionSpec& s) {
  const uint32_t d = cfg.d_model, hd = d / cfg.n_heads;
  linear(rec, in, qkv_w, a.qkv);
  FlashAttentionArgs f;
  f.q = {&a.qkv, 0};
  f.shape = {a.batch, cfg.n_heads, hd, a.len, a.len};
  if (s.cache) {
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
  f.mask.causal = s.causal;
  f.mask.causal_offset = s.cache ? s.past : 0;
  f.scale = float(1.0 / std::sqrt(double(hd)));
  f.out = &a.attn;
  flash_attention(rec, f);
}

/// a.attn = attention of queries `in` over the memory's keys and values.
void cross_attention(Recorder& rec, const ModelConfig& cfg, const DecoderLayerWeights& w,
                     const Tensor& in, Activations& a, const CrossAttentionSpec& c) {
  const uint32_t d = cfg.d_model, hd = d / cfg.n_heads;
  linear(rec, in, w.cross_q, a.q);
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

}  // namespace

Activations::Activations(Context& ctx, const ModelConfig& cfg, uint32_t b, uint32_t l)
    : batch(b), len(l) {
  const int64_t B = b, L = l, d = cfg.d_model;
  x = ctx.tensor({B, L, d});
  y = ctx.tensor({B, L, d});
  n = ctx.tensor({B, L, d});
  qkv = ctx.tensor({B, L, 3 * d});
  attn = ctx.tensor({B, L, d});
  q = ctx.tensor({B, L, d});
  f = ctx.tensor({B, L, int64_t(cfg.d_ff)});
}

void record_embedding(Recorder& rec, const ModelConfig& cfg, const Tensor& table,
                      const Tensor& positions, const Tensor& ids, const Tensor* position_ids,
                      uint32_t pos_offset, Activations& a) {
  EmbeddingArgs e;
  e.ids = &ids;
  e.table = &table;
  e.positions = positions.empty() ? nullptr : &positions;
  e.position_ids = e.positions ? position_ids : nullptr;
  e.pos_offset = pos_offset;
  e.scale = cfg.scale_embeddings ? float(std::sqrt(double(cfg.d_model))) : 1.0f;
  e.out = &a.x;
  embedding(rec, e);
}

// Post-LN (the paper, BERT): x = LN(x + SA(x)); x = LN(x + FF(x)).
// Pre-LN (GPT-2):            x = x + SA(LN(x)); x = x + FF(LN(x)).
void record_encoder_layer(Recorder& rec, const ModelConfig& cfg, const EncoderLayerWeights& w,
                          Activations& a, const SelfAttentionSpec& self) {
  const Activation act = cfg.activation;
  if (!cfg.norm_first) {
    self_attention(rec, cfg, w.qkv, a.x, a, self);
    linear(rec, a.attn, w.attn_out, a.y, Activation::None, &a.x);
    norm(rec, cfg, w.norm1, a.y, a.x);
    linear(rec, a.x, w.ff1, a.f, act);
    linear(rec, a.f, w.ff2, a.y, Activation::None, &a.x);
    norm(rec, cfg, w.norm2, a.y, a.x);
  } else {
    norm(rec, cfg, w.norm1, a.x, a.n);
    self_attention(rec, cfg, w.qkv, a.n, a, self);
    linear(rec, a.attn, w.attn_out, a.y, Activation::None, &a.x);
    norm(rec, cfg, w.norm2, a.y, a.n);
    linear(rec, a.n, w.ff1, a.f, act);
    linear(rec, a.f, w.ff2, a.x, Activation::None, &a.y);
  }
}

void record_decoder_layer(Recorder& rec, const ModelConfig& cfg, const DecoderLayerWeights& w,
                          Activations& a, const SelfAttentionSpec& self,
                          const CrossAttentionSpec& cross) {
  const Activation act = cfg.activation;
  if (!cfg.norm_first) {
    self_attention(rec, cfg, w.self_qkv, a.x, a, self);
    linear(rec, a.attn, w.self_out, a.y, Activation::None, &a.x);
    norm(rec, cfg, w.norm1, a.y, a.x);
    cross_attention(rec, cfg, w, a.x, a, cross);
    linear(rec, a.attn, w.cross_out, a.y, Activation::None, &a.x);
    norm(rec, cfg, w.norm2, a.y, a.x);
    linear(rec, a.x, w.ff1, a.f, act);
    linear(rec, a.f, w.ff2, a.y, Activation::None, &a.x);
    norm(rec, cfg, w.norm3, a.y, a.x);
  } else {
    norm(rec, cfg, w.norm1, a.x, a.n);
    self_attention(rec, cfg, w.self_qkv, a.n, a, self);
    linear(rec, a.attn, w.self_out, a.y, Activation::None, &a.x);
    norm(rec, cfg, w.norm2, a.y, a.n);
    cross_attention(rec, cfg, w, a.n, a, cross);
    linear(rec, a.attn, w.cross_out, a.x, Activation::None, &a.y);
    norm(rec, cfg, w.norm3, a.x, a.n);
    linear(rec, a.n, w.ff1, a.f, act);
    linear(rec, a.f, w.ff2, a.y, Activation::None, &a.x);
    std::swap(a.x, a.y);
  }
}

void record_final_norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, Activations& a) {
  norm(rec, cfg, w, a.x, a.y);
  std::swap(a.x, a.y);
}

void record_cross_kv(Recorder& rec, const DecoderLayerWeights& w, const Tensor& memory, Tensor& out) {
  linear(rec, memory, w.cross_kv, out);
}

void record_generator(Recorder& rec, const LinearWeights& g, const Activations& a, Tensor& out) {
  linear(rec, a.x, g, out);
}

}  // namespace vkf
