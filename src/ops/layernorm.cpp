// LayerNorm with an optional fused residual add: shaders/layernorm.comp,
// reference in src/reference/layernorm.cpp.
#include <cmath>

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "ops/tuning_util.hpp"
#include "push/layernorm.h"

namespace vkf {
OpInfo layernorm(Recorder& rec, const LayerNormArgs& a) {
  const auto [r, caps, op] = start_op(rec, "layernorm");
  const auto [rows, d, n] = check_rows(op, a.x, a.y, a.eps);
  if (a.residual) {
    require_tensor(a.residual, op, "residual", DType::F32);
    VKF_REQUIRE(a.residual->shape() == a.x->shape(), op,
                "residual " + a.residual->describe() + " must have the shape of x " + a.x->describe());
  }
  require_vector(a.gamma, op, "gamma", d, caps);
  VKF_REQUIRE(a.beta && !a.beta->empty(), op, "beta is missing");
  VKF_REQUIRE(a.beta->shape() == a.gamma->shape() && a.beta->dtype() == a.gamma->dtype(), op,
              "beta " + a.beta->describe() + " must be " + a.gamma->describe() + " like gamma");
  VKF_REQUIRE(!tensors_overlap(a.y, a.residual), op, "y must not alias residual");
  const std::string cls = rows_class(rows, d, a.gamma->dtype());
  const TunedConfig* tc = tuned(r, op, cls, a.variant);
  bool sub = false;
  const RowTiling t = plan_row_op(r, op, cls, a.variant, d, rows, tc, &sub);
  const std::string name = std::string("layernorm_") + (sub ? "subgroup" : "shared") + weight_suffix(a.gamma);
  const Pipeline& p = r.pipeline(name, {t.wg, t.items, t.aligned, t.rows}, t.sgs);
  const LayernormPush push{uint32_t(rows), uint32_t(d), t.d4, a.eps, a.residual ? 1u : 0u};
  const Tensor* res = a.residual ? a.residual : a.x;  // unread when absent
  const std::string variant = sub ? "subgroup" : "shared";
  r.dispatch(p, {{a.x, false}, {res, false}, {a.gamma, false}, {a.beta, false}, {a.y, true}}, push,
             r.fold(ceil_div(rows, t.rows)), "layernorm/" + variant);
  const double wbytes = double(dtype_size(a.gamma->dtype())) * 2 * double(d);
  return {op,
          variant,
          row_tiling_spec(t),
          double(n) * (a.residual ? 8 : 7),
          double(n) * 4 * (a.residual ? 3 : 2) + wbytes,
          cls,
          tc != nullptr};
}

// ---- descriptor ----

namespace {

OpCase layernorm_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const auto* x = &D->h(cases::random_vector(size_t(o.m * o.n), 21));
  const auto* res = &D->h(cases::random_vector(size_t(o.m * o.n), 22));
  const auto* g = &D->h(cases::as_stored(cases::random_vector(size_t(o.n), 23), o.dtype));
  const auto* b = &D->h(cases::as_stored(cases::random_vector(size_t(o.n), 24), o.dtype));
  const LayerNormArgs a{&D->t(ctx.tensor({o.m, o.n}, *x)), o.residual ? &D->t(ctx.tensor({o.m, o.n}, *res)) : nullptr,
                        &D->t(ctx.tensor({o.n}, *g, o.dtype)), &D->t(ctx.tensor({o.n}, *b, o.dtype)),
                        &D->t(ctx.tensor({o.m, o.n})), 1e-5f, ""};
  return cases::make(D, "rows=" + std::to_string(o.m) + " d=" + std::to_string(o.n) + " " + dtype_name(o.dtype) +
                            (o.residual ? " +residual" : ""),
                     cases::recording(layernorm, a), cases::against(ctx, *a.y, [=] {
                       return ref::layernorm(*x, o.residual ? res : nullptr, *g, *b, o.m, o.n, 1e-5);
                     }));
}

}  // namespace

VKF_OP_DESCRIPTOR(layernorm) {
  return {"layernorm", "y = LayerNorm(x + residual)·gamma + beta over rows (dtype: gamma, beta; residual)",
          {"subgroup", "shared"}, {"WG", "ITEMS", "ALIGNED", "ROWS", "SGS"}, {"m", "n"}, {cases::rows_shape(128, 768)},
          layernorm_case, nullptr, false, row_tiling_candidates};
}

}  // namespace vkf
