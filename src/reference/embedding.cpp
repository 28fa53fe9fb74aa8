#include <algorithm>

#include "vkformer/reference.hpp"

namespace vkf::ref {

std::vector<double> embedding(const std::vector<int32_t>& ids, uint32_t batch, uint32_t len,
                              const std::vector<float>& table, uint32_t d,
                              const std::vector<float>* positions, uint32_t pos_offset,
                              double scale) {
  const int64_t vocab = int64_t(table.size() / d);
  std::vector<double> out(size_t(batch) * len * d);
  for (uint32_t b = 0; b < batch; ++b)
    for (uint32_t i = 0; i < len; ++i) {
      const size_t row = size_t(b) * len + i;
      // Out-of-range ids are clamped, as the kernel does.
      const int64_t id = std::clamp<int64_t>(ids[row], 0, vocab - 1);
      for (uint32_t c = 0; c < d; ++c) {
        double v = double(table[size_t(id) * d + c]) * scale;
        if (positions) v += double((*positions)[size_t(pos_offset + i) * d + c]);
        out[row * d + c] = v;
      }
    }
  return out;
}

}  // namespace vkf::ref
