// Elementwise add: shaders/add.comp, reference in src/reference/add.cpp.
#include "ops/op_util.hpp"
#include "push/add.h"

namespace vkf {

OpInfo add(Recorder& rec, const AddArgs& a) {
  auto& r = rec.impl();
  require_tensor(a.a, "add", "a", DType::F32);
  require_tensor(a.b, "add", "b", DType::F32);
  require_tensor(a.y, "add", "y", DType::F32);
  require(a.a->shape() == a.b->shape() && a.a->shape() == a.y->shape(), "add",
          "a " + a.a->describe() + ", b " + a.b->describe() + " and y " + a.y->describe() +
              " must have one shape");
  require(a.variant.empty() || a.variant == "default", "add", "unknown variant \"" + a.variant + "\"");
  const uint32_t wg = workgroup_size(r.ctx.caps, 256), items = 4;
  const uint64_t n = uint64_t(a.a->numel());
  require(n < (1ull << 32), "add", "more than 2^32 elements");
  const Pipeline& p = r.pipeline("add", {wg, items});
  const AddPush push{uint32_t(n)};
  r.dispatch(p, {{a.a, false}, {a.b, false}, {a.y, true}}, push, r.fold(ceil_div(n, wg * items)),
             "add/default");
  return {"add", "default", {{"WG", wg}, {"ITEMS", items}}, double(n), double(n) * 12};
}

}  // namespace vkf
