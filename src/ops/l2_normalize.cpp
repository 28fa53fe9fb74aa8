// Row L2 normalization: shaders/l2_normalize.comp, reference in src/reference/pool.cpp.
#include <cmath>

#include "ops/op_util.hpp"
#include "push/l2_normalize.h"

namespace vkf {

OpInfo l2_normalize(Recorder& rec, const L2NormalizeArgs& a) {
  auto& r = rec.impl();
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

}  // namespace vkf
