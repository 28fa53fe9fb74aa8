// Where generate() gets next-token logits from for a transformer model: the
// KV-cached decoder (one submission per step), or the whole forward pass
// recomputed over each hypothesis (the reference the cache is checked against).
#include <algorithm>
#include <map>

#include "families/kv_cache_source.hpp"
#include "families/padding.hpp"
#include "families/recompute_source.hpp"
#include "families/transformer/family.hpp"
#include "families/transformer/stack.hpp"
#include "run/logits_source.hpp"
#include "run/search.hpp"
#include "run/slot_source.hpp"

namespace vkf {
namespace {

/// The encoder once, then one submission per step: each decoder layer keeps
/// its self-attention K/V in a cache (KvCacheSource), and cross-attention K/V
/// are computed once; both stored as `kv` (f32 or f16).
class CachedSource : public KvCacheSource {
 public:
  CachedSource(Runner& s, const std::vector<Ids>& src, uint32_t beam, uint32_t max_new, int32_t start, DType kv)
      : CachedSource(s, pad_batch(src, s.model.config(), s.model.config().src_vocab_size, "source"), beam,
                     max_new, start, kv) {}

  std::vector<float> start() override {
    return cfg_.encoder_decoder() ? start_encdec() : start_decoder_only();
  }
  /// Each layer's cache (after start(): the prompt's rows, or the start token's).
  std::vector<Tensor>& layer_caches() { return caches(); }
  /// Enc–dec: each decoder layer's cross-attention K/V [1, source length, 2d] (after start()).
  std::vector<Tensor>& cross_kv() { return cross_kv_; }

 private:
  CachedSource(Runner& s, PaddedIds prompt, uint32_t beam, uint32_t max_new, int32_t start, DType kv_dtype)
      : KvCacheSource(s, prompt.batch, beam, s.model.config().out_vocab()), cfg_(s.model.config()),
        w_(transformer_weights(s.model)), prompt_(std::move(prompt)), start_(start), kv_dtype_(kv_dtype) {
    const bool encdec = cfg_.encoder_decoder();
    const uint32_t kv = cfg_.kv_width();
    // Enc–dec: BOS at position 0, the token chosen at step t fed at position t + 1.
    // Decoder-only: the prompt fills rows [0, P), new tokens follow at P, P + 1...
    const uint64_t need = encdec ? max_new : uint64_t(prompt_.len) + max_new - 1;
    if (need > cfg_.max_positions)
      throw Error(std::string(encdec ? "" : "the prompt plus ") + std::to_string(max_new) +
                  " new tokens need " + std::to_string(need) + " positions, more than the model's " +
                  std::to_string(cfg_.max_positions) + " (config.json \"" + cfg_.positions_key + "\")");
    max_len_ = uint32_t(std::max<uint64_t>(need, 1)) + (encdec ? 0 : 1);
    make_caches(encdec ? w_.decoder.size() : w_.encoder.size(), max_len_, 2 * kv, kv_dtype_);
    step_ = Activations(ctx_, cfg_, slots_, 1);
    if (relative()) step_bias_ = PositionBias(ctx_, cfg_, false, 1, max_len_);
    ids_ = ctx_.tensor({slots_, 1}, DType::I32);
    positions_ = ctx_.tensor({slots_, 1}, DType::I32);
  }

  /// Feeds one token per slot at row `filled_` of the caches.
  void record_step(Recorder& rec, const std::vector<int32_t>& tokens) override {
    write_step_input(rec, ids_, tokens.data(), tokens.size() * 4);
    if (cfg_.encoder_decoder()) {
      record_decoder_stack(rec, cfg_, w_, "decoder", {&ids_, nullptr, filled_}, step_,
                           {{nullptr, 0, true, nullptr, filled_, 0}, &caches(), &step_bias_},
                           {nullptr, nullptr, &cross_kv_, prompt_.len, &src_pad_});
    } else {
      std::vector<int32_t> pos(slots_);
      for (uint32_t i = 0; i < slots_; ++i)  // each prompt continues at its own length
        pos[i] = int32_t(prompt_.lengths[i / beam_] + (filled_ - prompt_.len));
      write_step_input(rec, positions_, pos.data(), pos.size() * 4);
      SelfAttentionSpec self{&holes_, max_len_, true, nullptr, filled_, 0};
      if (cfg_.sliding_window) {
        write_window_mask(rec, pos);
        self.key_padding = &window_mask_;
        self.key_padding_has_window = true;
      }
      record_encoder_stack(rec, cfg_, w_, "decoder", {&ids_, &positions_, 0}, step_, {self, &caches(), &step_bias_});
    }
    rec.set_scope("generator");
    record_generator(rec, *w_.generator, step_, logits_);
    ++filled_;
  }

