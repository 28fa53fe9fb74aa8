#include <cmath>

#include "vkformer/reference.hpp"

namespace vkf::ref {

double activation(double v, Activation act) {
  switch (act) {
    case Activation::None: return v;
    case Activation::ReLU: return v > 0 ? v : 0;
    case Activation::GeluErf: return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    case Activation::GeluTanh: {
      const double c = std::sqrt(2.0 / M_PI);
      return 0.5 * v * (1 + std::tanh(c * (v + 0.044715 * v * v * v)));
    }
    case Activation::SiLU: return v / (1 + std::exp(-v));
    case Activation::Tanh: return std::tanh(v);
  }
  return v;
}

std::vector<double> gemm(const std::vector<float>& x, const std::vector<float>& w,
                         const std::vector<float>* bias, const std::vector<float>* residual,
                         int64_t M, int64_t N, int64_t K, Activation act) {
  std::vector<double> y(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = bias ? double((*bias)[size_t(n)]) : 0.0;
      for (int64_t k = 0; k < K; ++k) s += double(x[size_t(m * K + k)]) * double(w[size_t(n * K + k)]);
      s = activation(s, act);
      if (residual) s += double((*residual)[size_t(m * N + n)]);
      y[size_t(m * N + n)] = s;
    }
  return y;
}

}  // namespace vkf::ref
