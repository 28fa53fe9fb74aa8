// References of the device-peak microbenchmarks (src/ops/peak.cpp), in double.
#include <cmath>

#include "ops/peak.hpp"

namespace vkf::ref {

std::vector<double> peak_fma(const PeakFmaArgs& a) {
  std::vector<double> y(size_t(a.groups) * a.wg);
  for (size_t i = 0; i < y.size(); ++i) {
    double s = 0;
    for (uint32_t c = 0; c < a.chains; ++c)
      for (int lane = 0; lane < 4; ++lane) {
        // The shader's start value, rounded to fp32 as it computes it.
        double x = double(float(float(i & 255u) * 1e-3f + float(c)) + float(lane));
        for (uint32_t t = 0; t < a.iters; ++t) x = x * double(a.a) + double(a.b);
        s += x;
      }
    y[i] = s;
  }
  return y;
}

std::vector<double> peak_bandwidth(const std::vector<float>& x, const PeakBandwidthArgs& a) {
  const size_t n_vec4 = x.size() / 4;
  const uint32_t groups = uint32_t((n_vec4 + size_t(a.wg) * a.items - 1) / (size_t(a.wg) * a.items));
  std::vector<double> y(size_t(groups) * a.wg, 0.0);
  for (uint32_t g = 0; g < groups; ++g)
    for (uint32_t l = 0; l < a.wg; ++l)
      for (uint32_t k = 0; k < a.items; ++k) {
        const size_t i = (size_t(g) * a.items * a.wg) + l + size_t(k) * a.wg;
        if (i < n_vec4)
          for (int e = 0; e < 4; ++e) y[size_t(g) * a.wg + l] += x[4 * i + size_t(e)];
      }
  return y;
}

}  // namespace vkf::ref
