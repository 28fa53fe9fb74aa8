// Elementwise add: shaders/add.comp, reference in src/reference/add.cpp.
#include "ops/binary_op.hpp"

namespace vkf {

OpInfo add(Recorder& rec, const AddArgs& a) { return binary_op(rec, a, "add"); }

// ---- descriptor ----

VKF_OP_DESCRIPTOR(add) {
  return {"add", "y = a + b, elementwise", {"default"}, {"WG", "ITEMS"}, {"m", "n"}, {cases::rows_shape(128, 768)},
          [](Context& ctx, const OpShape& o) { return binary_case(ctx, o, add, ref::add); }};
}

}  // namespace vkf
