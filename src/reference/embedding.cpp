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

std::vector<double> embedding_at(const std::vector<int32_t>& ids, uint32_t batch, uint32_t len,
                                 const std::vector<float>& table, uint32_t d,
                                 const std::vector<float>& positions,
                                 const std::vector<int32_t>& position_ids, double scale) {
  const int64_t vocab = int64_t(table.size() / d), max_pos = int64_t(positions.size() / d);
  std::vector<double> out(size_t(batch) * len * d);
  for (size_t row = 0; row < size_t(batch) * len; ++row) {
    // Ids and positions out of range are clamped, as the kernel does.
    const int64_t id = std::clamp<int64_t>(ids[row], 0, vocab - 1);
    const int64_t pos = std::clamp<int64_t>(position_ids[row], 0, max_pos - 1);
    for (uint32_t c = 0; c < d; ++c)
      out[row * d + c] = double(table[size_t(id) * d + c]) * scale + double(positions[size_t(pos) * d + c]);
  }
  return out;
}

}  // namespace vkf::ref
