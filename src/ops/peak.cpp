// The device-peak microbenchmarks (ops/peak.hpp): shaders/peak_fma.comp and
// shaders/peak_bandwidth.comp, references in src/reference/peak.cpp.
#include "ops/peak.hpp"

#include <algorithm>

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/peak_bandwidth.h"
#include "push/peak_fma.h"

namespace vkf {

OpInfo peak_fma(Recorder& rec, const PeakFmaArgs& a) {
  const auto [r, caps, op] = start_op(rec, "peak_fma");
  require_tensor(a.y, op, "y", DType::F32);
  VKF_REQUIRE(a.chains >= 1 && a.chains <= 8, op, "chains must be 1..8");
  VKF_REQUIRE(uint64_t(a.y->numel()) >= uint64_t(a.groups) * a.wg, op, "y must hold groups·wg values");
  const Pipeline& p = r.pipeline("peak_fma", {a.wg, a.chains});
  r.dispatch(p, {{a.y, true}}, PeakFmaPush{a.iters, a.groups, a.a, a.b}, r.fold(a.groups), op);
  const double n = double(a.groups) * a.wg;
  return {op, "default", {{"WG", a.wg}, {"CHAINS", a.chains}}, n * a.iters * a.chains * 4 * 2, n * 4};
}

// A CPU device runs few invocations per workgroup best; a GPU wants them wide.
uint32_t peak_fma_workgroup(const Capabilities& c) { return workgroup_size(c, c.device_type == "cpu" ? 64 : 256); }
// lavapipe streamed best with 256×16 (9.9 GB/s; 64×16: 7.7, 512×8: 9.8).
uint32_t peak_bandwidth_workgroup(const Capabilities& c) { return workgroup_size(c, 256); }

uint32_t peak_bandwidth_groups(const PeakBandwidthArgs& a) {
  const uint64_t n_vec4 = uint64_t(a.x->numel()) / 4, per_group = uint64_t(a.wg) * a.items;
  return uint32_t((n_vec4 + per_group - 1) / per_group);
}

bool peak_bandwidth_texel_ok(const PeakBandwidthArgs& a, const Capabilities& c) { return texel_readable(a.x, 4, c); }

OpInfo peak_bandwidth(Recorder& rec, const PeakBandwidthArgs& a) {
  const auto [r, caps, op] = start_op(rec, "peak_bandwidth");
  require_tensor(a.x, op, "x", DType::F32);
  require_tensor(a.y, op, "y", DType::F32);
  VKF_REQUIRE(a.x->numel() % 4 == 0, op, "x must hold whole vec4s");
  const uint32_t groups = peak_bandwidth_groups(a);
  VKF_REQUIRE(uint64_t(a.y->numel()) >= uint64_t(groups) * a.wg, op, "y must hold one value per invocation");
  VKF_REQUIRE(!a.texel || peak_bandwidth_texel_ok(a, caps), op, "x cannot be read as RGBA32F texels on this device");
  const Pipeline& p = r.pipeline(a.texel ? "peak_bandwidth_texel" : "peak_bandwidth", {a.wg, a.items});
  r.dispatch(p, {{a.x, false}, {a.y, true}}, PeakBandwidthPush{uint32_t(a.x->numel() / 4), groups},
             r.fold(groups), op);
  return {op, a.texel ? "texel" : "default", {{"WG", a.wg}, {"ITEMS", a.items}}, double(a.x->numel()),
          double(a.x->bytes())};
}

// ---- descriptors: internal, for `vkformer kernel peak_fma` and the op test ----

namespace {

// n invocations (rounded up to whole workgroups) run m steps.
OpCase peak_fma_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  PeakFmaArgs a;
  a.wg = peak_fma_workgroup(ctx.caps());
  a.groups = uint32_t((o.n + a.wg - 1) / a.wg);
  a.iters = uint32_t(o.m);
  a.y = &D->t(ctx.tensor({int64_t(a.groups) * a.wg}));
  // Each fp32 step rounds twice (~2^-23 relative); x ← x·a + b forgets an error
  // by a factor a a step, so at most min(steps, 1 / (1 - a)) of them add up.
  const double bound = std::max(1e-5, 4 * 0x1p-24 * std::min(double(a.iters), 1 / (1 - double(a.a))));
  return cases::make(D, "invocations=" + std::to_string(int64_t(a.groups) * a.wg) + " steps=" + std::to_string(o.m),
                     [a](Recorder& rec, const std::string&) { return peak_fma(rec, a); },
                     cases::against(ctx, *a.y, [a] { return ref::peak_fma(a); }), bound);
}

// n floats streamed (rounded up to whole vec4s).
OpCase peak_bandwidth_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const int64_t n = (o.n + 3) / 4 * 4;
  const auto* x = &D->h(cases::random_vector(size_t(n), 71));
  PeakBandwidthArgs a;
  a.wg = peak_bandwidth_workgroup(ctx.caps());
  a.x = &D->t(ctx.tensor({n}, *x));
  a.y = &D->t(ctx.tensor({int64_t(peak_bandwidth_groups(a)) * a.wg}));
  return cases::make(D, "floats=" + std::to_string(n),
                     [a](Recorder& rec, const std::string& variant) {
                       PeakBandwidthArgs b = a;
                       b.texel = variant == "texel";
                       return peak_bandwidth(rec, b);
                     },
                     cases::against(ctx, *a.y, [a, x] { return ref::peak_bandwidth(*x, a); }));
}

}  // namespace

VKF_OP_DESCRIPTOR(peak_fma) {
  return {"peak_fma", "device peak, compute: independent vec4 FMA chains (m: steps, n: invocations)", {"default"},
          {"WG", "CHAINS"}, {"m", "n"}, {}, peak_fma_case, nullptr, /*internal=*/true};
}

VKF_OP_DESCRIPTOR(peak_bandwidth) {
  return {"peak_bandwidth", "device peak, memory: streams n floats with vec4 loads", {"default", "texel"}, {"WG", "ITEMS"},
          {"n"}, {}, peak_bandwidth_case, nullptr, /*internal=*/true};
}

}  // namespace vkf
