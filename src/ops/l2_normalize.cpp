// Row L2 normalization: shaders/l2_normalize.comp, reference in src/reference/pool.cpp.
#include <cmath>

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/l2_normalize.h"

namespace vkf {

OpInfo l2_normalize(Recorder& rec, const L2NormalizeArgs& a) {
  auto& r = internals(rec);
  const Capabilities& caps = r.ctx.caps;
  const char* op = "l2_normalize";
  require_tensor(a.x, op, "x", DType::F32);
  require(!a.x->shape().empty(), op, "x must have at least one dimension");
  require_tensor(a.y, op, "y", DType::F32);
  require(a.y->shape() == a.x->shape(), op, "y " + a.y->describe() + " must have the shape of x " + a.x->describe());
  require(!tensors_overlap(a.y, a.x), op, "y must not alias x");
  require(std::isfinite(a.eps) && a.eps >= 0, op, "eps must be finite and >= 0");
  const uint64_t n = uint64_t(a.x->numel()), d = uint64_t(a.x->dim(-1)), rows = d ? n / d : 0;
  require(n < (1ull << 32), op, "x has 2^32 elements or more");
  const bool sub = use_subgroups(caps, a.variant, op);

  // Rows are short (an embedding); a CPU device wants a few invocations with
  // many elements each, a GPU a wider group.
  const uint32_t sg = std::max(1u, caps.subgroup_size);
  const uint32_t cap = caps.device_type == "cpu" ? 64 : 256;
  const uint32_t wg = workgroup_size(caps, std::max<uint32_t>(sg, std::min<uint64_t>(cap, (d / 8 + sg - 1) / sg * sg)));
  const std::string variant = sub ? "subgroup" : "shared";
  const Pipeline& p = r.pipeline("l2_normalize_" + variant, {wg});
  const L2NormalizePush push{uint32_t(rows), uint32_t(d), a.eps};
  r.dispatch(p, {{a.x, false}, {a.y, true}}, push, r.fold(rows), "l2_normalize/" + variant);
  return {op, variant, {{"WG", wg}}, double(n) * 3, double(n) * 8};
}

// ---- descriptor ----

namespace {

OpCase l2_normalize_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const auto* x = &D->h(cases::random(size_t(o.m * o.n), 46));
  L2NormalizeArgs a;
  a.x = &D->t(ctx.tensor({o.m, o.n}, *x));
  a.y = &D->t(ctx.tensor({o.m, o.n}));
  OpCase c = cases::with_data(D, "rows=" + std::to_string(o.m) + " d=" + std::to_string(o.n));
  c.record = [a](Recorder& rec, const std::string& v) {
    L2NormalizeArgs l = a;
    l.variant = v;
    return l2_normalize(rec, l);
  };
  c.error = [ctx = &ctx, D = D.get(), x, a, o]() {
    if (D->want.empty()) D->want = ref::l2_normalize(*x, o.m, o.n, 1e-12);
    return ref::max_rel_error(ctx->read(*a.y), D->want);
  };
  return c;
}

}  // namespace

VKF_OP_DESCRIPTOR(l2_normalize) {
  OpDescriptor d;
  d.name = "l2_normalize";
  d.summary = "y = x / sqrt(max(sum x², eps)) over rows (tf.math.l2_normalize)";
  d.variants = {"subgroup", "shared"};
  d.knobs = {"WG"};
  d.dims = {"m", "n"};
  d.bench_shapes = {cases::rows_shape(8, 512)};  // a batch of sentence embeddings
  d.make_case = l2_normalize_case;
  return d;
}

}  // namespace vkf
