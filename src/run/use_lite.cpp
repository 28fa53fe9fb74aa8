// Universal Sentence Encoder lite as kernel dispatches: the whole family is
// this file (its weights are loaded in src/model/weights.cpp).
//
//   x = 2·E[id] + [sin | cos](position)              embed_dim wide
//   per layer, pre-LN, input width w (embed_dim for the first, then d_model):
//     h = Attention(LN(x)) · W_outᵀ + (x · W_resᵀ if w != d_model else x)
//     x = h + FFN(LN(h))                              d_model wide
//   e = l2_normalize(tanh(mean over valid tokens(x) · W_poolᵀ + b))
//
// Padded positions are masked as keys and left out of the mean, so what they
// hold never reaches a valid token (TF.js computes them as zeros, we don't).
#include "run/use_lite.hpp"

#include <algorithm>
#include <cmath>

#include "run/session_impl.hpp"
#include "vk/context_impl.hpp"

namespace vkf {
namespace {

void norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, const Tensor& x, Tensor& y) {
  layernorm(rec, {&x, nullptr, &w.gamma, &w.beta, &y, cfg.layer_norm_eps, ""});
}

/// One layer: reads `in` (width w), leaves its output in p.x. `in` may be p.x:
/// it is last read (as the residual) before p.x is written.
void record_layer(Recorder& rec, const ModelConfig& cfg, const UseLiteLayerWeights& lw, const Tensor& in,
                  UseLitePlan::Width& s, UseLitePlan& p) {
  const uint32_t w = uint32_t(in.dim(-1)), hd = w / cfg.n_heads;
  norm(rec, cfg, lw.attn_norm, in, s.norm);
  linear(rec, s.norm, lw.qkv, s.qkv);
  FlashAttentionArgs f;
  f.q = {&s.qkv, 0};
  f.k = {&s.qkv, w};
  f.v = {&s.qkv, 2 * w};
  f.shape = {p.batch, cfg.n_heads, hd, p.len, p.len};
  f.mask.key_padding = &p.pad;
  f.scale = float(1.0 / std::sqrt(double(hd)));
  f.out = &s.attn;
  flash_attention(rec, f);
  const Tensor* res = &in;
  if (lw.residual) {
    linear(rec, in, *lw.residual, p.residual);
    res = &p.residual;
  }
  linear(rec, s.attn, lw.attn_out, p.mid, Activation::None, res);
  norm(rec, cfg, lw.ffn_norm, p.mid, p.rest.norm);
  linear(rec, p.rest.norm, lw.ff1, p.f, cfg.activation);
  linear(rec, p.f, lw.ff2, p.x, Activation::None, &p.mid);
}

UseLitePlan::Width make_width(Context& ctx, int64_t B, int64_t L, int64_t w) {
  return {ctx.tensor({B, L, w}), ctx.tensor({B, L, 3 * w}), ctx.tensor({B, L, w})};
}

}  // namespace

UseLitePlan::UseLitePlan(Context& ctx, const ModelConfig& cfg, uint32_t b, uint32_t l, bool profiling)
    : batch(b), len(l) {
  const int64_t B = b, L = l, e = cfg.embed_dim, d = cfg.d_model;
  ids = ctx.tensor({B, L}, DType::I32);
  pad = ctx.tensor({B, L}, DType::I32);
  embedded = ctx.tensor({B, L, e});
  rest = make_width(ctx, B, L, d);
  first = e == d ? rest : make_width(ctx, B, L, e);
  if (e != d) residual = ctx.tensor({B, L, d});
  x = ctx.tensor({B, L, d});
  mid = ctx.tensor({B, L, d});
  f = ctx.tensor({B, L, int64_t(cfg.d_ff)});
  pooled = ctx.tensor({B, d});
  dense = ctx.tensor({B, d});
  out = ctx.tensor({B, d});
  rec = std::make_unique<Recorder>(ctx, profiling);
}

