// Top-k / argmax per row: shaders/topk.comp, reference in src/reference/topk.cpp.
#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/topk.h"

namespace vkf {
namespace {
// K is a specialization constant sizing per-invocation register lists of K
// (key, index) pairs and the number of merge rounds; beyond this the register
// lists get costly, and beam search needs far less.
constexpr uint32_t kMaxK = 32;
}  // namespace

uint32_t topk_max_k() { return kMaxK; }

OpInfo topk(Recorder& rec, const TopKArgs& a) {
  const auto [r, caps, op] = start_op(rec, "topk");
  require_tensor(a.x, op, "x", DType::F32);
  VKF_REQUIRE(a.x->shape().size() == 2, op, "x " + a.x->describe() + " must be [rows, n]");
  const uint64_t rows = uint64_t(a.x->dim(0)), n = uint64_t(a.x->dim(1));
  VKF_REQUIRE(a.k >= 1 && a.k <= kMaxK, op,
              "k " + std::to_string(a.k) + " must be in 1.." + std::to_string(kMaxK) + " (topk_max_k())");
  VKF_REQUIRE(a.k <= n, op, "k " + std::to_string(a.k) + " exceeds the row length n " + std::to_string(n) +
                                " of x " + a.x->describe());
  const std::vector<int64_t> out_shape{int64_t(rows), int64_t(a.k)};
  const std::string want = "[" + std::to_string(rows) + ", " + std::to_string(a.k) + "]";
  require_tensor(a.values, op, "values", DType::F32);
  VKF_REQUIRE(a.values->shape() == out_shape, op, "values " + a.values->describe() + " must be " + want + " f32");
  require_tensor(a.indices, op, "indices", DType::I32);
  VKF_REQUIRE(a.indices->shape() == out_shape, op, "indices " + a.indices->describe() + " must be " + want + " i32");
  VKF_REQUIRE(!tensors_overlap(a.values, a.x) && !tensors_overlap(a.indices, a.x) &&
                  !tensors_overlap(a.values, a.indices),
              op, "values, indices and x must not alias");
  VKF_REQUIRE(rows * n < (1ull << 32) && n < 0xffffffffull, op, "x has more than 2^32 elements");
  const bool sub = use_subgroups(caps, a.variant, op);

  // Lavapipe runs a workgroup on one core: one subgroup scanning the whole
  // row is fastest there, and its merge needs no barrier. GPUs: wide groups.
  const bool cpu = caps.device_type == "cpu";
  const uint32_t sg = std::max(1u, caps.subgroup_size);
  const uint32_t wg = cpu ? workgroup_size(caps, sg)
                          : workgroup_size(caps, std::max(sg, std::min(ceil_div(ceil_div(n, 16), sg) * sg, 256u)));

  const std::string variant = sub ? "subgroup" : "shared";
  const Pipeline& p = r.pipeline("topk_" + variant, {wg, a.k});
  const TopkPush push{uint32_t(rows), uint32_t(n)};
  r.dispatch(p, {{a.x, false}, {a.values, true}, {a.indices, true}}, push, r.fold(rows),
             "topk/" + variant);
  return {op,
          variant,
          {{"WG", wg}, {"K", a.k}},
          double(rows * n),  // one comparison per element
          double(rows * n) * 4 + double(rows) * a.k * 8};
}

// ---- descriptor ----

namespace {

// Exact: the error is 0 when every index and value equals the reference's, else 1.
OpCase topk_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const auto* x = &D->h(cases::random_vector(size_t(o.m * o.n), 51));
  const TopKArgs a{&D->t(ctx.tensor({o.m, o.n}, *x)), o.topk, &D->t(ctx.tensor({o.m, int64_t(o.topk)})),
                   &D->t(ctx.tensor({o.m, int64_t(o.topk)}, DType::I32)), ""};
  auto exact = [ctx = &ctx, x, a, o]() {
    std::vector<float> vals;
    std::vector<int32_t> idx;
    ref::topk(*x, o.m, o.n, o.topk, vals, idx);
    return ctx->read_i32(*a.indices) == idx && ctx->read(*a.values) == vals ? 0.0 : 1.0;
  };
  return cases::make(D, "rows=" + std::to_string(o.m) + " n=" + std::to_string(o.n) + " k=" + std::to_string(o.topk),
                     cases::recording(topk, a), exact, 0.0);
}

}  // namespace

// Standard shape: greedy decoding's argmax over a vocabulary.
VKF_OP_DESCRIPTOR(topk) {
  return {"topk", "the k largest values of each row and their indices (k = 1: argmax)", {"subgroup", "shared"},
          {"WG", "K"}, {"m", "n"}, {cases::rows_shape(1, 32000)}, topk_case};
}

}  // namespace vkf
