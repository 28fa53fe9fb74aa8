// Session::forward: pad the batch, get the plan for its shape (recorded once),
// write the inputs, submit once, read the output.
#include <algorithm>

#include "run/session_impl.hpp"
#include "vk/recorder_impl.hpp"

namespace vkf {
namespace {
constexpr size_t kMaxPlans = 16;  // shapes kept recorded; the oldest is dropped after that
}

PaddedIds pad_batch(const std::vector<Ids>& seqs, int32_t pad_id, uint32_t vocab,
                    uint32_t max_positions, const char* side) {
  if (seqs.empty()) throw Error(std::string("no ") + side + " sequences were given");
  PaddedIds p;
  p.batch = uint32_t(seqs.size());
  for (size_t b = 0; b < seqs.size(); ++b) {
    const Ids& s = seqs[b];
    const std::string which = std::string(side) + " sequence " + std::to_string(b + 1);
    if (s.empty()) throw Error(which + " is empty");
    if (s.size() > max_positions)
      throw Error(which + " has " + std::to_string(s.size()) + " tokens, more than max_positions " +
                  std::to_string(max_positions));
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] < 0 || uint32_t(s[i]) >= vocab)
        throw Error(which + ": id " + std::to_string(s[i]) + " at position " + std::to_string(i) +
                    " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    p.len = std::max<uint32_t>(p.len, uint32_t(s.size()));
    p.lengths.push_back(uint32_t(s.size()));
  }
  p.ids.assign(size_t(p.batch) * p.len, pad_id);
  p.pad.assign(p.ids.size(), 1);
  for (uint32_t b = 0; b < p.batch; ++b)
    for (uint32_t i = 0; i < p.lengths[b]; ++i) {
      p.ids[size_t(b) * p.len + i] = seqs[b][i];
      p.pad[size_t(b) * p.len + i] = seqs[b][i] == pad_id;
    }
  return p;
}

// Records the whole stack for a plan's buffers; sets p.out.
void Session::Impl::record_pass(Recorder& rec, ForwardPlan& pl) {
  ForwardPlan* p = &pl;
  const uint32_t S = p->src_len, T = p->tgt_len;
  // Layers swap buffer roles as they record; every recording starts from the
  // same roles, so every recording of a plan leaves its output in one place.
  const Activations enc0 = p->enc, dec0 = p->dec;

  rec.set_scope("encoder.embed");
  record_embedding(rec, cfg, w.src_embed, w.src_pos, p->src_ids, nullptr, 0, p->enc);
  for (size_t i = 0; i < w.encoder.size(); ++i) {
    rec.set_scope("encoder." + std::to_string(i));
    record_encoder_layer(rec, cfg, w.encoder[i], p->enc, {&p->src_pad, S, cfg.causal});
  }
  rec.set_scope("encoder.norm");
  if (w.encoder_norm) record_final_norm(rec, cfg, *w.encoder_norm, p->enc);
  Activations* last = &p->enc;

  if (cfg.encoder_decoder()) {
    rec.set_scope("decoder.embed");
    record_embedding(rec, cfg, w.tgt_embed, w.tgt_pos, p->tgt_ids, nullptr, 0, p->dec);
    for (size_t i = 0; i < w.decoder.size(); ++i) {
      rec.set_scope("decoder." + std::to_string(i));
      record_cross_kv(rec, w.decoder[i], p->enc.x, p->cross_kv);
      record_decoder_layer(rec, cfg, w.decoder[i], p->dec, {&p->tgt_pad, T, true},
                           {&p->cross_kv, S, &p->src_pad});
    }
    rec.set_scope("decoder.norm");
    if (w.decoder_norm) record_final_norm(rec, cfg, *w.decoder_norm, p->dec);
    last = &p->dec;
  }
  rec.set_scope("generator");
  if (w.generator) {
    record_generator(rec, *w.generator, *last, p->logits);
    p->out = p->logits;
  } else {
    p->out = last->x;
  }
  p->enc = enc0;
  p->dec = dec0;
}

ForwardPlan& Session::Impl::plan(uint32_t B, uint32_t S, uint32_t T) {
  auto key = std::make_tuple(B, S, T);
  auto found = plans.find(key);
  if (found != plans.end()) return *found->second;
  if (plans.size() >= kMaxPlans) plans.erase(plans.begin());

  auto p = std::make_unique<ForwardPlan>();
  p->batch = B;
  p->src_len = S;
  p->tgt_len = T;
  p->src_ids = ctx.tensor({B, S}, DType::I32);
  p->src_pad = ctx.tensor({B, S}, DType::I32);
  p->enc = Activations(ctx, cfg, B, S);
  if (cfg.encoder_decoder()) {
    const int64_t d = cfg.d_model;
    p->tgt_ids = ctx.tensor({B, T}, DType::I32);
    p->tgt_pad = ctx.tensor({B, T}, DType::I32);
    p->dec = Activations(ctx, cfg, B, T);
    p->cross_kv = ctx.tensor({B, S, 2 * d});
  }
  if (w.generator)
    p->logits = ctx.tensor({B, int64_t(cfg.encoder_decoder() ? T : S), int64_t(cfg.out_vocab())});
  p->rec = std::make_unique<Recorder>(ctx, profiling);
  return *(plans[key] = std::move(p));
}

