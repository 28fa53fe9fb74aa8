// Elementwise ops on two same-shaped f32 tensors (add, mul): one shader each
// with the same bindings, push constants (push/add.h) and grid.
#pragma once

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/add.h"

namespace vkf {

/// Checks y = a ∘ b's operands and dispatches `op`'s shader (named as the op).
inline OpInfo binary_op(Recorder& rec, const AddArgs& a, const char* op) {
  auto& r = internals(rec);
  require_tensor(a.a, op, "a", DType::F32);
  require_tensor(a.b, op, "b", DType::F32);
  require_tensor(a.y, op, "y", DType::F32);
  VKF_REQUIRE(a.a->shape() == a.b->shape() && a.a->shape() == a.y->shape(), op,
              "a " + a.a->describe() + ", b " + a.b->describe() + " and y " + a.y->describe() +
                  " must have one shape");
  VKF_REQUIRE(a.variant.empty() || a.variant == "default", op, "unknown variant \"" + a.variant + "\"");
  const uint32_t wg = workgroup_size(r.ctx.caps, 256), items = 4;
  const uint64_t n = uint64_t(a.a->numel());
  VKF_REQUIRE(n < (1ull << 32), op, "more than 2^32 elements");
  const Pipeline& p = r.pipeline(op, {wg, items});
  const AddPush push{uint32_t(n)};
  r.dispatch(p, {{a.a, false}, {a.b, false}, {a.y, true}}, push, r.fold(ceil_div(n, wg * items)),
             std::string(op) + "/default");
  return {op, "default", {{"WG", wg}, {"ITEMS", items}}, double(n), double(n) * 12};
}

/// The case of an elementwise op at m×n: random a and b against `want(a, b)`.
inline OpCase binary_case(Context& ctx, const OpShape& o, OpInfo (*op)(Recorder&, const AddArgs&),
                          std::vector<double> (*want)(const std::vector<float>&, const std::vector<float>&)) {
  auto D = std::make_shared<cases::Data>();
  const auto* a = &D->h(cases::random_vector(size_t(o.m * o.n), 41));
  const auto* b = &D->h(cases::random_vector(size_t(o.m * o.n), 42));
  const AddArgs args{&D->t(ctx.tensor({o.m, o.n}, *a)), &D->t(ctx.tensor({o.m, o.n}, *b)),
                     &D->t(ctx.tensor({o.m, o.n})), ""};
  return cases::make(D, std::to_string(o.m) + "x" + std::to_string(o.n), cases::recording(op, args),
                     cases::against(ctx, *args.y, [=] { return want(*a, *b); }));
}

}  // namespace vkf
