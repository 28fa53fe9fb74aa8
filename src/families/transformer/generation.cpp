// Where generate() gets next-token logits from for a transformer model: the
// KV-cached decoder (one submission per step), or the whole forward pass
// recomputed over each hypothesis (the reference the cache is checked against).
#include <algorithm>

#include "families/padding.hpp"
#include "families/transformer/family.hpp"
#include "families/transformer/stack.hpp"
#include "run/logits_source.hpp"
#include "run/session_impl.hpp"

namespace vkf {
namespace {

std::vector<int32_t> iota_i32(size_t n) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = int32_t(i);
  return v;
}

/// The encoder once, then one submission per step: each decoder layer keeps
/// its self-attention K/V in a cache (double-buffered so beams can be
/// reordered by gathering), and cross-attention K/V are computed once.
class CachedSource : public LogitsSource {
 public:
  CachedSource(Session::Impl& s, const std::vector<Ids>& src, uint32_t beam, uint32_t max_new)
      : s_(s), cfg_(s.model.config()), w_(transformer_weights(s.model)), ctx_(s.ctx), beam_(beam) {
    const bool encdec = cfg_.encoder_decoder();
    prompt_ = pad_batch(src, cfg_, cfg_.src_vocab_size, "source");
    batch_ = prompt_.batch;
    slots_ = batch_ * beam_;
    const uint32_t d = cfg_.d_model;
    // Enc–dec: BOS at position 0, the token chosen at step t fed at position t + 1.
    // Decoder-only: the prompt fills rows [0, P), new tokens follow at P, P + 1...
    const uint64_t need = encdec ? max_new : uint64_t(prompt_.len) + max_new - 1;
    if (need > cfg_.max_positions)
      throw Error(std::string(encdec ? "" : "the prompt plus ") + std::to_string(max_new) +
                  " new tokens need " + std::to_string(need) + " positions, more than the model's " +
                  std::to_string(cfg_.max_positions) + " (config.json \"" + cfg_.positions_key + "\")");
    max_len_ = uint32_t(std::max<uint64_t>(need, 1)) + (encdec ? 0 : 1);
    const size_t layers = encdec ? w_.decoder.size() : w_.encoder.size();
    for (auto& set : caches_)
      for (size_t l = 0; l < layers; ++l) set.push_back(ctx_.tensor({slots_, max_len_, 2 * d}));

    step_ = Activations(ctx_, cfg_, slots_, 1);
    ids_ = ctx_.tensor({slots_, 1}, DType::I32);
    positions_ = ctx_.tensor({slots_, 1}, DType::I32);
    parents_ = ctx_.tensor({slots_}, DType::I32);
    logits_ = ctx_.tensor({slots_, 1, int64_t(cfg_.out_vocab())});
    // Slot s belongs to source s / beam.
    std::vector<int32_t> owner(slots_);
    for (uint32_t i = 0; i < slots_; ++i) owner[i] = int32_t(i / beam_);
    owner_ = ctx_.tensor_i32({slots_}, owner);
    for (auto& o : owner) o *= int32_t(beam_);
    first_slot_ = ctx_.tensor_i32({slots_}, owner);
  }

  std::vector<float> start() override {
    return cfg_.encoder_decoder() ? start_encdec() : start_decoder_only();
  }

  std::vector<float> step(const std::vector<int32_t>& tokens,
                          const std::vector<int32_t>& parents) override {
    Recorder rec(ctx_, s_.profiling);
    if (parents != iota_i32(slots_)) {
      ctx_.write_bytes(parents_, parents.data(), parents.size() * 4);
      rec.set_scope("beam_reorder");
      reorder(rec, parents_);
    }
    record_step(rec, tokens);
    s_.submit(rec);
    return ctx_.read(logits_);
  }

 private:
  /// Gathers every layer's cache rows [0, filled) by source slot.
  void reorder(Recorder& rec, const Tensor& index) {
    for (size_t l = 0; l < caches_[cur_].size(); ++l) {
      CopyRowsArgs c;
      c.src = &caches_[cur_][l];
      c.dst = &caches_[1 - cur_][l];
      c.batch = slots_;
      c.rows = filled_;
      c.width = 2 * cfg_.d_model;
      c.index = &index;
      copy_rows(rec, c);
    }
    cur_ = 1 - cur_;
  }

