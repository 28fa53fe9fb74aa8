// RMSNorm (T5): shaders/rmsnorm.comp, reference in src/reference/rmsnorm.cpp.
#include <cmath>

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "ops/tuning_util.hpp"
#include "push/rmsnorm.h"

namespace vkf {

OpInfo rmsnorm(Recorder& rec, const RmsNormArgs& a) {
  const auto [r, caps, op] = start_op(rec, "rmsnorm");
  const auto [rows, d, n] = check_rows(op, a.x, a.y, a.eps);
  require_vector(a.gamma, op, "gamma", d, caps);
  const std::string cls = rows_class(rows, d, a.gamma->dtype());
  const TunedConfig* tc = tuned(r, op, cls, a.variant);
  bool sub = false;
  const RowTiling t = plan_row_op(r, op, cls, a.variant, d, rows, tc, &sub);
  const std::string variant = sub ? "subgroup" : "shared";
  const Pipeline& p =
      r.pipeline("rmsnorm_" + variant + weight_suffix(a.gamma), {t.wg, t.items, t.aligned, t.rows}, t.sgs);
  const RmsnormPush push{uint32_t(rows), uint32_t(d), uint32_t(t.d4), a.eps};
  r.dispatch(p, {{a.x, false}, {a.gamma, false}, {a.y, true}}, push, r.fold(ceil_div(rows, t.rows)),
             "rmsnorm/" + variant);
  return {op,
          variant,
          row_tiling_spec(t),
          double(n) * 4,
          double(n) * 4 * 2 + double(dtype_size(a.gamma->dtype())) * double(d),
          cls,
          tc != nullptr};
}

// ---- descriptor ----

namespace {

OpCase rmsnorm_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const auto* x = &D->h(cases::random_vector(size_t(o.m * o.n), 25));
  const auto* g = &D->h(cases::as_stored(cases::random_vector(size_t(o.n), 26, 0.5f, 1.5f), o.dtype));
  const RmsNormArgs a{&D->t(ctx.tensor({o.m, o.n}, *x)), &D->t(ctx.tensor({o.n}, *g, o.dtype)),
                      &D->t(ctx.tensor({o.m, o.n})), 1e-6f, ""};
  return cases::make(D, "rows=" + std::to_string(o.m) + " d=" + std::to_string(o.n) + " " + dtype_name(o.dtype),
                     cases::recording(rmsnorm, a),
                     cases::against(ctx, *a.y, [=] { return ref::rmsnorm(*x, *g, o.m, o.n, a.eps); }));
}

}  // namespace

VKF_OP_DESCRIPTOR(rmsnorm) {
  return {"rmsnorm", "y = x / sqrt(mean(x²) + eps)·gamma over rows, as T5 (dtype: gamma)", {"subgroup", "shared"},
          {"WG", "ITEMS", "ALIGNED", "ROWS", "SGS"}, {"m", "n"}, {cases::rows_shape(128, 768)}, rmsnorm_case,
          nullptr, false, row_tiling_candidates};
}

}  // namespace vkf
