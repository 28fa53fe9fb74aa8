// T5's relative-position bias as its definition reads (src/ops/position_bias.cpp checks against it).
#include <algorithm>

#include "vkformer/reference.hpp"

namespace vkf::ref {

std::vector<double> position_bias(const std::vector<float>& table, const std::vector<int32_t>& buckets,
                                  uint32_t heads, uint32_t q_len, uint32_t kv_len, uint32_t q_offset) {
  const int64_t max_rel = int64_t(buckets.size() / 2), num_buckets = int64_t(table.size() / heads);
  std::vector<double> out(size_t(heads) * q_len * kv_len);
  size_t e = 0;
  for (uint32_t h = 0; h < heads; ++h)
    for (uint32_t i = 0; i < q_len; ++i)
      for (uint32_t j = 0; j < kv_len; ++j) {
        const int64_t rel = std::clamp(int64_t(j) - int64_t(i) - int64_t(q_offset), -max_rel, max_rel);
        const int64_t b = std::clamp<int64_t>(buckets[size_t(rel + max_rel)], 0, num_buckets - 1);
        out[e++] = table[size_t(b) * heads + h];
      }
  return out;
}

}  // namespace vkf::ref
