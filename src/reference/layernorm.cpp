#include <cmath>

#include "vkformer/reference.hpp"

namespace vkf::ref {

std::vector<double> layernorm(const std::vector<float>& x, const std::vector<float>* residual,
                              const std::vector<float>& gamma, const std::vector<float>& beta,
                              int64_t rows, int64_t d, double eps) {
  std::vector<double> y(static_cast<size_t>(rows * d)), v(static_cast<size_t>(d));
  for (int64_t r = 0; r < rows; ++r) {
    const size_t base = size_t(r * d);
    double mean = 0, var = 0;
    for (int64_t c = 0; c < d; ++c) {
      v[c] = double(x[base + c]) + (residual ? double((*residual)[base + c]) : 0.0);
      mean += v[c];
    }
    mean /= double(d);
    for (int64_t c = 0; c < d; ++c) var += (v[c] - mean) * (v[c] - mean);
    var /= double(d);  // biased, as torch.nn.LayerNorm
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < d; ++c) y[base + c] = (v[c] - mean) * rstd * gamma[c] + beta[c];
  }
  return y;
}

}  // namespace vkf::ref
