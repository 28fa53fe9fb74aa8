// Elementwise multiply (T5's gated FFN): shaders/mul.comp, reference in src/reference/mul.cpp.
#include "ops/binary_op.hpp"

namespace vkf {

OpInfo mul(Recorder& rec, const MulArgs& a) { return binary_op(rec, a, "mul"); }

// ---- descriptor ----

VKF_OP_DESCRIPTOR(mul) {
  return {"mul", "y = a ⊙ b, elementwise", {"default"}, {"WG", "ITEMS"}, {"m", "n"}, {cases::rows_shape(128, 768)},
          [](Context& ctx, const OpShape& o) { return binary_case(ctx, o, mul, ref::mul); }};
}

}  // namespace vkf
