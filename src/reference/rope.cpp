#include <cmath>

#include "vkformer/reference.hpp"

namespace vkf::ref {

std::vector<double> rope(const std::vector<float>& x, uint32_t batch, uint32_t len, uint32_t width,
                         const RopeArgs& a, const std::vector<float>& inv_freq,
                         const std::vector<int32_t>* position_ids) {
  const uint32_t rot = a.rotary_dim ? a.rotary_dim : a.head_dim, half = rot / 2;
  std::vector<double> out(x.begin(), x.end());
  for (uint32_t b = 0; b < batch; ++b)
    for (uint32_t t = 0; t < len; ++t) {
      const size_t row = size_t(b) * len + t;
      // HF: position_ids.float(), then an fp32 product with inv_freq.
      const float pos = position_ids ? float((*position_ids)[row]) : float(uint64_t(a.pos_offset) + t);
      for (uint32_t i = 0; i < half; ++i) {
        const float angle = pos * inv_freq[i];  // rounded to fp32
        const double c = std::cos(double(angle)) * a.scaling, s = std::sin(double(angle)) * a.scaling;
        for (uint32_t h = 0; h < a.heads; ++h) {
          const size_t j = row * width + a.col0 + size_t(h) * a.head_dim + (a.interleaved ? 2 * i : i);
          const size_t j2 = j + (a.interleaved ? 1 : half);
          const double x1 = x[j], x2 = x[j2];
          out[j] = x1 * c - x2 * s;
          out[j2] = x2 * c + x1 * s;
        }
      }
    }
  return out;
}

}  // namespace vkf::ref
