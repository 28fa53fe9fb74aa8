#include <algorithm>
#include <cmath>
#include <numeric>

#include "vkformer/reference.hpp"

namespace vkf::ref {

void topk(const std::vector<float>& x, int64_t rows, int64_t n, uint32_t k,
          std::vector<float>& values, std::vector<int32_t>& indices) {
  values.assign(size_t(rows) * k, 0.f);
  indices.assign(size_t(rows) * k, 0);
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data() + r * n;
    // Larger first, NaN above everything (as torch.topk); equal values
    // (including -0 and +0) by lower index.
    auto before = [&](int32_t a, int32_t b) {
      const bool na = std::isnan(row[a]), nb = std::isnan(row[b]);
      if (na || nb) return na && (!nb || a < b);
      return row[a] > row[b] || (row[a] == row[b] && a < b);
    };
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (uint32_t j = 0; j < k; ++j) {
      values[size_t(r) * k + j] = row[order[j]];
      indices[size_t(r) * k + j] = order[j];
    }
  }
}

}  // namespace vkf::ref
