// Where generate() gets next-token logits from for a transformer model: the
// KV-cached decoder (one submission per step), or the whole forward pass
// recomputed over each hypothesis (the reference the cache is checked against).
#include <algorithm>

#include "families/kv_cache_source.hpp"
#include "families/padding.hpp"
#include "families/recompute_source.hpp"
#include "families/transformer/family.hpp"
#include "families/transformer/stack.hpp"
#include "run/logits_source.hpp"
#include "run/search.hpp"
#include "run/session_impl.hpp"

namespace vkf {
namespace {

/// The encoder once, then one submission per step: each decoder layer keeps
/// its self-attention K/V in a cache (KvCacheSource), and cross-attention K/V
/// are computed once.
class CachedSource : public KvCacheSource {
 public:
  CachedSource(Session::Impl& s, const std::vector<Ids>& src, uint32_t beam, uint32_t max_new, int32_t start)
      : CachedSource(s, pad_batch(src, s.model.config(), s.model.config().src_vocab_size, "source"), beam,
                     max_new, start) {}

  std::vector<float> start() override {
    return cfg_.encoder_decoder() ? start_encdec() : start_decoder_only();
  }

 private:
  CachedSource(Session::Impl& s, PaddedIds prompt, uint32_t beam, uint32_t max_new, int32_t start)
      : KvCacheSource(s, prompt.batch, beam, s.model.config().out_vocab()), cfg_(s.model.config()),
        w_(transformer_weights(s.model)), prompt_(std::move(prompt)), start_(start) {
    const bool encdec = cfg_.encoder_decoder();
    const uint32_t d = cfg_.d_model;
    // Enc–dec: BOS at position 0, the token chosen at step t fed at position t + 1.
    // Decoder-only: the prompt fills rows [0, P), new tokens follow at P, P + 1...
    const uint64_t need = encdec ? max_new : uint64_t(prompt_.len) + max_new - 1;
    if (need > cfg_.max_positions)
      throw Error(std::string(encdec ? "" : "the prompt plus ") + std::to_string(max_new) +
                  " new tokens need " + std::to_string(need) + " positions, more than the model's " +
                  std::to_string(cfg_.max_positions) + " (config.json \"" + cfg_.positions_key + "\")");
    max_len_ = uint32_t(std::max<uint64_t>(need, 1)) + (encdec ? 0 : 1);
    make_caches(encdec ? w_.decoder.size() : w_.encoder.size(), max_len_, 2 * d);
    step_ = Activations(ctx_, cfg_, slots_, 1);
    ids_ = ctx_.tensor({slots_, 1}, DType::I32);
    positions_ = ctx_.tensor({slots_, 1}, DType::I32);
  }

  /// Feeds one token per slot at row `filled_` of the caches.
  void record_step(Recorder& rec, const std::vector<int32_t>& tokens) override {
    ctx_.write_bytes(ids_, tokens.data(), tokens.size() * 4);
    if (cfg_.encoder_decoder()) {
      record_decoder_stack(rec, cfg_, w_, "decoder", {&ids_, nullptr, filled_}, step_,
                           {{nullptr, 0, true, nullptr, filled_, 0}, &caches()},
                           {nullptr, nullptr, &cross_kv_, prompt_.len, &src_pad_});
    } else {
      std::vector<int32_t> pos(slots_);
      for (uint32_t i = 0; i < slots_; ++i)  // each prompt continues at its own length
        pos[i] = int32_t(prompt_.lengths[i / beam_] + (filled_ - prompt_.len));
      ctx_.write_bytes(positions_, pos.data(), pos.size() * 4);
      record_encoder_stack(rec, cfg_, w_, "decoder", {&ids_, &positions_, 0}, step_,
                           {{&holes_, max_len_, true, nullptr, filled_, 0}, &caches()});
    }
    rec.set_scope("generator");
    record_generator(rec, *w_.generator, step_, logits_);
    ++filled_;
  }

