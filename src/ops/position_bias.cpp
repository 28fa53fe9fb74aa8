// T5's relative-position bias: shaders/position_bias.comp, reference in
// src/reference/position_bias.cpp. The host computes each relative position's
// bucket (families/t5/position_bias.cpp); this op expands the buckets into the
// [heads, q_len, kv_len] bias flash_attention adds.
#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/position_bias.h"

namespace vkf {

OpInfo position_bias(Recorder& rec, const PositionBiasArgs& a) {
  const auto [r, caps, op] = start_op(rec, "position_bias");
  require_weight(a.table, op, "table", caps);
  VKF_REQUIRE(a.table->shape().size() == 2 && a.table->dim(0) >= 1, op,
              "table " + a.table->describe() + " must be [num_buckets, heads]");
  require_tensor(a.buckets, op, "buckets", DType::I32);
  VKF_REQUIRE(a.buckets->shape().size() == 1 && a.buckets->dim(0) % 2 == 1, op,
              "buckets " + a.buckets->describe() + " must be [2·max_rel + 1]");
  require_tensor(a.out, op, "out", DType::F32);
  const uint32_t heads = uint32_t(a.table->dim(1));
  const auto& o = a.out->shape();
  VKF_REQUIRE(a.q_len >= 1 && a.kv_len >= 1 && o.size() == 3 && o[0] == heads && o[1] == a.q_len && o[2] >= a.kv_len, op,
              "out " + a.out->describe() + " must be [" + std::to_string(heads) + ", " + std::to_string(a.q_len) +
                  ", ≥ " + std::to_string(a.kv_len) + "] (heads, q_len, kv_len), q_len and kv_len ≥ 1");
  VKF_REQUIRE(uint64_t(a.q_offset) + a.q_len < (1ull << 31), op, "q_offset + q_len must be below 2^31");
  VKF_REQUIRE(a.variant.empty() || a.variant == "default", op, "unknown variant \"" + a.variant + "\"");
  VKF_REQUIRE(uint64_t(a.out->numel()) < (1ull << 32), op, "out has 2^32 elements or more");
  const uint64_t n = uint64_t(heads) * a.q_len * a.kv_len;
  const uint32_t wg = workgroup_size(caps, 256), items = 4;
  const Pipeline& p = r.pipeline(std::string(op) + weight_suffix(a.table), {wg, items});
  const PositionBiasPush push{heads,      a.q_len, a.kv_len, a.q_offset, uint32_t(a.buckets->dim(0) / 2),
                              uint32_t(a.table->dim(0)), uint32_t(n), uint32_t(o[2])};
  r.dispatch(p, {{a.table, false}, {a.buckets, false}, {a.out, true}}, push, r.fold(ceil_div(n, wg * items)),
             "position_bias/default");
  return {op, "default", {{"WG", wg}, {"ITEMS", items}}, 0.0, double(n) * 4 + double(n) * 8};
}

// ---- descriptor ----

namespace {

/// 32 buckets over relative positions −20..20 (so longer rows clamp), each
/// position a pseudo-random bucket, some outside the table (clamped).
OpCase position_bias_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const uint32_t nb = 32, max_rel = 20;
  const auto* table = &D->h(cases::as_stored(cases::random_vector(size_t(nb) * o.heads, 43), o.dtype));
  auto buckets = std::make_shared<std::vector<int32_t>>(2 * max_rel + 1);
  for (size_t i = 0; i < buckets->size(); ++i) (*buckets)[i] = int32_t((i * 7 + 3) % (nb + 2)) - 1;
  const uint32_t q_offset = o.kv_len > o.q_len ? o.kv_len - o.q_len : 0;  // a decode step's rows
  const PositionBiasArgs args{&D->t(ctx.tensor({nb, o.heads}, *table, o.dtype)),
                              &D->t(ctx.tensor_i32({int64_t(buckets->size())}, *buckets)),
                              o.q_len, o.kv_len, q_offset,
                              &D->t(ctx.tensor({o.heads, o.q_len, o.kv_len})), ""};
  return cases::make(D, cases::attention_shape_text(o), cases::recording(position_bias, args),
                     cases::against(ctx, *args.out, [=] {
                       return ref::position_bias(*table, *buckets, o.heads, o.q_len, o.kv_len, q_offset);
                     }),
                     0.0);
}

}  // namespace

VKF_OP_DESCRIPTOR(position_bias) {
  OpShape bench;
  bench.heads = 8, bench.q_len = 128, bench.kv_len = 128;
  return {"position_bias", "T5 relative-position bias [heads, q, k] from bucket ids (dtype: table)",
          {"default"}, {"WG", "ITEMS"}, {"heads", "q_len", "kv_len"}, {bench}, position_bias_case,
          cases::attention_label};
}

}  // namespace vkf