  /// A sliding window counts positions, not cache rows: a shorter prompt's padding
  /// rows [length, P) sit between its prompt and its new tokens. Slot i's query is
  /// at position pos[i]; row r holds position r below P, r − (P − length) from P on.
  void write_window_mask(Recorder& rec, const std::vector<int32_t>& pos) {
    const uint32_t P = prompt_.len, W = cfg_.sliding_window;
    std::vector<int32_t> mask(size_t(slots_) * max_len_, 1);
    for (uint32_t i = 0; i < slots_; ++i) {
      const uint32_t len = prompt_.lengths[i / beam_];
      for (uint32_t r = 0; r <= filled_; ++r) {
        if (r >= len && r < P) continue;  // padding
        const int64_t p = r < P ? r : int64_t(r) - (P - len);
        if (p > int64_t(pos[i]) - int64_t(W)) mask[size_t(i) * max_len_ + r] = 0;
      }
    }
    if (window_mask_.empty()) window_mask_ = ctx_.tensor({slots_, max_len_}, DType::I32);
    write_step_input(rec, window_mask_, mask.data(), mask.size() * 4);
  }

  // Encoder once; cross-attention K/V per layer, copied to every slot of a
  // source; then the BOS step. One submission.
  std::vector<float> start_encdec() {
    const uint32_t S = prompt_.len, kv = cfg_.kv_width();
    Recorder rec(ctx_, s_.profiling);
    Activations enc(ctx_, cfg_, batch_, S);
    PositionBias enc_bias = relative() ? PositionBias(ctx_, cfg_, true, S, S) : PositionBias();
    Tensor src_ids = ctx_.tensor_i32({batch_, S}, prompt_.ids);
    Tensor src_pad = ctx_.tensor_i32({batch_, S}, prompt_.pad);
    src_pad_ = slot_rows_i32(prompt_.pad, S);

    record_encoder_stack(rec, cfg_, w_, "encoder", {&src_ids}, enc, {{&src_pad, S, false}, nullptr, &enc_bias});
    Tensor memory_kv = ctx_.tensor({batch_, S, 2 * int64_t(kv)});
    for (size_t l = 0; l < w_.decoder.size(); ++l) {
      rec.set_scope("decoder." + std::to_string(l) + ".cross_kv");
      record_cross_kv(rec, w_.decoder[l], enc.x(), memory_kv);
      cross_kv_.push_back(ctx_.tensor({slots_, S, 2 * int64_t(kv)}, kv_dtype_));  // rounded by the copy
      to_slots(rec, memory_kv, cross_kv_.back(), S, 2 * kv);
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
    PositionBias pre_bias = relative() ? PositionBias(ctx_, cfg_, false, P, P) : PositionBias();
    Tensor ids = ctx_.tensor_i32({batch_, P}, prompt_.ids);
    Tensor pad = ctx_.tensor_i32({batch_, P}, prompt_.pad);
    std::vector<int32_t> holes(size_t(slots_) * max_len_, 0);
    for (uint32_t i = 0; i < slots_; ++i)  // rows between a prompt's end and P are padding
      for (uint32_t r = 0; r < P; ++r) holes[size_t(i) * max_len_ + r] = prompt_.pad[size_t(i / beam_) * P + r];
    holes_ = ctx_.tensor_i32({slots_, max_len_}, holes);

    const uint32_t stride = beam_ * max_len_ * 2 * cfg_.kv_width();  // each source's first slot
    record_encoder_stack(rec, cfg_, w_, "prompt", {&ids}, pre,
                         {{&pad, P, true, nullptr, 0, stride}, &caches(), &pre_bias});
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
    const std::vector<float> all = submit_and_read(s_, rec, logits);
    std::vector<float> out(size_t(slots_) * V);
    for (uint32_t i = 0; i < slots_; ++i) std::copy_n(all.begin() + size_t(i / beam_) * V, V, out.begin() + size_t(i) * V);
    return out;
  }

  bool relative() const { return cfg_.positional_encoding == PositionalEncoding::RelativeBias; }

  const ModelConfig& cfg_;
  const TransformerWeights& w_;
  PaddedIds prompt_;
  int32_t start_;  ///< the decoder's start token (enc–dec)
  DType kv_dtype_;  ///< of the caches and cross_kv_
  uint32_t max_len_ = 0;
  std::vector<Tensor> cross_kv_;   ///< per decoder layer [slots, src_len, 2·kv]
  Tensor src_pad_, holes_;
  Tensor window_mask_;  ///< sliding-window models: holes_ and each slot's window, rewritten every step
  Activations step_;
  PositionBias step_bias_;  ///< [heads, 1, max_len] for the step's query row
  Tensor ids_, positions_;
};

/// A continuous batch: one cache row range per slot, each slot at its own
/// length. A prompt is prefilled alone by CachedSource (the same dispatches as
/// its solo generate) and its rows copied into the slot (an enc–dec model's
/// cross-attention K/V too, its source's padding masked); each step runs every
/// slot's token with gemv linears (each row summed as alone) and flash attention
/// over the slot's own rows, the others masked (they add exact zeros), so each
/// row's logits equal its solo run's. Not for a relative-position bias, whose
/// query rows would each need their own positions. Every cache (and the solo
/// prefill's) is stored as `kv` (f32 or f16).
class TransformerSlots : public SlotSource {
 public:
  TransformerSlots(Runner& s, uint32_t slots, uint32_t max_len, DType kv_dtype)
      : s_(s), ctx_(s.ctx), cfg_(s.model.config()), w_(transformer_weights(s.model)), slots_(slots),
        max_len_(std::min(max_len, cfg_.max_positions)), encdec_(cfg_.encoder_decoder()), kv_dtype_(kv_dtype) {
    const int64_t kv = cfg_.kv_width();
    const std::vector<float> zeros(size_t(slots_) * max_len_ * 2 * kv, 0.0f);  // masked rows read as finite
    for (size_t l = 0; l < (encdec_ ? w_.decoder.size() : w_.encoder.size()); ++l) {
      caches_.push_back(ctx_.tensor({slots_, max_len_, 2 * kv}, zeros, kv_dtype_));
      if (encdec_) cross_kv_.push_back(ctx_.tensor({slots_, max_len_, 2 * kv}, zeros, kv_dtype_));
    }
    scratch_ = ctx_.tensor({1, max_len_, 2 * kv}, kv_dtype_);
    mask_ = ctx_.tensor({slots_, max_len_}, DType::I32);
    src_pad_host_.assign(size_t(slots_) * max_len_, 1);
    src_pad_ = ctx_.tensor_i32({slots_, max_len_}, src_pad_host_);
  }
  uint32_t slots() const override { return slots_; }
  uint32_t max_len() const override { return max_len_; }