  /// Feeds one token per slot at row `filled_` of the caches.
  void record_step(Recorder& rec, const std::vector<int32_t>& tokens) {
    ctx_.write_bytes(ids_, tokens.data(), tokens.size() * 4);
    if (cfg_.encoder_decoder()) {
      record_decoder_stack(rec, cfg_, w_, "decoder", {&ids_, nullptr, filled_}, step_,
                           {{nullptr, 0, true, nullptr, filled_, 0}, &caches_[cur_]},
                           {nullptr, nullptr, &cross_kv_, prompt_.len, &src_pad_});
    } else {
      std::vector<int32_t> pos(slots_);
      for (uint32_t i = 0; i < slots_; ++i)  // each prompt continues at its own length
        pos[i] = int32_t(prompt_.lengths[i / beam_] + (filled_ - prompt_.len));
      ctx_.write_bytes(positions_, pos.data(), pos.size() * 4);
      record_encoder_stack(rec, cfg_, w_, "decoder", {&ids_, &positions_, 0}, step_,
                           {{&holes_, max_len_, true, nullptr, filled_, 0}, &caches_[cur_]});
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
    std::vector<int32_t> slot_pad(size_t(slots_) * S);
    for (uint32_t i = 0; i < slots_; ++i)
      std::copy_n(prompt_.pad.begin() + size_t(i / beam_) * S, S, slot_pad.begin() + size_t(i) * S);
    src_pad_ = ctx_.tensor_i32({slots_, S}, slot_pad);

    record_encoder_stack(rec, cfg_, w_, "encoder", {&src_ids}, enc, {{&src_pad, S, false}});
    Tensor kv = ctx_.tensor({batch_, S, 2 * int64_t(d)});
    for (size_t l = 0; l < w_.decoder.size(); ++l) {
      rec.set_scope("decoder." + std::to_string(l) + ".cross_kv");
      record_cross_kv(rec, w_.decoder[l], enc.x(), kv);
      cross_kv_.push_back(ctx_.tensor({slots_, S, 2 * int64_t(d)}));
      CopyRowsArgs c;
      c.src = &kv;
      c.dst = &cross_kv_.back();
      c.batch = slots_;
      c.rows = S;
      c.width = 2 * d;
      c.index = &owner_;
      copy_rows(rec, c);
    }
    record_step(rec, std::vector<int32_t>(slots_, cfg_.bos_id));
    s_.submit(rec);
    return ctx_.read(logits_);
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
    record_encoder_stack(rec, cfg_, w_, "prompt", {&ids}, pre, {{&pad, P, true, nullptr, 0, stride}, &caches_[cur_]});
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

  Session::Impl& s_;
  const ModelConfig& cfg_;
  const TransformerWeights& w_;
  Context& ctx_;
  uint32_t beam_, batch_ = 0, slots_ = 0, max_len_ = 0, filled_ = 0;
  PaddedIds prompt_;
  std::vector<Tensor> caches_[2];  ///< per layer [slots, max_len, 2d]; caches_[cur_] is current
  int cur_ = 0;
  std::vector<Tensor> cross_kv_;   ///< per decoder layer [slots, src_len, 2d]
  Tensor src_pad_, holes_;
  Activations step_;
  Tensor ids_, positions_, parents_, logits_, owner_, first_slot_;
};

/// Every step runs the whole forward pass on each slot's full history.
class RecomputeSource : public LogitsSource {
 public:
  RecomputeSource(Session::Impl& s, const std::vector<Ids>& src, uint32_t beam)
      : s_(s), encdec_(s.model.config().encoder_decoder()) {
    for (const Ids& x : src)
      for (uint32_t j = 0; j < beam; ++j) {
        src_.push_back(x);
        hist_.push_back(encdec_ ? Ids{s.model.config().bos_id} : x);
      }
  }
  std::vector<float> start() override { return last_logits(); }
  std::vector<float> step(const std::vector<int32_t>& tokens,
                          const std::vector<int32_t>& parents) override {
    std::vector<Ids> next(hist_.size());
    for (size_t i = 0; i < next.size(); ++i) {
      next[i] = hist_[size_t(parents[i])];
      next[i].push_back(tokens[i]);
    }
    hist_ = std::move(next);
    return last_logits();
  }

 private:
  std::vector<float> last_logits() {
    ForwardOutput o = encdec_ ? s_.forward(src_, hist_) : s_.forward(hist_, {});
    std::vector<float> out(size_t(o.batch) * o.dim);
    for (uint32_t b = 0; b < o.batch; ++b)
      std::copy_n(o.data.begin() + (size_t(b) * o.len + o.lengths[b] - 1) * o.dim, o.dim,
                  out.begin() + size_t(b) * o.dim);
    return out;
  }
  Session::Impl& s_;
  bool encdec_;
  std::vector<Ids> src_, hist_;
};

}  // namespace

std::unique_ptr<LogitsSource> TransformerFamily::logits_source(Session::Impl& s, const std::vector<Ids>& src,
                                                               const GenerateOptions& o) const {
  if (!transformer_weights(s.model).generator)
    throw Error("generation needs a generator (the model has no generator.weight)");
  if (o.use_cache) return std::make_unique<CachedSource>(s, src, o.beam, o.max_new_tokens);
  return std::make_unique<RecomputeSource>(s, src, o.beam);
}

}  // namespace vkf
