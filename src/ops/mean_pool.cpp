// Masked mean over a sequence's rows: shaders/mean_pool.comp, reference in
// src/reference/pool.cpp.
#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/mean_pool.h"

namespace vkf {

OpInfo mean_pool(Recorder& rec, const MeanPoolArgs& a) {
  const auto [r, caps, op] = start_op(rec, "mean_pool");
  require_tensor(a.x, op, "x", DType::F32);
  VKF_REQUIRE(a.x->shape().size() == 3, op, "x " + a.x->describe() + " must be [batch, len, d]");
  const uint64_t batch = uint64_t(a.x->dim(0)), len = uint64_t(a.x->dim(1)), d = uint64_t(a.x->dim(2));
  const uint32_t stride = a.key_padding_stride ? a.key_padding_stride : uint32_t(len);
  if (a.key_padding) {
    require_tensor(a.key_padding, op, "key_padding", DType::I32);
    VKF_REQUIRE(a.key_padding->shape().size() == 2 && uint64_t(a.key_padding->dim(0)) == batch, op,
                "key_padding " + a.key_padding->describe() + " must be [" + std::to_string(batch) + ", ≥" +
                    std::to_string(len) + "] i32");
    VKF_REQUIRE(stride >= len && (batch == 0 || (batch - 1) * stride + len <= uint64_t(a.key_padding->numel())), op,
                "key_padding " + a.key_padding->describe() + " with stride " + std::to_string(stride) +
                    " does not cover " + std::to_string(len) + " keys per sequence");
  }
  require_tensor(a.out, op, "out", DType::F32);
  VKF_REQUIRE((a.out->shape() == std::vector<int64_t>{int64_t(batch), int64_t(d)}), op,
              "out " + a.out->describe() + " must be [" + std::to_string(batch) + ", " + std::to_string(d) + "] f32");
  VKF_REQUIRE(!tensors_overlap(a.out, a.x) && !tensors_overlap(a.out, a.key_padding), op,
              "out must not alias x or key_padding");
  VKF_REQUIRE(a.variant.empty() || a.variant == "default", op, "unknown variant \"" + a.variant + "\" (default)");
  VKF_REQUIRE(uint64_t(a.x->numel()) < (1ull << 32), op, "x has 2^32 elements or more");

  const uint64_t d4 = (d + 3) / 4;
  const uint32_t sg = std::max(1u, caps.subgroup_size);
  // One invocation per vec4 column: a workgroup of up to 64 covers a row of
  // 256 columns; wider rows take several workgroups per sequence.
  const uint32_t wg = workgroup_size(caps, std::max<uint32_t>(sg, std::min<uint64_t>(64, (d4 + sg - 1) / sg * sg)));
  const uint32_t per_row = ceil_div(d4, wg);
  const uint32_t aligned = d % 4 == 0;
  const uint32_t mode = uint32_t(a.mode);
  const Pipeline& p = r.pipeline("mean_pool", {wg, aligned, mode});
  const MeanPoolPush push{uint32_t(batch), uint32_t(len), uint32_t(d), uint32_t(d4),
                          per_row, a.key_padding ? 1u : 0u, stride};
  const Tensor* mask = a.key_padding ? a.key_padding : a.x;  // unread when absent
  r.dispatch(p, {{a.x, false}, {mask, false}, {a.out, true}}, push, r.fold(batch * per_row),
             "mean_pool/default");
  const double n = double(batch * len * d);
  return {op,
          "default",
          {{"WG", wg}, {"ALIGNED", aligned}, {"MODE", mode}},
          n + double(batch * d),
          n * 4 + (a.key_padding ? double(batch * len) * 4 : 0) + double(batch * d) * 4};
}

// ---- descriptor ----

namespace {

// [batch, q_len, n] with sequence b's last 3·b rows masked when the mask is
// padding or both, as attention's padding mask.
OpCase mean_pool_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const uint32_t len = o.q_len, d = uint32_t(o.n);
  const auto* x = &D->h(cases::random_vector(size_t(o.batch) * len * d, 45));
  const bool pad = o.mask == "padding" || o.mask == "both";
  D->ids.assign(size_t(o.batch) * len, 0);
  for (uint32_t b = 0; pad && b < o.batch; ++b)
    for (uint32_t i = len - std::min(len - 1, b * 3); i < len; ++i) D->ids[size_t(b) * len + i] = 1;
  const MeanPoolArgs a{&D->t(ctx.tensor({o.batch, len, d}, *x)),
                       pad ? &D->t(ctx.tensor_i32({o.batch, len}, D->ids)) : nullptr, 0,
                       &D->t(ctx.tensor({o.batch, d})), ""};
  const auto* ids = &D->ids;
  return cases::make(D, "B=" + std::to_string(o.batch) + " L=" + std::to_string(len) + " d=" + std::to_string(d) +
                            (pad ? " padding" : ""),
                     cases::recording(mean_pool, a), cases::against(ctx, *a.out, [=] {
                       return ref::mean_pool(*x, pad ? ids : nullptr, len, o.batch, len, d, PoolMode::Mean);
                     }));
}

}  // namespace

// Standard shape: a batch of sentences pooled (USE lite).
VKF_OP_DESCRIPTOR(mean_pool) {
  OpShape s;
  s.batch = 8, s.q_len = 128, s.n = 512, s.mask = "padding";
  return {"mean_pool", "out[b] = mean of x[b, i] over unmasked rows, zeros when none (sentence pooling)",
          {"default"}, {"WG", "ALIGNED", "MODE"}, {"batch", "q_len", "n"}, {s}, mean_pool_case};
}

}  // namespace vkf
