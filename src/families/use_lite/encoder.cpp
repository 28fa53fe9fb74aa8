// Universal Sentence Encoder lite as kernel dispatches:
//
//   x = 2·E[id] + [sin | cos](position)              embed_dim wide
//   per layer, pre-LN, input width w (embed_dim for the first, then d_model):
//     h = Attention(LN(x)) · W_outᵀ + (x · W_resᵀ if w != d_model else x)
//     x = h + FFN(LN(h))                              d_model wide
//   e = l2_normalize(tanh(mean over valid tokens(x) · W_poolᵀ + b))
//
// Padded positions are masked as keys and left out of the mean, so what they
// hold never reaches a valid token (TF.js computes them as zeros, we don't).
#include <algorithm>
#include <cmath>

#include "families/layers.hpp"
#include "families/use_lite/config.hpp"
#include "families/use_lite/family.hpp"
#include "families/use_lite/weights.hpp"

namespace vkf {
namespace {

/// Buffers of one (batch, len) shape. inputs: ids and pad [B, L] i32 (pad: 1
/// past a sequence's end); out: the embeddings [B, d].
struct UseLitePlan : Plan {
  /// Per-layer scratch at one attention width w (embed_dim or d_model).
  struct Width {
    Tensor norm, qkv, attn;  ///< [B, L, w], [B, L, 3w], [B, L, w]
  };
  uint32_t batch = 0, len = 0;
  Tensor embedded;            ///< [B, L, embed_dim]: the first layer's input
  Width first, rest;          ///< scratch of the first layer, and of the others
  Tensor residual;            ///< [B, L, d]: the first layer's projected input
  Tensor x, mid, f;           ///< [B, L, d], [B, L, d], [B, L, d_ff]
  Tensor pooled, dense;       ///< [B, d]
};

UseLitePlan::Width make_width(Context& ctx, int64_t B, int64_t L, int64_t w) {
  return {ctx.tensor({B, L, w}), ctx.tensor({B, L, 3 * w}), ctx.tensor({B, L, w})};
}

/// One layer: reads `in` (width w), leaves its output in p.x. `in` may be p.x:
/// it is last read (as the residual) before p.x is written.
void record_layer(Recorder& rec, const ModelConfig& cfg, const UseLiteLayerWeights& lw, const Tensor& in,
                  UseLitePlan::Width& s, UseLitePlan& p) {
  const uint32_t w = uint32_t(in.dim(-1)), hd = w / cfg.n_heads;
  layer_norm(rec, cfg, lw.attn_norm, in, s.norm);
  linear(rec, s.norm, lw.qkv, s.qkv);
  FlashAttentionArgs f;
  f.q = {&s.qkv, 0};
  f.k = {&s.qkv, w};
  f.v = {&s.qkv, 2 * w};
  f.shape = {p.batch, cfg.n_heads, hd, p.len, p.len};
  f.mask.key_padding = &p.inputs[1];
  f.scale = float(1.0 / std::sqrt(double(hd)));
  f.out = &s.attn;
  flash_attention(rec, f);
  const Tensor* res = &in;
  if (lw.residual) {
    linear(rec, in, *lw.residual, p.residual);
    res = &p.residual;
  }
  linear(rec, s.attn, lw.attn_out, p.mid, Activation::None, res);
  layer_norm(rec, cfg, lw.ffn_norm, p.mid, p.rest.norm);
  linear(rec, p.rest.norm, lw.ff1, p.f, cfg.activation);
  linear(rec, p.f, lw.ff2, p.x, Activation::None, &p.mid);
}

}  // namespace

std::string UseLiteFamily::refusal(Task task) const {
  if (task == Task::Forward)
    return "a \"use_lite\" model is a sentence encoder: it has no forward pass over tokens or generation; "
           "use Session::embed (vkformer embed)";
  if (task == Task::Generate)
    return "a \"use_lite\" model is a sentence encoder: it cannot generate; use Session::embed";
  return Family::refusal(task);
}

// Tokens past max_positions are dropped, as the TF graph's ClipToMaxLength does.
Batch UseLiteFamily::prepare(Task, const Model& m, const std::vector<Ids>& seqs, const std::vector<Ids>&,
                             const RunOptions& o) const {
  refuse_options(o);
  const ModelConfig& cfg = m.config();
  if (seqs.empty()) throw Error("embed: no sequences were given");
  Batch b;
  uint32_t len = 1;  // an empty sequence still has one (masked) row
  for (size_t i = 0; i < seqs.size(); ++i) {
    for (size_t j = 0; j < seqs[i].size(); ++j)
      if (seqs[i][j] < 0 || uint32_t(seqs[i][j]) >= cfg.src_vocab_size)
        throw Error("embed: sequence " + std::to_string(i + 1) + ": id " + std::to_string(seqs[i][j]) +
                    " at position " + std::to_string(j) + " is outside the vocabulary [0, " +
                    std::to_string(cfg.src_vocab_size) + ")");
    b.lengths.push_back(uint32_t(std::min<size_t>(seqs[i].size(), cfg.max_positions)));
    len = std::max(len, b.lengths.back());
  }
  const uint32_t batch = uint32_t(seqs.size());
  std::vector<int32_t> ids(size_t(batch) * len, 0), pad(ids.size(), 1);
  for (uint32_t i = 0; i < batch; ++i)
    for (uint32_t j = 0; j < b.lengths[i]; ++j) {
      ids[size_t(i) * len + j] = seqs[i][j];
      pad[size_t(i) * len + j] = 0;
    }
  b.key = {Task::Embed, batch, len, 0};
  b.inputs = {std::move(ids), std::move(pad)};
  return b;
}

std::unique_ptr<Plan> UseLiteFamily::make_plan(const Model& m, const PlanKey& key) const {
  const ModelConfig& cfg = m.config();
  Context& ctx = m.context();
  auto p = std::make_unique<UseLitePlan>();
  p->batch = key.batch;
  p->len = key.len;
  const int64_t B = key.batch, L = key.len, e = use_lite_config(cfg).embed_dim, d = cfg.d_model;
  p->inputs = {ctx.tensor({B, L}, DType::I32), ctx.tensor({B, L}, DType::I32)};
  p->embedded = ctx.tensor({B, L, e});
  p->rest = make_width(ctx, B, L, d);
  p->first = e == d ? p->rest : make_width(ctx, B, L, e);
  if (e != d) p->residual = ctx.tensor({B, L, d});
  p->x = ctx.tensor({B, L, d});
  p->mid = ctx.tensor({B, L, d});
  p->f = ctx.tensor({B, L, int64_t(cfg.d_ff)});
  p->pooled = ctx.tensor({B, d});
  p->dense = ctx.tensor({B, d});
  p->out = ctx.tensor({B, d});
  return p;
}

void UseLiteFamily::record(Recorder& rec, const Model& m, Plan& plan) const {
  auto& p = static_cast<UseLitePlan&>(plan);
  const ModelConfig& cfg = m.config();
  const UseLiteConfig& u = use_lite_config(cfg);
  const auto& w = static_cast<const UseLiteWeights&>(m.weights());
  rec.set_scope("embed");
  EmbeddingArgs e;
  e.ids = &p.inputs[0];
  e.table = &w.embed;
  e.positions = &w.timing;
  e.scale = u.embedding_scale;
  e.out = &p.embedded;
  embedding(rec, e);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    rec.set_scope("layer." + std::to_string(i));
    record_layer(rec, cfg, w.layers[i], i == 0 ? p.embedded : p.x, i == 0 ? p.first : p.rest, p);
  }
  rec.set_scope("pooler");
  MeanPoolArgs mp;
  mp.x = &p.x;
  mp.key_padding = &p.inputs[1];
  mp.out = &p.pooled;
  mean_pool(rec, mp);
  linear(rec, p.pooled, w.pooler, p.dense, Activation::Tanh);
  l2_normalize(rec, {&p.dense, &p.out, u.l2_eps, ""});
}

}  // namespace vkf
