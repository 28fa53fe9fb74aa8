// RMSNorm (T5): shaders/rmsnorm.comp, reference in src/reference/rmsnorm.cpp.
#include <cmath>

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/rmsnorm.h"

namespace vkf {

OpInfo rmsnorm(Recorder& rec, const RmsNormArgs& a) {
  auto& r = internals(rec);
  const Capabilities& caps = r.ctx.caps;
  const char* op = "rmsnorm";
  require_tensor(a.x, op, "x", DType::F32);
  require(!a.x->shape().empty(), op, "x must have at least one dimension");
  const uint64_t d = uint64_t(a.x->dim(-1)), n = uint64_t(a.x->numel()), rows = n / d;
  require_weight(a.gamma, op, "gamma", caps);
  require(a.gamma->shape() == std::vector<int64_t>{int64_t(d)}, op,
          "gamma " + a.gamma->describe() + " must be [" + std::to_string(d) + "] (the last dim of x)");
  require_tensor(a.y, op, "y", DType::F32);
  require(a.y->shape() == a.x->shape(), op, "y " + a.y->describe() + " must have the shape of x " + a.x->describe());
  require(!tensors_overlap(a.y, a.x), op, "y must not alias x");
  require(std::isfinite(a.eps) && a.eps >= 0, op, "eps must be finite and >= 0");
  require(n < (1ull << 32), op, "x has more than 2^32 elements");
  const bool sub = use_subgroups(caps, a.variant, op);
  const std::string variant = sub ? "subgroup" : "shared";
  const bool f16 = a.gamma->dtype() == DType::F16;

  const RowTiling t = row_tiling(caps, d, rows);
  const Pipeline& p = r.pipeline("rmsnorm_" + variant + (f16 ? "_f16" : "_f32"), {t.wg, t.items, t.aligned, t.rows});
  const RmsnormPush push{uint32_t(rows), uint32_t(d), uint32_t(t.d4), a.eps};
  r.dispatch(p, {{a.x, false}, {a.gamma, false}, {a.y, true}}, push, r.fold(ceil_div(rows, t.rows)),
             "rmsnorm/" + variant);
  return {op,
          variant,
          {{"WG", t.wg}, {"ITEMS", t.items}, {"ALIGNED", t.aligned}, {"ROWS", t.rows}},
          double(n) * 4,
          double(n) * 4 * 2 + double(dtype_size(a.gamma->dtype())) * double(d)};
}

// ---- descriptor ----

namespace {

OpCase rmsnorm_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const auto* x = &D->h(cases::random(size_t(o.m * o.n), 25));
  const auto* g = &D->h(cases::stored(cases::random(size_t(o.n), 26, 0.5f, 1.5f), o.dtype));
  RmsNormArgs a;
  a.x = &D->t(ctx.tensor({o.m, o.n}, *x));
  a.gamma = &D->t(ctx.tensor({o.n}, *g, o.dtype));
  a.y = &D->t(ctx.tensor({o.m, o.n}));
  OpCase c = cases::with_data(D, "rows=" + std::to_string(o.m) + " d=" + std::to_string(o.n) + " " +
                                     dtype_name(o.dtype));
  c.record = [a](Recorder& rec, const std::string& v) {
    RmsNormArgs x = a;
    x.variant = v;
    return rmsnorm(rec, x);
  };
  c.error = [ctx = &ctx, D = D.get(), x, g, a, o]() {
    if (D->want.empty()) D->want = ref::rmsnorm(*x, *g, o.m, o.n, a.eps);
    return ref::max_rel_error(ctx->read(*a.y), D->want);
  };
  return c;
}

}  // namespace

VKF_OP_DESCRIPTOR(rmsnorm) {
  OpDescriptor d;
  d.name = "rmsnorm";
  d.summary = "y = x / sqrt(mean(x²) + eps)·gamma over rows, as T5 (dtype: gamma)";
  d.variants = {"subgroup", "shared"};
  d.knobs = {"WG", "ITEMS", "ALIGNED", "ROWS"};
  d.dims = {"m", "n"};
  d.bench_shapes = {cases::rows_shape(128, 768)};
  d.make_case = rmsnorm_case;
  return d;
}

}  // namespace vkf
