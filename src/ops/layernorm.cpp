// LayerNorm with an optional fused residual add: shaders/layernorm.comp,
// reference in src/reference/layernorm.cpp.
#include <cmath>

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/layernorm.h"

namespace vkf {
OpInfo layernorm(Recorder& rec, const LayerNormArgs& a) {
  auto& r = internals(rec);
  const Capabilities& caps = r.ctx.caps;
  const char* op = "layernorm";
  require_tensor(a.x, op, "x", DType::F32);
  require(!a.x->shape().empty(), op, "x must have at least one dimension");
  const uint64_t d = uint64_t(a.x->dim(-1)), n = uint64_t(a.x->numel()), rows = n / d;
  const std::string dshape = "[" + std::to_string(d) + "]";
  if (a.residual) {
    require_tensor(a.residual, op, "residual", DType::F32);
    require(a.residual->shape() == a.x->shape(), op,
            "residual " + a.residual->describe() + " must have the shape of x " + a.x->describe());
  }
  require_weight(a.gamma, op, "gamma", caps);
  require(a.gamma->shape() == std::vector<int64_t>{int64_t(d)}, op,
          "gamma " + a.gamma->describe() + " must be " + dshape + " (the last dim of x)");
  require(a.beta && !a.beta->empty(), op, "beta is missing");
  require(a.beta->shape() == a.gamma->shape() && a.beta->dtype() == a.gamma->dtype(), op,
          "beta " + a.beta->describe() + " must be " + a.gamma->describe() + " like gamma");
  require_tensor(a.y, op, "y", DType::F32);
  require(a.y->shape() == a.x->shape(), op,
          "y " + a.y->describe() + " must have the shape of x " + a.x->describe());
  require(!tensors_overlap(a.y, a.x), op, "y must not alias x");
  require(!tensors_overlap(a.y, a.residual), op, "y must not alias residual");
  require(std::isfinite(a.eps) && a.eps >= 0, op, "eps must be finite and >= 0");
  require(n < (1ull << 32), op, "x has more than 2^32 elements");
  const bool sub = use_subgroups(caps, a.variant, op);
  const bool f16 = a.gamma->dtype() == DType::F16;

  const RowTiling t = row_tiling(caps, d, rows);
  const std::string name = std::string("layernorm_") + (sub ? "subgroup" : "shared") + (f16 ? "_f16" : "_f32");
  const Pipeline& p = r.pipeline(name, {t.wg, t.items, t.aligned, t.rows});
  const LayernormPush push{uint32_t(rows), uint32_t(d), t.d4, a.eps, a.residual ? 1u : 0u};
  const Tensor* res = a.residual ? a.residual : a.x;  // unread when absent
  const std::string variant = sub ? "subgroup" : "shared";
  r.dispatch(p, {{a.x, false}, {res, false}, {a.gamma, false}, {a.beta, false}, {a.y, true}}, push,
             r.fold(ceil_div(rows, t.rows)), "layernorm/" + variant);
  const double wbytes = double(dtype_size(a.gamma->dtype())) * 2 * double(d);
  return {op,
          variant,
          {{"WG", t.wg}, {"ITEMS", t.items}, {"ALIGNED", t.aligned}, {"ROWS", t.rows}},
          double(n) * (a.residual ? 8 : 7),
          double(n) * 4 * (a.residual ? 3 : 2) + wbytes};
}

// ---- descriptor ----

namespace {

OpCase layernorm_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const auto* x = &D->h(cases::random(size_t(o.m * o.n), 21));
  const auto* res = &D->h(cases::random(size_t(o.m * o.n), 22));
  const auto* g = &D->h(cases::stored(cases::random(size_t(o.n), 23), o.dtype));
  const auto* b = &D->h(cases::stored(cases::random(size_t(o.n), 24), o.dtype));
  LayerNormArgs a;
  a.x = &D->t(ctx.tensor({o.m, o.n}, *x));
  a.residual = o.residual ? &D->t(ctx.tensor({o.m, o.n}, *res)) : nullptr;
  a.gamma = &D->t(ctx.tensor({o.n}, *g, o.dtype));
  a.beta = &D->t(ctx.tensor({o.n}, *b, o.dtype));
  a.y = &D->t(ctx.tensor({o.m, o.n}));
  a.eps = 1e-5f;
  OpCase c = cases::with_data(D, "rows=" + std::to_string(o.m) + " d=" + std::to_string(o.n) + " " +
                                     dtype_name(o.dtype) + (o.residual ? " +residual" : ""));
  c.record = [a](Recorder& rec, const std::string& v) {
    LayerNormArgs l = a;
    l.variant = v;
    return layernorm(rec, l);
  };
  c.error = [ctx = &ctx, D = D.get(), x, res, g, b, a, o]() {
    if (D->want.empty()) D->want = ref::layernorm(*x, o.residual ? res : nullptr, *g, *b, o.m, o.n, 1e-5);
    return ref::max_rel_error(ctx->read(*a.y), D->want);
  };
  return c;
}

}  // namespace

VKF_OP_DESCRIPTOR(layernorm) {
  OpDescriptor d;
  d.name = "layernorm";
  d.summary = "y = LayerNorm(x + residual)·gamma + beta over rows (dtype: gamma, beta; residual)";
  d.variants = {"subgroup", "shared"};
  d.knobs = {"WG", "ITEMS", "ALIGNED", "ROWS"};
  d.dims = {"m", "n"};
  d.bench_shapes = {cases::rows_shape(128, 768)};
  d.make_case = layernorm_case;
  return d;
}

}  // namespace vkf
