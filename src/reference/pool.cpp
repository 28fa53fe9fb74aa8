#include <algorithm>
#include <cmath>

#include "vkformer/reference.hpp"

namespace vkf::ref {

std::vector<double> mean_pool(const std::vector<float>& x, const std::vector<int32_t>* key_padding,
                              uint32_t mask_stride, uint32_t batch, uint32_t len, uint32_t d, PoolMode mode) {
  std::vector<double> out(size_t(batch) * d, 0.0);
  for (uint32_t b = 0; b < batch; ++b) {
    double* o = &out[size_t(b) * d];
    auto row = [&](uint32_t i, uint32_t c) { return double(x[(size_t(b) * len + i) * d + c]); };
    if (mode == PoolMode::First) {
      for (uint32_t c = 0; c < d; ++c) o[c] = row(0, c);
      continue;
    }
    uint32_t count = 0;
    for (uint32_t i = 0; i < len; ++i) {
      if (key_padding && (*key_padding)[size_t(b) * mask_stride + i] != 0) continue;
      for (uint32_t c = 0; c < d; ++c) o[c] = mode == PoolMode::Max && count ? std::max(o[c], row(i, c))
                                           : mode == PoolMode::Max            ? row(i, c)
                                                                              : o[c] + row(i, c);
      ++count;
    }
    const double div = mode == PoolMode::Mean ? std::max(count, 1u) : mode == PoolMode::MeanSqrtLen && count
                                                                          ? std::sqrt(double(count))
                                                                          : 1.0;
    for (uint32_t c = 0; c < d; ++c) o[c] /= div;
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
