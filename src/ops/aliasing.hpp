// Whether two tensors share bytes: outputs that a kernel writes while other
// workgroups still read the input must not overlap it.
#pragma once

#include "vk/memory.hpp"
#include "vkformer/tensor.hpp"

namespace vkf {

inline bool tensors_overlap(const Tensor* a, const Tensor* b) {
  if (!a || !b || a->empty() || b->empty()) return false;
  const Allocation &x = *a->allocation(), &y = *b->allocation();
  return x.buffer == y.buffer && x.offset < y.offset + y.size && y.offset < x.offset + x.size;
}

}  // namespace vkf