  std::vector<float> prefill(uint32_t slot, const Ids& prompt, int32_t start) override {
    CachedSource solo(s_, {prompt}, 1, 1, start, kv_dtype_);
    std::vector<float> logits = solo.start();
    Recorder rec(ctx_, s_.profiling);
    rec.set_scope("slot_prefill");
    const auto P = uint32_t(prompt.size());
    for (size_t l = 0; l < caches_.size(); ++l) {
      copy_slot(rec, solo.layer_caches()[l], 0, caches_[l], slot, encdec_ ? 1 : P);
      if (encdec_) copy_slot(rec, solo.cross_kv()[l], 0, cross_kv_[l], slot, P);
    }
    s_.submit(rec);
    if (encdec_) {
      std::fill_n(src_pad_host_.begin() + size_t(slot) * max_len_, max_len_, 1);
      std::fill_n(src_pad_host_.begin() + size_t(slot) * max_len_, P, 0);
      ctx_.write_bytes(src_pad_, src_pad_host_.data(), src_pad_host_.size() * 4);
    }
    return logits;
  }

  std::vector<float> step(const std::vector<int32_t>& tokens, const std::vector<uint32_t>& lengths) override {
    const uint32_t n = uint32_t(tokens.size());
    Shape& sh = shape(n);
    const std::vector<int32_t> pos(lengths.begin(), lengths.end());  // the position is the row, both kinds
    Recorder& rec = s_.step_recorder();
    write_step_input(rec, sh.ids, tokens.data(), tokens.size() * 4);
    write_step_input(rec, sh.positions, pos.data(), pos.size() * 4);
    std::vector<int32_t> mask(size_t(slots_) * max_len_, 1);
    for (uint32_t b = 0; b < n; ++b) {  // rows [0, lengths[b]], or the last sliding_window of them
      const uint32_t W = cfg_.sliding_window, first = W && lengths[b] + 1 > W ? lengths[b] + 1 - W : 0;
      std::fill_n(mask.begin() + size_t(b) * max_len_ + first, lengths[b] + 1 - first, 0);
    }
    write_step_input(rec, mask_, mask.data(), mask.size() * 4);
    const StackAttention self{{&mask_, max_len_, true, nullptr, 0, 0, &lengths}, &caches_};
    if (encdec_)
      record_decoder_stack(rec, cfg_, w_, "decoder", {&sh.ids, &sh.positions, 0}, sh.act, self,
                           {nullptr, nullptr, &cross_kv_, max_len_, &src_pad_});
    else
      record_encoder_stack(rec, cfg_, w_, "decoder", {&sh.ids, &sh.positions, 0}, sh.act, self);
    rec.set_scope("generator");
    record_generator(rec, *w_.generator, sh.act, sh.logits);
    return submit_and_read(s_, rec, sh.logits);
  }