void record_use_lite(Recorder& rec, const ModelConfig& cfg, const UseLiteWeights& w, UseLitePlan& p) {
  rec.set_scope("embed");
  EmbeddingArgs e;
  e.ids = &p.ids;
  e.table = &w.embed;
  e.positions = &w.timing;
  e.scale = cfg.embedding_scale;
  e.out = &p.embedded;
  embedding(rec, e);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    rec.set_scope("layer." + std::to_string(i));
    record_layer(rec, cfg, w.layers[i], i == 0 ? p.embedded : p.x, i == 0 ? p.first : p.rest, p);
  }
  rec.set_scope("pooler");
  MeanPoolArgs m;
  m.x = &p.x;
  m.key_padding = &p.pad;
  m.out = &p.pooled;
  mean_pool(rec, m);
  linear(rec, p.pooled, w.pooler, p.dense, Activation::Tanh);
  l2_normalize(rec, {&p.dense, &p.out, cfg.l2_eps, ""});
}

EmbedOutput Session::embed(const std::vector<Ids>& seqs) {
  Impl& s = *impl_;
  const ModelConfig& cfg = s.cfg;
  if (!cfg.use_lite())
    throw Error("embed: the model is a \"" + cfg.model_type + "\" model; embed() needs a sentence encoder (\"use_lite\")");
  if (seqs.empty()) throw Error("embed: no sequences were given");
  // Tokens past max_positions are dropped, as the TF graph's ClipToMaxLength does.
  EmbedOutput o;
  o.batch = uint32_t(seqs.size());
  o.dim = cfg.d_model;
  uint32_t len = 1;  // an empty sequence still has one (masked) row
  for (size_t b = 0; b < seqs.size(); ++b) {
    for (size_t i = 0; i < seqs[b].size(); ++i)
      if (seqs[b][i] < 0 || uint32_t(seqs[b][i]) >= cfg.src_vocab_size)
        throw Error("embed: sequence " + std::to_string(b + 1) + ": id " + std::to_string(seqs[b][i]) +
                    " at position " + std::to_string(i) + " is outside the vocabulary [0, " +
                    std::to_string(cfg.src_vocab_size) + ")");
    o.lengths.push_back(uint32_t(std::min<size_t>(seqs[b].size(), cfg.max_positions)));
    len = std::max(len, o.lengths.back());
  }
  std::vector<int32_t> ids(size_t(o.batch) * len, 0), pad(ids.size(), 1);
  for (uint32_t b = 0; b < o.batch; ++b)
    for (uint32_t i = 0; i < o.lengths[b]; ++i) {
      ids[size_t(b) * len + i] = seqs[b][i];
      pad[size_t(b) * len + i] = 0;
    }

  const uint64_t before = s.ctx.submissions();
  try {
    s.ctx.impl().alive("Session::embed");
    const auto key = std::make_pair(o.batch, len);
    auto& slot = s.embed_plans[key];
    if (!slot) {
      if (s.embed_plans.size() > 16) {  // keep a few shapes recorded; drop another one
        auto victim = s.embed_plans.begin();
        if (victim->first == key) ++victim;
        s.embed_plans.erase(victim);
      }
      slot = std::make_unique<UseLitePlan>(s.ctx, cfg, o.batch, len, s.profiling);
    }
    UseLitePlan& p = *slot;
    if (!p.recorded) {
      record_use_lite(*p.rec, cfg, *s.w.use_lite, p);
      p.recorded = true;
    }
    s.ctx.write_bytes(p.ids, ids.data(), ids.size() * 4);
    s.ctx.write_bytes(p.pad, pad.data(), pad.size() * 4);
    s.submit(*p.rec);
    o.data = s.ctx.read(p.out);
  } catch (const VulkanError& e) {
    if (std::string(e.what()).rfind("Session::embed", 0) == 0) throw;
    rethrow_with_context(e, "Session::embed (" + std::to_string(o.batch) +
                                (o.batch == 1 ? " sentence)" : " sentences)"));
  }
  stats_ = {};
  stats_.submissions = s.ctx.submissions() - before;
  stats_.dispatches = s.last_dispatches;
  stats_.timings = s.last_timings;
  return o;
}

}  // namespace vkf