  // Encoder once; cross-attention K/V per layer, copied to every slot of a
  // source; then the BOS step. One submission.
  std::vector<float> start_encdec() {
    const uint32_t S = prompt_.len, d = cfg_.d_model;
    Recorder rec(ctx_, s_.profiling);
    Activations enc(ctx_, cfg_, batch_, S);
    Tensor src_ids = ctx_.tensor_i32({batch_, S}, prompt_.ids);
    Tensor src_pad = ctx_.tensor_i32({batch_, S}, prompt_.pad);
    src_pad_ = slot_rows_i32(prompt_.pad, S);

    record_encoder_stack(rec, cfg_, w_, "encoder", {&src_ids}, enc, {{&src_pad, S, false}});
    Tensor kv = ctx_.tensor({batch_, S, 2 * int64_t(d)});
    for (size_t l = 0; l < w_.decoder.size(); ++l) {
      rec.set_scope("decoder." + std::to_string(l) + ".cross_kv");
      record_cross_kv(rec, w_.decoder[l], enc.x(), kv);
      cross_kv_.push_back(ctx_.tensor({slots_, S, 2 * int64_t(d)}));
      to_slots(rec, kv, cross_kv_.back(), S, 2 * d);
    }
    record_step(rec, std::vector<int32_t>(slots_, start_));
    return finish(rec);
  }

  // The prompt runs through the causal stack once, filling the caches of each
  // source's first slot; the other slots copy them. One submission.
  std::vector<float> start_decoder_only() {
    const uint32_t P = prompt_.len, V = cfg_.out_vocab();
    Recorder rec(ctx_, s_.profiling);
    Activations pre(ctx_, cfg_, batch_, P);
    Tensor ids = ctx_.tensor_i32({batch_, P}, prompt_.ids);
    Tensor pad = ctx_.tensor_i32({batch_, P}, prompt_.pad);
    std::vector<int32_t> holes(size_t(slots_) * max_len_, 0);
    for (uint32_t i = 0; i < slots_; ++i)  // rows between a prompt's end and P are padding
      for (uint32_t r = 0; r < P; ++r) holes[size_t(i) * max_len_ + r] = prompt_.pad[size_t(i / beam_) * P + r];
    holes_ = ctx_.tensor_i32({slots_, max_len_}, holes);

    const uint32_t stride = beam_ * max_len_ * 2 * cfg_.d_model;  // each source's first slot
    record_encoder_stack(rec, cfg_, w_, "prompt", {&ids}, pre, {{&pad, P, true, nullptr, 0, stride}, &caches()});
    // Only each prompt's last row goes through the generator and is read back.
    rec.set_scope("generator");
    const int64_t d = cfg_.d_model;
    Tensor rows = pre.x().reshaped({1, int64_t(batch_) * P, d}), last = ctx_.tensor({1, batch_, d});
    for (uint32_t b = 0; b < batch_; ++b) {
      CopyRowsArgs c;
      c.src = &rows;
      c.src_row0 = b * P + prompt_.lengths[b] - 1;
      c.dst = &last;
      c.dst_row0 = b;
      c.width = uint32_t(d);
      copy_rows(rec, c);
    }
    Tensor logits = ctx_.tensor({batch_, 1, int64_t(V)});
    linear(rec, last.reshaped({batch_, 1, d}), *w_.generator, logits);
    filled_ = P;
    if (beam_ > 1) reorder(rec, first_slot_);
    s_.submit(rec);

    std::vector<float> all = ctx_.read(logits), out(size_t(slots_) * V);
    for (uint32_t i = 0; i < slots_; ++i) std::copy_n(all.begin() + size_t(i / beam_) * V, V, out.begin() + size_t(i) * V);
    return out;
  }

  const ModelConfig& cfg_;
  const TransformerWeights& w_;
  PaddedIds prompt_;
  int32_t start_;  ///< the decoder's start token (enc–dec)
  uint32_t max_len_ = 0;
  std::vector<Tensor> cross_kv_;   ///< per decoder layer [slots, src_len, 2d]
  Tensor src_pad_, holes_;
  Activations step_;
  Tensor ids_, positions_;
};

}  // namespace

std::unique_ptr<LogitsSource> TransformerFamily::logits_source(Session::Impl& s, const std::vector<Ids>& src,
                                                               const GenerateOptions& o) const {
  if (!transformer_weights(s.model).generator)
    throw Error("generation needs a generator (the model has no generator.weight)");
  const int32_t start = decoder_start(s.model.config(), o);
  if (o.use_cache) return std::make_unique<CachedSource>(s, src, o.beam, o.max_new_tokens, start);
  return recompute_source(s, src, o.beam, start);
}

}  // namespace vkf