  void move(uint32_t from, uint32_t to, uint32_t rows) override {
    Recorder rec(ctx_, s_.profiling);
    rec.set_scope("slot_move");
    // Through scratch_: copy_rows refuses a source that overlaps its destination.
    auto move_rows = [&](Tensor& t, uint32_t n) {
      copy_slot(rec, t, from, scratch_, 0, n);
      copy_slot(rec, scratch_, 0, t, to, n);
    };
    for (size_t l = 0; l < caches_.size(); ++l) {
      move_rows(caches_[l], rows);
      if (encdec_) move_rows(cross_kv_[l], max_len_);
    }
    s_.submit(rec);
    if (encdec_) {
      std::copy_n(src_pad_host_.begin() + size_t(from) * max_len_, max_len_,
                  src_pad_host_.begin() + size_t(to) * max_len_);
      ctx_.write_bytes(src_pad_, src_pad_host_.data(), src_pad_host_.size() * 4);
    }
  }

 private:
  /// Buffers of one batch size, kept: sizes come and go as sequences join and leave.
  struct Shape {
    Activations act;
    Tensor ids, positions, logits;
  };
  Shape& shape(uint32_t n) {
    auto it = shapes_.find(n);
    if (it != shapes_.end()) return it->second;
    Shape& sh = shapes_[n];
    sh.act = Activations(ctx_, cfg_, n, 1);
    sh.act.gemm_variant = "gemv";
    sh.act.attention_variant = "untuned";
    sh.ids = ctx_.tensor({n, 1}, DType::I32);
    sh.positions = ctx_.tensor({n, 1}, DType::I32);
    sh.logits = ctx_.tensor({n, 1, int64_t(cfg_.out_vocab())});
    return sh;
  }
  /// Rows [0, rows) of src's slot `from` into dst's slot `to` (both [slots, len, 2·kv]).
  static void copy_slot(Recorder& rec, const Tensor& src, uint32_t from, Tensor& dst, uint32_t to, uint32_t rows) {
    // As [1, slots·len, 2d]: a slot is a row range, and copy_rows takes a first row.
    const Tensor s2 = src.reshaped({1, src.dim(0) * src.dim(-2), src.dim(-1)});
    Tensor d2 = dst.reshaped({1, dst.dim(0) * dst.dim(-2), dst.dim(-1)});
    CopyRowsArgs c;
    c.src = &s2;
    c.src_row0 = from * uint32_t(src.dim(-2));
    c.dst = &d2;
    c.dst_row0 = to * uint32_t(dst.dim(-2));
    c.rows = rows;
    c.width = uint32_t(src.dim(-1));
    copy_rows(rec, c);
  }

  Runner& s_;
  Context& ctx_;
  const ModelConfig& cfg_;
  const TransformerWeights& w_;
  uint32_t slots_, max_len_;
  bool encdec_;
  DType kv_dtype_;
  std::vector<Tensor> caches_;     ///< per (decoder) layer [slots, max_len, 2·kv]
  std::vector<Tensor> cross_kv_;   ///< enc–dec: per decoder layer [slots, max_len, 2·kv], a source per slot
  std::vector<int32_t> src_pad_host_;
  Tensor scratch_, mask_, src_pad_;  ///< src_pad_ [slots, max_len]: 1 past each slot's source
  std::map<uint32_t, Shape> shapes_;
};

}  // namespace

std::unique_ptr<SlotSource> TransformerFamily::slot_source(Runner& s, uint32_t slots, uint32_t max_len,
                                                          DType kv_cache) const {
  if (!transformer_weights(s.model).generator) return nullptr;
  if (s.model.config().positional_encoding == PositionalEncoding::RelativeBias) return nullptr;
  return std::make_unique<TransformerSlots>(s, slots, max_len, kv_cache);
}

std::unique_ptr<LogitsSource> TransformerFamily::logits_source(Runner& s, const std::vector<Ids>& src,
                                                               const GenerateOptions& o) const {
  if (!transformer_weights(s.model).generator)
    throw Error("generation needs a generator (the model has no generator.weight)");
  const int32_t start = decoder_start(s.model.config(), o);
  if (o.use_cache)
    return std::make_unique<CachedSource>(s, src, o.beam, o.max_new_tokens, start,
                                          kv_cache_dtype(o.kv_cache, s.model.config(), s.ctx.caps()));
  return recompute_source(s, src, o.beam, start);
}

}  // namespace vkf