void Session::Impl::pad_inputs(const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                               PaddedIds& s, PaddedIds& t) {
  if (cfg.use_lite())
    throw Error("a \"use_lite\" model is a sentence encoder: it has no forward pass over tokens or "
                "generation; use Session::embed (vkformer embed)");
  const bool encdec = cfg.encoder_decoder();
  s = pad_batch(src, cfg.pad_id, cfg.src_vocab_size, cfg.max_positions, "source");
  if (encdec) {
    if (tgt.size() != src.size())
      throw Error("an encoder-decoder model needs one target sequence per source: got " +
                  std::to_string(src.size()) + " sources and " + std::to_string(tgt.size()) + " targets");
    t = pad_batch(tgt, cfg.pad_id, cfg.tgt_vocab_size, cfg.max_positions, "target");
  } else if (!tgt.empty()) {
    throw Error("target sequences were given, but the model has no decoder (decoder_layers is 0)");
  }
}

ForwardOutput Session::Impl::forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt) {
  const bool encdec = cfg.encoder_decoder();
  PaddedIds s, t;
  pad_inputs(src, tgt, s, t);
  ForwardPlan& p = plan(s.batch, s.len, encdec ? t.len : 0);
  if (!p.recorded) {  // once per shape; later calls resubmit the same command buffer
    record_pass(*p.rec, p);
    p.recorded = true;
  }
  ctx.write_bytes(p.src_ids, s.ids.data(), s.ids.size() * 4);
  ctx.write_bytes(p.src_pad, s.pad.data(), s.pad.size() * 4);
  if (encdec) {
    ctx.write_bytes(p.tgt_ids, t.ids.data(), t.ids.size() * 4);
    ctx.write_bytes(p.tgt_pad, t.pad.data(), t.pad.size() * 4);
  }
  submit(*p.rec, "the forward pass");

  const PaddedIds& out_side = encdec ? t : s;
  ForwardOutput o;
  o.batch = out_side.batch;
  o.len = out_side.len;
  o.dim = uint32_t(p.out.dim(-1));
  o.lengths = out_side.lengths;
  o.data = ctx.read(p.out);
  for (uint32_t b = 0; b < o.batch; ++b)  // positions past a sequence's end are zero
    std::fill(o.data.begin() + (size_t(b) * o.len + o.lengths[b]) * o.dim,
              o.data.begin() + size_t(b + 1) * o.len * o.dim, 0.0f);
  return o;
}

Session::Session(std::shared_ptr<Model> model)
    : model_(std::move(model)), impl_(std::make_unique<Impl>(*model_)) {}
Session::~Session() = default;

ForwardOutput Session::forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt) {
  const uint64_t before = impl_->ctx.submissions();
  ForwardOutput o;
  try {
    impl_->ctx.impl().alive("Session::forward");
    o = impl_->forward(src, tgt);
  } catch (const VulkanError& e) {
    if (std::string(e.what()).rfind("Session::forward", 0) == 0) throw;
    const size_t n = src.size();
    rethrow_with_context(e, "Session::forward (" + std::to_string(n) + (n == 1 ? " sequence)" : " sequences)"));
  }
  stats_ = {};
  stats_.submissions = impl_->ctx.submissions() - before;
  stats_.dispatches = impl_->last_dispatches;
  stats_.timings = impl_->last_timings;
  return o;
}

Tensor Session::record_forward(Recorder& rec, const std::vector<Ids>& src,
                              const std::vector<Ids>& tgt, Tensor* out) {
  Impl& s = *impl_;
  const bool encdec = s.cfg.encoder_decoder();
  PaddedIds ps, pt;
  s.pad_inputs(src, tgt, ps, pt);
  ForwardPlan& p = s.plan(ps.batch, ps.len, encdec ? pt.len : 0);
  auto& r = rec.impl();
  r.update(p.src_ids, ps.ids.data(), ps.ids.size() * 4);
  r.update(p.src_pad, ps.pad.data(), ps.pad.size() * 4);
  if (encdec) {
    r.update(p.tgt_ids, pt.ids.data(), pt.ids.size() * 4);
    r.update(p.tgt_pad, pt.pad.data(), pt.pad.size() * 4);
  }
  s.record_pass(rec, p);
  if (out) {
    if (out->numel() != p.out.numel() || out->dtype() != DType::F32)
      throw Error("record_forward: out " + out->describe() + " must hold " +
                  std::to_string(p.out.numel()) + " f32 values like " + p.out.describe());
    CopyRowsArgs c;
    c.src = &p.out;
    c.dst = out;
    c.width = uint32_t(p.out.numel());
    c.src_row_stride = c.dst_row_stride = c.width;
    copy_rows(rec, c);
  }
  return p.out;
}

void Session::set_profiling(bool on) {
  if (impl_->profiling == on) return;
  impl_->profiling = on;
  impl_->plans.clear();  // recorded with or without timestamps
  impl_->embed_plans.clear();
}

}  // namespace vkf
