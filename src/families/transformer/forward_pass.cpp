// One forward pass of a padded batch: its buffers per shape, and its
// recording (the encoder stack, the decoder stack, the generator).
#include "families/padding.hpp"
#include "families/transformer/family.hpp"
#include "families/transformer/stack.hpp"

namespace vkf {
namespace {

/// inputs: source ids and padding mask [batch, src_len], then (enc–dec) the
/// target's [batch, tgt_len].
struct ForwardPlan : Plan {
  Activations enc, dec;
  PositionBias enc_bias, dec_bias;  ///< PositionalEncoding::RelativeBias only
  Tensor cross_kv;  ///< [batch, src_len, 2·kv], reused by every decoder layer
  Tensor logits;    ///< [batch, len, vocab] when there is a generator
};

}  // namespace

Batch TransformerFamily::prepare(Task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                                 const RunOptions& o) const {
  refuse_options(o);
  const ModelConfig& cfg = m.config();
  const bool encdec = cfg.encoder_decoder();
  PaddedIds s = pad_batch(src, cfg, cfg.src_vocab_size, "source"), t;
  if (encdec) {
    if (tgt.size() != src.size())
      throw Error("an encoder-decoder model needs one target sequence per source: got " +
                  std::to_string(src.size()) + " sources and " + std::to_string(tgt.size()) + " targets");
    t = pad_batch(tgt, cfg, cfg.tgt_vocab_size, "target");
  } else if (!tgt.empty()) {
    throw Error("target sequences were given, but the model has no decoder (decoder_layers is 0)");
  }
  Batch b;
  b.key = {Task::Forward, s.batch, s.len, t.len};
  b.inputs = {std::move(s.ids), std::move(s.pad)};
  if (encdec) {
    b.inputs.push_back(std::move(t.ids));
    b.inputs.push_back(std::move(t.pad));
  }
  b.lengths = encdec ? t.lengths : s.lengths;
  return b;
}

std::unique_ptr<Plan> TransformerFamily::make_plan(const Model& m, const PlanKey& key) const {
  const ModelConfig& cfg = m.config();
  Context& ctx = m.context();
  const uint32_t B = key.batch, S = key.len, T = key.len2;
  auto p = std::make_unique<ForwardPlan>();
  p->what = "the forward pass";
  p->inputs = {ctx.tensor({B, S}, DType::I32), ctx.tensor({B, S}, DType::I32)};
  p->enc = Activations(ctx, cfg, B, S);
  const bool relative = cfg.positional_encoding == PositionalEncoding::RelativeBias;
  if (relative) p->enc_bias = PositionBias(ctx, cfg, !cfg.causal, S, S);
  if (cfg.encoder_decoder()) {
    p->inputs.push_back(ctx.tensor({B, T}, DType::I32));
    p->inputs.push_back(ctx.tensor({B, T}, DType::I32));
    p->dec = Activations(ctx, cfg, B, T);
    if (relative) p->dec_bias = PositionBias(ctx, cfg, false, T, T);
    p->cross_kv = ctx.tensor({B, S, 2 * int64_t(cfg.kv_width())});
  }
  if (transformer_weights(m).generator)
    p->logits = ctx.tensor({B, int64_t(cfg.encoder_decoder() ? T : S), int64_t(cfg.out_vocab())});
  return p;
}

void TransformerFamily::record(Recorder& rec, const Model& m, Plan& plan) const {
  auto& p = static_cast<ForwardPlan&>(plan);
  const ModelConfig& cfg = m.config();
  const TransformerWeights& w = transformer_weights(m);
  const Tensor &src_ids = p.inputs[0], &src_pad = p.inputs[1];
  record_encoder_stack(rec, cfg, w, "encoder", {&src_ids}, p.enc,
                       {{&src_pad, p.enc.len, cfg.causal}, nullptr, &p.enc_bias});
  Activations* last = &p.enc;
  if (cfg.encoder_decoder()) {
    record_decoder_stack(rec, cfg, w, "decoder", {&p.inputs[2]}, p.dec,
                         {{&p.inputs[3], p.dec.len, true}, nullptr, &p.dec_bias},
                         {&p.enc.x(), &p.cross_kv, nullptr, p.enc.len, &src_pad});
    last = &p.dec;
  }
  rec.set_scope("generator");
  if (w.generator) {
    record_generator(rec, *w.generator, *last, p.logits);
    p.out = p.logits;
  } else {
    p.out = last->x();
  }
}

}  // namespace vkf
