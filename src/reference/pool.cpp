#include <algorithm>
#include <cmath>

#include "vkformer/reference.hpp"

namespace vkf::ref {

std::vector<double> mean_pool(const std::vector<float>& x, const std::vector<int32_t>* key_padding,
                              uint32_t mask_stride, uint32_t batch, uint32_t len, uint32_t d) {
  std::vector<double> out(size_t(batch) * d, 0.0);
  for (uint32_t b = 0; b < batch; ++b) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < len; ++i) {
      if (key_padding && (*key_padding)[size_t(b) * mask_stride + i] != 0) continue;
      ++count;
      for (uint32_t c = 0; c < d; ++c) out[size_t(b) * d + c] += double(x[(size_t(b) * len + i) * d + c]);
    }
    for (uint32_t c = 0; c < d; ++c) out[size_t(b) * d + c] /= std::max(count, 1u);
  }
  return out;
}

std::vector<double> l2_normalize(const std::vector<float>& x, int64_t rows, int64_t d, double eps) {
  std::vector<double> y(size_t(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < d; ++c) s += double(x[size_t(r * d + c)]) * double(x[size_t(r * d + c)]);
    const double scale = 1.0 / std::sqrt(std::max(s, eps));
    for (int64_t c = 0; c < d; ++c) y[size_t(r * d + c)] = double(x[size_t(r * d + c)]) * scale;
  }
  return y;
}

}  // namespace vkf::ref
