// Masked softmax over attention scores, in place: shaders/masked_softmax.comp,
// reference in src/reference/attention.cpp.
#include "ops/op_case.hpp"
#include "ops/attention_util.hpp"
#include "push/masked_softmax.h"

namespace vkf {

OpInfo masked_softmax(Recorder& rec, const SoftmaxArgs& a) {
  const auto [r, caps, op] = start_op(rec, "masked_softmax");
  AttentionShape s = a.shape;
  s.head_dim = 1;  // unused here
  check_shape(s, op);
  const bool sub = use_subgroups(r.ctx.caps, a.variant, op);
  check_scores(a.scores, s, op, "scores");
  const uint32_t pad_stride = check_mask(a.mask, s, op);

  // One workgroup per row, a lane per 64 keys but at least a subgroup: on a
  // CPU device each extra subgroup costs a switch per barrier (lavapipe, 128
  // keys: 128 lanes took 5× longer than 8). lanes() gives a power of two.
  const bool cpu = r.ctx.caps.device_type == "cpu";
  const uint32_t wg = lanes(r.ctx.caps, ceil_div(s.kv_len, cpu ? 96 : 64));
  const uint64_t rows = uint64_t(s.batch) * s.heads * s.q_len;
  const MaskedSoftmaxPush push{uint32_t(rows), s.heads, s.q_len, s.kv_len, pad_stride,
                               a.mask.key_padding ? 1u : 0u, a.mask.causal ? 1u : 0u, a.mask.causal_offset,
                               a.mask.window};
  const std::string variant = sub ? "subgroup" : "shared";
  const std::string shader = std::string(op) + "_" + variant;
  // On a CPU device a workgroup's launch costs more than a short row: leave
  // ~16 workgroups for the cores and let each take its rows in turn.
  const uint32_t per_group =
      cpu ? uint32_t(std::clamp<uint64_t>(rows / 16, 1, 16)) : 1;
  // Rows of up to kMaxVec4 vec4s per lane stay in registers (vec4 loads need kv_len % 4 == 0).
  const uint32_t kMaxVec4 = 32;
  const uint32_t vec4 = s.kv_len % 4 == 0 && ceil_div(s.kv_len / 4, wg) <= kMaxVec4 ? ceil_div(s.kv_len / 4, wg) : 0;
  const Pipeline& p = r.pipeline(shader, {wg, per_group, vec4});
  // Without a padding mask the scores stand in for it (never read).
  const Tensor* pad = a.mask.key_padding ? a.mask.key_padding : a.scores;
  r.dispatch(p, {{a.scores, true}, {pad, false}}, push,
             r.fold(ceil_div(rows, per_group)), std::string(op) + "/" + variant);

  const double n = double(rows) * s.kv_len;
  return {op, variant, {{"WG", wg}, {"ROWS", per_group}, {"VEC4", vec4}}, 5 * n,
          8 * n + (a.mask.key_padding ? 4.0 * s.batch * s.kv_len : 0.0)};
}

// ---- descriptor ----

namespace {

// In place: every run starts from the softmax of the one before, so recording
// writes the original scores first, and the check writes them again and runs once more.
OpCase masked_softmax_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  auto mask = cases::make_mask(ctx, o);
  const auto* scores = &D->h(cases::random_vector(size_t(o.batch) * o.heads * o.q_len * o.kv_len, 13));
  const SoftmaxArgs a{&D->t(ctx.tensor({o.batch, o.heads, o.q_len, o.kv_len}, *scores)),
                      {o.batch, o.heads, 1, o.q_len, o.kv_len}, mask->dm, ""};
  auto record = [ctx = &ctx, a, mask, scores, run = cases::recording(masked_softmax, a)](Recorder& rec,
                                                                                          const std::string& v) {
    ctx->write(*a.scores, *scores);
    return run(rec, v);
  };
  auto error = [ctx = &ctx, a, mask, scores]() {
    ctx->write(*a.scores, *scores);
    Recorder rec(*ctx);
    masked_softmax(rec, a);
    ctx->submit(rec);
    return ref::max_rel_error(ctx->read(*a.scores),
                              ref::masked_softmax({scores->begin(), scores->end()}, a.shape, mask->hm));
  };
  return cases::make(D, cases::attention_shape_text(o), record, error);
}

}  // namespace

VKF_OP_DESCRIPTOR(masked_softmax) {
  return {"masked_softmax", "each score row becomes softmax over its unmasked keys, in place; fully masked rows give zeros",
          {"subgroup", "shared"}, {"WG", "ROWS", "VEC4"}, {"batch", "heads", "q_len", "kv_len"},
          {cases::attention_bench_shape()},  // 12 heads × 128 × 128 scores
          masked_softmax_case, cases::attention_label};
}

}  // namespace vkf
