// The unfused attention path: scores = scale·QKᵀ (shaders/attention_scores.comp),
// masked softmax in place (shaders/masked_softmax.comp), out = P·V
// (shaders/attention_values.comp). References in src/reference/attention.cpp.
#include "ops/attention_util.hpp"

namespace vkf {
namespace {

// Shared memory a staged tile may take: half the device's, so a second
// workgroup (or a driver's own use) still fits beside it.
uint32_t stage_budget(const Capabilities& c) { return c.max_shared_memory / 2; }

// A power-of-two workgroup of up to 64 invocations, one per item, at least a subgroup.
uint32_t lanes(const Capabilities& c, uint32_t items) {
  const uint32_t want = std::max(std::max(1u, c.subgroup_size), std::min(64u, pow2_ceil(items)));
  return pow2_floor(workgroup_size(c, want));
}

}  // namespace

OpInfo attention_scores(Recorder& rec, const AttentionScoresArgs& a) {
  auto& r = rec.impl();
  const char* op = "attention_scores";
  const AttentionShape& s = a.shape;
  check_shape(s, op);
  require(a.variant.empty() || a.variant == "tiled", op, "unknown variant \"" + a.variant + "\" (tiled)");
  require_tensor(a.q.t, op, "q", DType::F32);
  require_weight(a.k.t, op, "k", r.ctx.caps);
  const ViewStrides q = check_view(a.q, s, s.q_len, op, "q");
  const ViewStrides k = check_view(a.k, s, s.kv_len, op, "k");
  check_scores(a.scores, s, op, "scores");
  for (const Tensor* in : {a.q.t, a.k.t})
    require(!tensors_overlap(a.scores, in), op, "scores must not alias q or k");

  // An invocation per key (up to 64 per workgroup, fewer for short rows),
  // as many query rows per workgroup as half the shared memory holds, up to 64.
  const uint32_t d4 = ceil_div(s.head_dim, 4);
  const uint32_t wg = lanes(r.ctx.caps, s.kv_len);
  const uint32_t tq = std::min(64u, stage_budget(r.ctx.caps) / (16 * d4));
  require(tq >= 1, op,
          "head_dim " + std::to_string(s.head_dim) + " is too large for the device's shared memory");
  const uint32_t k_blocks = ceil_div(s.kv_len, wg), q_blocks = ceil_div(s.q_len, tq);
  const uint64_t total = uint64_t(s.batch) * s.heads * k_blocks * q_blocks;
  require(total < (1ull << 32), op, "too many tiles");
  struct {
    uint32_t heads, head_dim, q_len, kv_len, q_off, q_rs, q_bs, k_off, k_rs, k_bs;
    float scale;
    uint32_t k_blocks, q_blocks, total;
  } push{s.heads, s.head_dim, s.q_len, s.kv_len, q.off, q.row, q.batch, k.off, k.row, k.batch,
         a.scale, k_blocks, q_blocks, uint32_t(total)};
  const std::string shader = std::string(op) + kv_suffix(a.k.t);
  const Pipeline& p = r.pipeline(shader, {wg, d4, tq}, 3, sizeof push);
  r.dispatch(p, {{a.q.t, false}, {a.k.t, false}, {a.scores, true}}, &push, sizeof push, r.fold(total),
             std::string(op) + "/tiled" + kv_suffix(a.k.t));

  const double n_qk = double(s.batch) * s.heads * s.q_len * s.kv_len;
  const double width = double(s.heads) * s.head_dim;
  return {op, "tiled", {{"WG", wg}, {"D4", d4}, {"TQ", tq}},
          2 * n_qk * s.head_dim,
          double(s.batch) * width * (4.0 * s.q_len + dtype_size(a.k.t->dtype()) * s.kv_len) + 4 * n_qk};
}

OpInfo masked_softmax(Recorder& rec, const SoftmaxArgs& a) {
  auto& r = rec.impl();
  const char* op = "masked_softmax";
  AttentionShape s = a.shape;
  s.head_dim = 1;  // unused here
  check_shape(s, op);
  const bool sub = use_subgroups(r.ctx.caps, a.variant, op);
  check_scores(a.scores, s, op, "scores");
  const uint32_t pad_stride = check_mask(a.mask, s, op);

  // One workgroup per row, a lane per 64 keys but at least a subgroup: on a
  // CPU device each extra subgroup costs a switch per barrier (lavapipe, 128
  // keys: 128 lanes took 5× longer than 8). The shared-memory tree wants a
  // power of two, which lanes() gives.
  const bool cpu = r.ctx.caps.device_type == "cpu";
  const uint32_t wg = lanes(r.ctx.caps, ceil_div(s.kv_len, cpu ? 96 : 64));
  const uint64_t rows = uint64_t(s.batch) * s.heads * s.q_len;
  struct {
    uint32_t rows, heads, q_len, kv_len, pad_stride, has_pad, causal, causal_offset;
  } push{uint32_t(rows), s.heads, s.q_len, s.kv_len, pad_stride, a.mask.key_padding ? 1u : 0u,
         a.mask.causal ? 1u : 0u, a.mask.causal_offset};
  const std::string variant = sub ? "subgroup" : "shared";
  const std::string shader = std::string(op) + "_" + variant;
  // On a CPU device a workgroup's launch costs more than a short row: leave
  // ~16 workgroups for the cores and let each take its rows in turn.
  const uint32_t per_group =
      cpu ? uint32_t(std::clamp<uint64_t>(rows / 16, 1, 16)) : 1;
  // Rows of up to kMaxVec4 vec4s per lane stay in registers (vec4 loads need kv_len % 4 == 0).
  const uint32_t kMaxVec4 = 32;
  const uint32_t vec4 = s.kv_len % 4 == 0 && ceil_div(s.kv_len / 4, wg) <= kMaxVec4 ? ceil_div(s.kv_len / 4, wg) : 0;
  const Pipeline& p = r.pipeline(shader, {wg, per_group, vec4}, 2, sizeof push);
  // Without a padding mask the scores stand in for it (never read).
  const Tensor* pad = a.mask.key_padding ? a.mask.key_padding : a.scores;
  r.dispatch(p, {{a.scores, true}, {pad, false}}, &push, sizeof push,
             r.fold(ceil_div(rows, per_group)), std::string(op) + "/" + variant);

  const double n = double(rows) * s.kv_len;
  return {op, variant, {{"WG", wg}, {"ROWS", per_group}, {"VEC4", vec4}}, 5 * n,
          8 * n + (a.mask.key_padding ? 4.0 * s.batch * s.kv_len : 0.0)};
}

OpInfo attention_values(Recorder& rec, const AttentionValuesArgs& a) {
  auto& r = rec.impl();
  const char* op = "attention_values";
  const AttentionShape& s = a.shape;
  check_shape(s, op);
  require(a.variant.empty() || a.variant == "tiled", op, "unknown variant \"" + a.variant + "\" (tiled)");
  check_scores(a.probs, s, op, "probs");
  require_weight(a.v.t, op, "v", r.ctx.caps);
  const ViewStrides v = check_view(a.v, s, s.kv_len, op, "v");
  check_out(a.out, s, op);
  for (const Tensor* in : {a.probs, a.v.t})
    require(!tensors_overlap(a.out, in), op, "out must not alias probs or v");

  // An invocation per query row (up to 64 per workgroup, fewer for short
  // queries), value tiles of up to 64 rows in half the shared memory.
  const uint32_t d4 = ceil_div(s.head_dim, 4);
  const uint32_t wg = lanes(r.ctx.caps, s.q_len);
  const uint32_t bk = std::min(64u, stage_budget(r.ctx.caps) / (16 * d4));
  require(bk >= 1, op,
          "head_dim " + std::to_string(s.head_dim) + " is too large for the device's shared memory");
  const uint32_t q_blocks = ceil_div(s.q_len, wg);
  const uint64_t total = uint64_t(s.batch) * s.heads * q_blocks;
  require(total < (1ull << 32), op, "too many tiles");
  struct {
    uint32_t heads, head_dim, q_len, kv_len, v_off, v_rs, v_bs, q_blocks, total;
  } push{s.heads, s.head_dim, s.q_len, s.kv_len, v.off, v.row, v.batch, q_blocks, uint32_t(total)};
  const std::string shader = std::string(op) + kv_suffix(a.v.t);
  const Pipeline& p = r.pipeline(shader, {wg, d4, bk}, 3, sizeof push);
  r.dispatch(p, {{a.probs, false}, {a.v.t, false}, {a.out, true}}, &push, sizeof push, r.fold(total),
             std::string(op) + "/tiled" + kv_suffix(a.v.t));

  const double n_qk = double(s.batch) * s.heads * s.q_len * s.kv_len;
  const double width = double(s.heads) * s.head_dim;
  return {op, "tiled", {{"WG", wg}, {"D4", d4}, {"BK", bk}},
          2 * n_qk * s.head_dim,
          4 * n_qk + double(s.batch) * width * (dtype_size(a.v.t->dtype()) * s.kv_len + 4.0 * s.q_len)};
}

}  // namespace vkf
