// Attention scores = scale·QKᵀ, read straight from head views: shaders/attention_scores.comp,
// reference in src/reference/attention.cpp.
#include "ops/op_case.hpp"
#include "ops/attention_util.hpp"
#include "push/attention_scores.h"

namespace vkf {

OpInfo attention_scores(Recorder& rec, const AttentionScoresArgs& a) {
  const auto [r, caps, op] = start_op(rec, "attention_scores");
  const AttentionShape& s = a.shape;
  check_shape(s, op);
  VKF_REQUIRE(a.variant.empty() || a.variant == "tiled", op, "unknown variant \"" + a.variant + "\" (tiled)");
  require_tensor(a.q.t, op, "q", DType::F32);
  require_weight(a.k.t, op, "k", r.ctx.caps);
  const ViewStrides q = check_view(a.q, s, ViewHeads::Query, s.q_len, op, "q");
  const ViewStrides k = check_view(a.k, s, ViewHeads::KeyValue, s.kv_len, op, "k");
  check_scores(a.scores, s, op, "scores");
  for (const Tensor* in : {a.q.t, a.k.t})
    VKF_REQUIRE(!tensors_overlap(a.scores, in), op, "scores must not alias q or k");

  // An invocation per key (up to 64 per workgroup, fewer for short rows),
  // as many query rows per workgroup as half the shared memory holds, up to 64.
  const uint32_t d4 = ceil_div(s.head_dim, 4);
  const uint32_t wg = lanes(r.ctx.caps, s.kv_len);
  const uint32_t tq = std::min(64u, stage_budget(r.ctx.caps) / (16 * d4));
  VKF_REQUIRE(tq >= 1, op,
              "head_dim " + std::to_string(s.head_dim) + " is too large for the device's shared memory");
  const uint32_t k_blocks = ceil_div(s.kv_len, wg), q_blocks = ceil_div(s.q_len, tq);
  const uint64_t total = uint64_t(s.batch) * s.heads * k_blocks * q_blocks;
  VKF_REQUIRE(total < (1ull << 32), op, "too many tiles");
  const AttentionScoresPush push{s.heads, s.head_dim, s.q_len,  s.kv_len, q.off,    q.row,
                                 q.batch, k.off,      k.row,    k.batch,  a.scale,  k_blocks,
                                 q_blocks, uint32_t(total), s.heads_per_kv()};
  const std::string shader = std::string(op) + weight_suffix(a.k.t);
  const Pipeline& p = r.pipeline(shader, {wg, d4, tq});
  r.dispatch(p, {{a.q.t, false}, {a.k.t, false}, {a.scores, true}}, push, r.fold(total),
             std::string(op) + "/tiled" + weight_suffix(a.k.t));

  const double n_qk = double(s.batch) * s.heads * s.q_len * s.kv_len;
  const double width = double(s.heads) * s.head_dim, kv_width = double(s.kv_head_count()) * s.head_dim;
  return {op, "tiled", {{"WG", wg}, {"D4", d4}, {"TQ", tq}},
          2 * n_qk * s.head_dim,
          double(s.batch) * (width * 4.0 * s.q_len + kv_width * dtype_size(a.k.t->dtype()) * s.kv_len) + 4 * n_qk};
}

// ---- descriptor ----

namespace {

OpCase attention_scores_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const cases::Heads h = cases::attention_inputs(ctx, o, *D);
  const AttentionScoresArgs a{h.q, h.k, h.shape, 1.0f / std::sqrt(float(o.head_dim)),
                              &D->t(ctx.tensor({o.batch, o.heads, o.q_len, o.kv_len})), ""};
  return cases::make(D, cases::attention_shape_text(o), cases::recording(attention_scores, a),
                     cases::against(ctx, *a.scores, [=] { return ref::attention_scores(h.hq, h.hk, h.shape, a.scale); }));
}

}  // namespace

VKF_OP_DESCRIPTOR(attention_scores) {
  return {"attention_scores", "S = scale·QKᵀ per head, read from head views (dtype: K)", {"tiled"},
          {"WG", "D4", "TQ"}, {"batch", "heads", "kv_heads", "head_dim", "q_len", "kv_len"}, {cases::attention_bench_shape()},
          attention_scores_case, cases::attention_label};
}

}  // namespace vkf
