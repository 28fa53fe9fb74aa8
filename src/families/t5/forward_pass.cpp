// One forward pass of a padded batch: the encoder, then (T5ForConditionalGeneration)
// the decoder over the given decoder inputs and the LM head.
#include "families/padding.hpp"
#include "families/t5/family.hpp"
#include "families/t5/stack.hpp"

namespace vkf {
namespace {

/// inputs: source ids and padding [batch, src_len], then the decoder's ids [batch, tgt_len].
struct T5Plan : Plan {
  T5Activations enc, dec;
  Tensor enc_buckets, dec_buckets;  ///< t5_buckets of each stack
  Tensor enc_bias, dec_bias;        ///< [heads, len, len]
  Tensor kv;                        ///< [batch, src_len, 2·inner], reused by every decoder layer
  Tensor logits;                    ///< [batch, tgt_len, vocab]
};

}  // namespace

PaddedIds t5_pad_batch(const std::vector<Ids>& seqs, const ModelConfig& cfg, uint32_t vocab, const char* side) {
  ModelConfig by_position = cfg;
  by_position.pad_id = -1;
  return pad_batch(seqs, by_position, vocab, side);
}

ModelInfo T5Family::info(const Model& m) const {
  ModelInfo i;
  i.architecture = t5_config(m.config()).architecture;
  return i;
}

Batch T5Family::prepare(Task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                        const RunOptions& o) const {
  refuse_options(o);
  const ModelConfig& cfg = m.config();
  PaddedIds s = t5_pad_batch(src, cfg, cfg.src_vocab_size, "source"), t;
  if (cfg.encoder_decoder()) {
    if (tgt.size() != src.size())
      throw Error("a T5 model needs one decoder input per source (starting with decoder_start_token_id " +
                  std::to_string(cfg.bos_id) + "): got " + std::to_string(src.size()) + " sources and " +
                  std::to_string(tgt.size()) + " targets");
    t = t5_pad_batch(tgt, cfg, cfg.tgt_vocab_size, "target");
  } else if (!tgt.empty()) {
    throw Error("target sequences were given, but a T5EncoderModel has no decoder");
  }
  Batch b;
  b.key = {Task::Forward, s.batch, s.len, t.len};
  b.inputs = {std::move(s.ids), std::move(s.pad)};
  if (cfg.encoder_decoder()) b.inputs.push_back(std::move(t.ids));
  b.lengths = cfg.encoder_decoder() ? t.lengths : s.lengths;
  return b;
}

std::unique_ptr<Plan> T5Family::make_plan(const Model& m, const PlanKey& key) const {
  const ModelConfig& cfg = m.config();
  const T5Config& t = t5_config(cfg);
  Context& ctx = m.context();
  const uint32_t B = key.batch, S = key.len, T = key.len2, H = cfg.n_heads;
  auto p = std::make_unique<T5Plan>();
  p->what = "the forward pass";
  p->inputs = {ctx.tensor({B, S}, DType::I32), ctx.tensor({B, S}, DType::I32)};
  p->enc = T5Activations(ctx, cfg, B, S);
  const auto enc_buckets = t5_buckets(t.num_buckets, t.max_distance, true);
  p->enc_buckets = ctx.tensor_i32({int64_t(enc_buckets.size())}, enc_buckets);
  p->enc_bias = ctx.tensor({H, S, S});
  if (cfg.encoder_decoder()) {
    p->inputs.push_back(ctx.tensor({B, T}, DType::I32));
    p->dec = T5Activations(ctx, cfg, B, T);
    const auto dec_buckets = t5_buckets(t.num_buckets, t.max_distance, false);
    p->dec_buckets = ctx.tensor_i32({int64_t(dec_buckets.size())}, dec_buckets);
    p->dec_bias = ctx.tensor({H, T, T});
    p->kv = ctx.tensor({B, S, 2 * int64_t(t.inner)});
    p->logits = ctx.tensor({B, T, int64_t(cfg.tgt_vocab_size)});
  }
  return p;
}

void T5Family::record(Recorder& rec, const Model& m, Plan& plan) const {
  auto& p = static_cast<T5Plan&>(plan);
  const ModelConfig& cfg = m.config();
  const T5Weights& w = t5_weights(m);
  const uint32_t S = p.enc.len, T = p.dec.len;
  rec.set_scope("encoder.bias");
  record_t5_bias(rec, w.encoder_bias, p.enc_buckets, S, S, 0, p.enc_bias);
  record_t5_encoder(rec, cfg, w, "encoder", p.inputs[0], p.enc, {&p.inputs[1], &p.enc_bias});
  if (!cfg.encoder_decoder()) {
    p.out = p.enc.x();
    return;
  }
  rec.set_scope("decoder.bias");
  record_t5_bias(rec, w.decoder_bias, p.dec_buckets, T, T, 0, p.dec_bias);
  record_t5_decoder(rec, cfg, w, "decoder", p.inputs[2], p.dec, {nullptr, &p.dec_bias},
                    {&p.enc.x(), &p.kv, nullptr, S, &p.inputs[1]});
  rec.set_scope("lm_head");
  record_t5_head(rec, w, p.dec, p.logits);
  p.out = p.logits;
}

}  // namespace vkf
