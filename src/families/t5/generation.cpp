// Where generate() gets next-token logits from for a T5 model: the encoder
// once, then the KV-cached decoder (KvCacheSource), one submission per step,
// with the decoder's relative-position bias for the new query row over the
// cache; or, without the cache, the whole forward pass each step.
#include <algorithm>

#include "families/kv_cache_source.hpp"
#include "families/padding.hpp"
#include "families/recompute_source.hpp"
#include "families/t5/family.hpp"
#include "families/t5/stack.hpp"
#include "run/search.hpp"

namespace vkf {
namespace {

class T5CachedSource : public KvCacheSource {
 public:
  T5CachedSource(Session::Impl& s, PaddedIds prompt, uint32_t beam, uint32_t max_new, int32_t start)
      : KvCacheSource(s, prompt.batch, beam, s.model.config().tgt_vocab_size), cfg_(s.model.config()),
        t_(t5_config(cfg_)), w_(t5_weights(s.model)), prompt_(std::move(prompt)), start_(start) {
    // The start token at row 0, the token chosen at step t at row t + 1.
    if (max_new > cfg_.max_positions)
      throw Error(std::to_string(max_new) + " new tokens are more than a T5 decoder runs (" +
                  std::to_string(cfg_.max_positions) + ")");
    max_len_ = std::max(max_new, 1u);
    make_caches(w_.decoder.size(), max_len_, 2 * t_.inner);
    step_ = T5Activations(ctx_, cfg_, slots_, 1);
    ids_ = ctx_.tensor({slots_, 1}, DType::I32);
    const auto buckets = t5_buckets(t_.num_buckets, t_.max_distance, false);
    dec_buckets_ = ctx_.tensor_i32({int64_t(buckets.size())}, buckets);
    bias_ = ctx_.tensor({cfg_.n_heads, 1, max_len_});
  }

  // Encoder once; cross-attention K/V per layer, copied to every slot of a
  // source; then the start token's step. One submission.
  std::vector<float> start() override {
    const uint32_t S = prompt_.len, inner = t_.inner;
    Recorder rec(ctx_, s_.profiling);
    T5Activations enc(ctx_, cfg_, batch_, S);
    Tensor ids = ctx_.tensor_i32({batch_, S}, prompt_.ids);
    Tensor pad = ctx_.tensor_i32({batch_, S}, prompt_.pad);
    src_pad_ = slot_rows_i32(prompt_.pad, S);
    const auto buckets = t5_buckets(t_.num_buckets, t_.max_distance, true);
    Tensor enc_buckets = ctx_.tensor_i32({int64_t(buckets.size())}, buckets);
    Tensor enc_bias = ctx_.tensor({cfg_.n_heads, S, S});

    rec.set_scope("encoder.bias");
    record_t5_bias(rec, w_.encoder_bias, enc_buckets, S, S, 0, enc_bias);
    record_t5_encoder(rec, cfg_, w_, "encoder", ids, enc, {&pad, &enc_bias});
    Tensor kv = ctx_.tensor({batch_, S, 2 * int64_t(inner)});
    for (size_t l = 0; l < w_.decoder.size(); ++l) {
      rec.set_scope("decoder." + std::to_string(l) + ".cross_kv");
      linear(rec, enc.x(), w_.decoder[l].cross_kv, kv);
      cross_kv_.push_back(ctx_.tensor({slots_, S, 2 * int64_t(inner)}));
      to_slots(rec, kv, cross_kv_.back(), S, 2 * inner);
    }
    record_step(rec, std::vector<int32_t>(slots_, start_));
    return finish(rec);
  }

 private:
  void record_step(Recorder& rec, const std::vector<int32_t>& tokens) override {
    ctx_.write_bytes(ids_, tokens.data(), tokens.size() * 4);
    rec.set_scope("decoder.bias");
    record_t5_bias(rec, w_.decoder_bias, dec_buckets_, 1, filled_ + 1, filled_, bias_);
    record_t5_decoder(rec, cfg_, w_, "decoder", ids_, step_, {nullptr, &bias_, &caches(), filled_},
                      {nullptr, nullptr, &cross_kv_, prompt_.len, &src_pad_});
    rec.set_scope("lm_head");
    record_t5_head(rec, w_, step_, logits_);
    ++filled_;
  }

  const ModelConfig& cfg_;
  const T5Config& t_;
  const T5Weights& w_;
  PaddedIds prompt_;
  int32_t start_;  ///< the decoder's start token
  uint32_t max_len_ = 0;
  std::vector<Tensor> cross_kv_;  ///< per decoder layer [slots, src_len, 2·inner]
  T5Activations step_;
  Tensor ids_, src_pad_, dec_buckets_, bias_;
};

}  // namespace

std::unique_ptr<LogitsSource> T5Family::logits_source(Session::Impl& s, const std::vector<Ids>& src,
                                                      const GenerateOptions& o) const {
  const ModelConfig& cfg = s.model.config();
  if (!t5_config(cfg).lm_head)
    throw Error("a T5EncoderModel (hidden states only) cannot generate: generation needs "
                "T5ForConditionalGeneration's decoder and LM head");
  const int32_t start = decoder_start(cfg, o);
  if (!o.use_cache) return recompute_source(s, src, o.beam, start);
  PaddedIds prompt = t5_pad_batch(src, cfg, cfg.src_vocab_size, "source");
  return std::make_unique<T5CachedSource>(s, std::move(prompt), o.beam, o.max_new_tokens, start);
}

}  // namespace vkf
