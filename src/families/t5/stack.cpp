#include "families/t5/stack.hpp"

namespace vkf {
namespace {

/// y = RMSNorm(x)·γ with T5LayerNorm's semantics (fp32 mean square, no mean, no β).
void rms(Recorder& rec, const ModelConfig& cfg, const Tensor& gamma, const Tensor& x, Tensor& y) {
  rmsnorm(rec, {&x, &gamma, &y, cfg.layer_norm_eps});
}

/// a.attn = attention of a.qkv's queries over K/V, with T5's score scale of 1.
void attend(Recorder& rec, const ModelConfig& cfg, T5Activations& a, HeadsView q, HeadsView k, HeadsView v,
            uint32_t kv_len, AttentionMask mask, const Tensor* bias) {
  const T5Config& t = t5_config(cfg);
  FlashAttentionArgs f;
  f.q = q;
  f.k = k;
  f.v = v;
  f.shape = {a.batch, cfg.n_heads, t.d_kv, a.len, kv_len};
  f.mask = mask;
  f.scale = 1.0f;  // T5 folds 1/√d_kv into the initialisation of q
  f.bias = bias;
  f.out = &a.attn;
  flash_attention(rec, f);
}

/// x += SelfAttention(RMSNorm(x)).
void self_block(Recorder& rec, const ModelConfig& cfg, const T5BlockWeights& w, T5Activations& a,
                const T5SelfAttention& s, Tensor* cache, bool causal) {
  const uint32_t inner = t5_config(cfg).inner;
  rms(rec, cfg, w.self_norm, a.x(), a.n);
  linear(rec, a.n, w.qkv, a.qkv);
  AttentionMask m;
  m.key_padding = s.key_padding;
  m.causal = causal;
  m.causal_offset = s.past;
  if (cache) {  // append this step's K/V rows, attend over every row so far
    CopyRowsArgs c;
    c.src = &a.qkv;
    c.src_col = inner;
    c.dst = cache;
    c.dst_row0 = s.past;
    c.batch = a.batch;
    c.rows = a.len;
    c.width = 2 * inner;
    copy_rows(rec, c);
    attend(rec, cfg, a, {&a.qkv, 0}, {cache, 0}, {cache, inner}, s.past + a.len, m, s.bias);
  } else {
    attend(rec, cfg, a, {&a.qkv, 0}, {&a.qkv, inner}, {&a.qkv, 2 * inner}, a.len, m, s.bias);
  }
  linear(rec, a.attn, w.self_o, a.y(), Activation::None, &a.x());
  a.flip();
}

/// x += EncDecAttention(RMSNorm(x), memory): no position bias, padding only.
void cross_block(Recorder& rec, const ModelConfig& cfg, const T5BlockWeights& w, T5Activations& a,
                 const Tensor& kv, const T5Memory& m) {
  const uint32_t inner = t5_config(cfg).inner;
  rms(rec, cfg, w.cross_norm, a.x(), a.n);
  linear(rec, a.n, w.cross_q, a.q);
  AttentionMask mask;
  mask.key_padding = m.key_padding;
  attend(rec, cfg, a, {&a.q, 0}, {&kv, 0}, {&kv, inner}, m.src_len, mask, nullptr);
  linear(rec, a.attn, w.cross_o, a.y(), Activation::None, &a.x());
  a.flip();
}

/// x += wo · act(wi · RMSNorm(x)), or gated: wo · (act(wi_0 · n) ⊙ wi_1 · n).
void ff_block(Recorder& rec, const ModelConfig& cfg, const T5BlockWeights& w, T5Activations& a) {
  rms(rec, cfg, w.ff_norm, a.x(), a.n);
  linear(rec, a.n, w.wi, a.f, cfg.activation);
  if (t5_config(cfg).gated) {
    linear(rec, a.n, w.wi_1, a.g);
    mul(rec, {&a.f, &a.g, &a.g});
    linear(rec, a.g, w.wo, a.y(), Activation::None, &a.x());
  } else {
    linear(rec, a.f, w.wo, a.y(), Activation::None, &a.x());
  }
  a.flip();
}

void embed(Recorder& rec, const T5Weights& w, const Tensor& ids, T5Activations& a) {
  a.restart();
  EmbeddingArgs e;
  e.ids = &ids;
  e.table = &w.shared;
  e.out = &a.x();
  embedding(rec, e);
}

/// a.x() = RMSNorm(a.x()): the stack's final_layer_norm.
void final_norm(Recorder& rec, const ModelConfig& cfg, const Tensor& gamma, T5Activations& a) {
  rms(rec, cfg, gamma, a.x(), a.y());
  a.flip();
}

}  // namespace

T5Activations::T5Activations(Context& ctx, const ModelConfig& cfg, uint32_t b, uint32_t l) : batch(b), len(l) {
  const T5Config& t = t5_config(cfg);
  const int64_t B = b, L = l, d = cfg.d_model, in = t.inner, ff = cfg.d_ff;
  stream_[0] = ctx.tensor({B, L, d});
  stream_[1] = ctx.tensor({B, L, d});
  n = ctx.tensor({B, L, d});
  qkv = ctx.tensor({B, L, 3 * in});
  attn = ctx.tensor({B, L, in});
  q = ctx.tensor({B, L, in});
  f = ctx.tensor({B, L, ff});
  if (t.gated) g = ctx.tensor({B, L, ff});
}

void record_t5_bias(Recorder& rec, const Tensor& table, const Tensor& buckets, uint32_t q_len, uint32_t kv_len,
                    uint32_t q_offset, Tensor& out) {
  PositionBiasArgs p;
  p.table = &table;
  p.buckets = &buckets;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.q_offset = q_offset;
  p.out = &out;
  position_bias(rec, p);
}

void record_t5_encoder(Recorder& rec, const ModelConfig& cfg, const T5Weights& w, const std::string& scope,
                       const Tensor& ids, T5Activations& a, const T5SelfAttention& self) {
  rec.set_scope(scope + ".embed");
  embed(rec, w, ids, a);
  for (size_t l = 0; l < w.encoder.size(); ++l) {
    rec.set_scope(scope + "." + std::to_string(l));
    self_block(rec, cfg, w.encoder[l], a, self, nullptr, false);
    ff_block(rec, cfg, w.encoder[l], a);
  }
  rec.set_scope(scope + ".norm");
  final_norm(rec, cfg, w.encoder_norm, a);
}

void record_t5_decoder(Recorder& rec, const ModelConfig& cfg, const T5Weights& w, const std::string& scope,
                       const Tensor& ids, T5Activations& a, const T5SelfAttention& self, const T5Memory& m) {
  rec.set_scope(scope + ".embed");
  embed(rec, w, ids, a);
  for (size_t l = 0; l < w.decoder.size(); ++l) {
    rec.set_scope(scope + "." + std::to_string(l));
    self_block(rec, cfg, w.decoder[l], a, self, self.caches ? &(*self.caches)[l] : nullptr, true);
    if (!m.layer_kv) linear(rec, *m.encoder_out, w.decoder[l].cross_kv, *m.kv);
    cross_block(rec, cfg, w.decoder[l], a, m.layer_kv ? (*m.layer_kv)[l] : *m.kv, m);
    ff_block(rec, cfg, w.decoder[l], a);
  }
  rec.set_scope(scope + ".norm");
  final_norm(rec, cfg, w.decoder_norm, a);
}

void record_t5_head(Recorder& rec, const T5Weights& w, T5Activations& a, Tensor& out) {
  linear(rec, a.x(), *w.lm_head, out);
}

}  // namespace vkf
