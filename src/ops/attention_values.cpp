// Attention output = P·V, heads written concatenated: shaders/attention_values.comp,
// reference in src/reference/attention.cpp.
#include "ops/op_case.hpp"
#include "ops/attention_util.hpp"
#include "push/attention_values.h"

namespace vkf {

OpInfo attention_values(Recorder& rec, const AttentionValuesArgs& a) {
  const auto [r, caps, op] = start_op(rec, "attention_values");
  const AttentionShape& s = a.shape;
  check_shape(s, op);
  VKF_REQUIRE(a.variant.empty() || a.variant == "tiled", op, "unknown variant \"" + a.variant + "\" (tiled)");
  check_scores(a.probs, s, op, "probs");
  require_weight(a.v.t, op, "v", r.ctx.caps);
  const ViewStrides v = check_view(a.v, s, ViewHeads::KeyValue, s.kv_len, op, "v");
  check_out(a.out, s, op);
  for (const Tensor* in : {a.probs, a.v.t})
    VKF_REQUIRE(!tensors_overlap(a.out, in), op, "out must not alias probs or v");

  // An invocation per query row (up to 64 per workgroup, fewer for short
  // queries), value tiles of up to 64 rows in half the shared memory.
  const uint32_t d4 = ceil_div(s.head_dim, 4);
  const uint32_t wg = lanes(r.ctx.caps, s.q_len);
  const uint32_t bk = std::min(64u, stage_budget(r.ctx.caps) / (16 * d4));
  VKF_REQUIRE(bk >= 1, op,
              "head_dim " + std::to_string(s.head_dim) + " is too large for the device's shared memory");
  const uint32_t q_blocks = ceil_div(s.q_len, wg);
  const uint64_t total = uint64_t(s.batch) * s.heads * q_blocks;
  VKF_REQUIRE(total < (1ull << 32), op, "too many tiles");
  const AttentionValuesPush push{s.heads, s.head_dim, s.q_len,  s.kv_len,        v.off,
                                 v.row,   v.batch,    q_blocks, uint32_t(total), s.heads_per_kv()};
  const std::string shader = std::string(op) + weight_suffix(a.v.t);
  const Pipeline& p = r.pipeline(shader, {wg, d4, bk});
  r.dispatch(p, {{a.probs, false}, {a.v.t, false}, {a.out, true}}, push, r.fold(total),
             std::string(op) + "/tiled" + weight_suffix(a.v.t));

  const double n_qk = double(s.batch) * s.heads * s.q_len * s.kv_len;
  const double width = double(s.heads) * s.head_dim, kv_width = double(s.kv_head_count()) * s.head_dim;
  return {op, "tiled", {{"WG", wg}, {"D4", d4}, {"BK", bk}},
          2 * n_qk * s.head_dim,
          4 * n_qk + double(s.batch) * (kv_width * dtype_size(a.v.t->dtype()) * s.kv_len + width * 4.0 * s.q_len)};
}

// ---- descriptor ----

namespace {

OpCase attention_values_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const cases::Heads h = cases::attention_inputs(ctx, o, *D);
  const auto* probs = &D->h(cases::random_vector(size_t(o.batch) * o.heads * o.q_len * o.kv_len, 14));
  const AttentionValuesArgs a{&D->t(ctx.tensor({o.batch, o.heads, o.q_len, o.kv_len}, *probs)), h.v, h.shape,
                              &D->t(ctx.tensor({o.batch, o.q_len, o.heads * o.head_dim})), ""};
  return cases::make(D, cases::attention_shape_text(o), cases::recording(attention_values, a),
                     cases::against(ctx, *a.out, [=] {
                       return ref::attention_values({probs->begin(), probs->end()}, h.hv, h.shape);
                     }));
}

}  // namespace

VKF_OP_DESCRIPTOR(attention_values) {
  return {"attention_values", "O = P·V per head, heads written concatenated (dtype: V)", {"tiled"},
          {"WG", "D4", "BK"}, {"batch", "heads", "kv_heads", "head_dim", "q_len", "kv_len"}, {cases::attention_bench_shape()},
          attention_values_case, cases::attention_label};
}

}  // namespace vkf
