// Elementwise add: shaders/add.comp, reference in src/reference/add.cpp.
#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/add.h"

namespace vkf {

OpInfo add(Recorder& rec, const AddArgs& a) {
  auto& r = internals(rec);
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

// ---- descriptor ----

namespace {

OpCase add_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const auto* a = &D->h(cases::random_vector(size_t(o.m * o.n), 41));
  const auto* b = &D->h(cases::random_vector(size_t(o.m * o.n), 42));
  const AddArgs args{&D->t(ctx.tensor({o.m, o.n}, *a)), &D->t(ctx.tensor({o.m, o.n}, *b)),
                     &D->t(ctx.tensor({o.m, o.n})), ""};
  return cases::make(D, std::to_string(o.m) + "x" + std::to_string(o.n), cases::recording(add, args),
                     cases::against(ctx, *args.y, [=] { return ref::add(*a, *b); }));
}

}  // namespace

VKF_OP_DESCRIPTOR(add) {
  return {"add", "y = a + b, elementwise", {"default"}, {"WG", "ITEMS"}, {"m", "n"}, {cases::rows_shape(128, 768)},
          add_case};
}

}  // namespace vkf
