// RMSNorm in double precision (src/ops/rmsnorm.cpp checks against it).
#include <cmath>

#include "vkformer/reference.hpp"

namespace vkf::ref {

std::vector<double> rmsnorm(const std::vector<float>& x, const std::vector<float>& gamma, int64_t rows,
                            int64_t d, double eps) {
  std::vector<double> y(size_t(rows * d));
  for (int64_t r = 0; r < rows; ++r) {
    const size_t base = size_t(r * d);
    double ms = 0;
    for (int64_t c = 0; c < d; ++c) ms += double(x[base + c]) * double(x[base + c]);
    const double rrms = 1.0 / std::sqrt(ms / double(d) + eps);
    for (int64_t c = 0; c < d; ++c) y[base + c] = double(x[base + c]) * rrms * gamma[c];
  }
  return y;
}

}  // namespace vkf::ref
