// Rotary position embedding in place (HF's LlamaRotaryEmbedding and
// apply_rotary_pos_emb, rotate_half form): shaders/rope.comp, cos and sin in
// shaders/lib/trig.glsl, reference in src/reference/rope.cpp.
//
// Decisions:
//   - the angle is HF's: position (an integer rounded to fp32) times
//     inv_freq[i], one fp32 product; its cos and sin are the kernel's own,
//     within 1 ulp at any magnitude (GLSL's are only promised to 2^-11
//     absolute on [-π, π]; angles reach 10^5 radians at long contexts);
//   - the rotated heads are any contiguous run of heads in a row (col0): Q and
//     K inside a packed QKV projection are one call, V left alone;
//   - position_ids values are only multiplied, never used as indices: any
//     i32 is fine, as in HF (no clamping);
//   - an invocation computes cos and sin of one (token, i) for a group of
//     heads: all of them on a CPU device (the trig costs ~20 elements' work),
//     fewer on a GPU when that leaves too few invocations.
#include <cmath>

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/rope.h"

namespace vkf {

OpInfo rope(Recorder& rec, const RopeArgs& a) {
  const auto [r, caps, op] = start_op(rec, "rope");
  require_tensor(a.x, op, "x", DType::F32);
  VKF_REQUIRE(a.x->shape().size() == 3, op, "x " + a.x->describe() + " must be [batch, len, width]");
  const uint64_t batch = uint64_t(a.x->dim(0)), len = uint64_t(a.x->dim(1)), width = uint64_t(a.x->dim(2));
  VKF_REQUIRE(a.heads >= 1, op, "heads must be at least 1");
  VKF_REQUIRE(a.head_dim >= 1, op, "head_dim must be at least 1");
  const uint32_t rot = a.rotary_dim ? a.rotary_dim : a.head_dim;
  const std::string rot_name = a.rotary_dim ? "rotary_dim " + std::to_string(a.rotary_dim)
                                            : "head_dim " + std::to_string(a.head_dim) + " (rotary_dim 0: all of it)";
  VKF_REQUIRE(rot % 2 == 0, op, rot_name + " must be even");
  VKF_REQUIRE(rot <= a.head_dim, op,
              "rotary_dim " + std::to_string(rot) + " exceeds head_dim " + std::to_string(a.head_dim));
  const uint64_t end = uint64_t(a.col0) + uint64_t(a.heads) * a.head_dim;
  VKF_REQUIRE(end <= width, op,
              "heads [" + std::to_string(a.col0) + ", " + std::to_string(end) + ") (col0 + heads·head_dim) do not fit in rows of " +
              std::to_string(width) + " columns of x " + a.x->describe());
  const uint32_t half = rot / 2;
  require_tensor(a.inv_freq, op, "inv_freq", DType::F32);
  VKF_REQUIRE(a.inv_freq->shape() == std::vector<int64_t>{int64_t(half)}, op,
              "inv_freq " + a.inv_freq->describe() + " must be [" + std::to_string(half) + "] (rotary_dim / 2)");
  VKF_REQUIRE(!tensors_overlap(a.x, a.inv_freq), op, "x must not overlap inv_freq");
  if (a.position_ids) {
    require_tensor(a.position_ids, op, "position_ids", DType::I32);
    VKF_REQUIRE((a.position_ids->shape() == std::vector<int64_t>{int64_t(batch), int64_t(len)}), op,
                "position_ids " + a.position_ids->describe() + " must be [" + std::to_string(batch) + ", " +
                    std::to_string(len) + "] ([batch, len] of x)");
    VKF_REQUIRE(!tensors_overlap(a.x, a.position_ids), op, "x must not overlap position_ids");
  } else {
    VKF_REQUIRE(uint64_t(a.pos_offset) + len <= (1ull << 32), op,
                "pos_offset " + std::to_string(a.pos_offset) + " + len " + std::to_string(len) + " passes 2^32");
  }
  VKF_REQUIRE(std::isfinite(a.scaling), op, "scaling must be finite");
  VKF_REQUIRE(a.variant.empty() || a.variant == "default", op, "unknown variant \"" + a.variant + "\" (default)");
  VKF_REQUIRE(uint64_t(a.x->numel()) < (1ull << 32), op, "x " + a.x->describe() + " has 2^32 elements or more");

  const uint64_t rows = batch * len;
  if (rows == 0) return {op, "default", {}, 0, 0};
  // Lavapipe: every head in one invocation (cos and sin once per token and
  // frequency). GPUs: split the heads until ~32k invocations work.
  const bool cpu = caps.device_type == "cpu";
  const uint32_t wg = workgroup_size(caps, cpu ? 64 : 128);
  const uint64_t pairs = rows * half;
  uint32_t hgroups = cpu ? 1 : uint32_t(std::clamp<uint64_t>(ceil_div(32768, pairs), 1, a.heads));
  const uint32_t hpi = ceil_div(a.heads, hgroups);
  hgroups = ceil_div(a.heads, hpi);
  const uint64_t units = pairs * hgroups, groups = (units + wg - 1) / wg;
  VKF_REQUIRE(groups * wg < (1ull << 32), op, "more than 2^32 invocations");

  const Pipeline& p = r.pipeline("rope", {wg});
  const RopePush push{uint32_t(groups), uint32_t(units), half, hgroups, hpi, a.heads, a.head_dim, a.col0,
                      uint32_t(width), uint32_t(len), a.pos_offset, a.position_ids ? 1u : 0u, a.scaling,
                      a.interleaved ? 1u : 0u};
  const Tensor* pos = a.position_ids ? a.position_ids : a.inv_freq;  // unread when absent
  r.dispatch(p, {{a.x, true}, {a.inv_freq, false}, {pos, false}}, push, r.fold(groups), "rope");
  const double n = double(rows) * a.heads * rot;  // rotated elements
  return {op, "default", {{"WG", wg}}, 3 * n, 8 * n + 4.0 * half + (a.position_ids ? 4.0 * rows : 0)};
}

std::vector<float> rope_inv_freq(float theta, uint32_t dim) {
  std::vector<float> f(dim / 2);
  for (uint32_t i = 0; i < dim / 2; ++i) {
    const float e = float(2 * i) / float(dim);                     // arange(0, dim, 2).float() / dim
    const float power = float(std::pow(double(theta), double(e)));  // base ** e, rounded once
    f[i] = 1.0f / power;
  }
  return f;
}

// ---- descriptor ----

namespace {

// Q and K of a packed QKV projection [batch, q_len, (heads + 2·kv)·head_dim]
// (kv: kv_heads, or heads) rotated in one call, V left alone, Llama's
// inv_freq (theta 10000), the q_len new tokens after kv_len − q_len cached
// ones; with a padding mask (padding, both) position_ids instead, sequence b
// left-padded by 3·b tokens (positions max(0, t − 3b) after the cache).
OpCase rope_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const uint32_t kv = o.kv_heads ? o.kv_heads : o.heads, len = o.q_len;
  const uint32_t width = (o.heads + 2 * kv) * o.head_dim;
  const uint32_t offset = o.kv_len > o.q_len ? o.kv_len - o.q_len : 0;
  const auto* x = &D->h(cases::random_vector(size_t(o.batch) * len * width, 71));
  const auto* inv_freq = &D->h(rope_inv_freq(10000.f, o.head_dim));
  const bool ids = o.mask == "padding" || o.mask == "both";
  if (ids) {
    D->ids.resize(size_t(o.batch) * len);
    for (uint32_t b = 0; b < o.batch; ++b)
      for (uint32_t t = 0; t < len; ++t) D->ids[size_t(b) * len + t] = int32_t(offset + (t > 3 * b ? t - 3 * b : 0));
  }
  RopeArgs a;
  a.x = &D->t(ctx.tensor({o.batch, len, width}, *x));
  a.heads = o.heads + kv;
  a.head_dim = o.head_dim;
  a.inv_freq = &D->t(ctx.tensor({o.head_dim / 2}, *inv_freq));
  a.position_ids = ids ? &D->t(ctx.tensor_i32({o.batch, len}, D->ids)) : nullptr;
  a.pos_offset = offset;
  const auto* pos = ids ? &D->ids : nullptr;
  // In place: each recording starts from the original x, and so does the check.
  auto record = [ctx = &ctx, a, x, run = cases::recording(rope, a)](Recorder& rec, const std::string& v) {
    ctx->write(*a.x, *x);
    return run(rec, v);
  };
  auto error = [ctx = &ctx, a, x, inv_freq, pos, o, width]() {
    ctx->write(*a.x, *x);
    Recorder rec(*ctx);
    rope(rec, a);
    ctx->submit(rec);
    return ref::max_rel_error(ctx->read(*a.x), ref::rope(*x, o.batch, o.q_len, width, a, *inv_freq, pos));
  };
  return cases::make(D,
                     "B=" + std::to_string(o.batch) + " L=" + std::to_string(len) + " H=" + std::to_string(o.heads) +
                         " KVH=" + std::to_string(kv) + " D=" + std::to_string(o.head_dim) + " from position " +
                         std::to_string(offset) + (ids ? " position_ids" : ""),
                     record, error, 1e-6);
}

}  // namespace

// Standard shape: Llama-3-8B's prefill of 128 tokens (32 query, 8 K/V heads of 128).
VKF_OP_DESCRIPTOR(rope) {
  OpShape s;
  s.batch = 1, s.q_len = 128, s.kv_len = 128, s.heads = 32, s.kv_heads = 8, s.head_dim = 128;
  return {"rope",
          "rotary position embedding of Q and K inside a packed QKV row, in place (HF's rotate_half; kv_len: "
          "position after the new q_len tokens; mask padding/both: position_ids)",
          {"default"}, {"WG"}, {"batch", "q_len", "heads", "kv_heads", "head_dim"}, {s}, rope_case,
          [](const OpShape& o) {
            return std::to_string(o.batch * o.q_len) + "x" + std::to_string(o.heads + (o.kv_heads ? o.kv_heads : o.heads)) +
                   "hx" + std::to_string(o.head_dim);
          }};
}

}  // namespace vkf
