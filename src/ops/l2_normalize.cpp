// Row L2 normalization: shaders/l2_normalize.comp, reference in src/reference/pool.cpp.
#include <cmath>

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/l2_normalize.h"

namespace vkf {

OpInfo l2_normalize(Recorder& rec, const L2NormalizeArgs& a) {
  const auto [r, caps, op] = start_op(rec, "l2_normalize");
  const auto [rows, d, n] = check_rows(op, a.x, a.y, a.eps);
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
  const auto* x = &D->h(cases::random_vector(size_t(o.m * o.n), 46));
  const L2NormalizeArgs a{&D->t(ctx.tensor({o.m, o.n}, *x)), &D->t(ctx.tensor({o.m, o.n})), 1e-12f, ""};
  return cases::make(D, "rows=" + std::to_string(o.m) + " d=" + std::to_string(o.n), cases::recording(l2_normalize, a),
                     cases::against(ctx, *a.y, [=] { return ref::l2_normalize(*x, o.m, o.n, 1e-12); }));
}

}  // namespace

// Standard shape: a batch of sentence embeddings.
VKF_OP_DESCRIPTOR(l2_normalize) {
  return {"l2_normalize", "y = x / sqrt(max(sum x², eps)) over rows (tf.math.l2_normalize)", {"subgroup", "shared"},
          {"WG"}, {"m", "n"}, {cases::rows_shape(8, 512)}, l2_normalize_case};
}

}  // namespace vkf
