// T5's relative-position buckets, on the host. PyTorch computes the large
// buckets as max_exact + long(log(n.float() / max_exact) / math.log(max_distance
// / max_exact) · (num_buckets − max_exact)) in fp32; the same fp32 steps here
// give the same truncations (tests/test_t5.cpp checks every relative position
// of several configs against T5Attention._relative_position_bucket).
#include <algorithm>
#include <cmath>

#include "families/transformer/stack.hpp"

namespace vkf {
namespace {

/// The bucket of distance n ≥ 0 among `nb` buckets (HF's code after the sign is handled).
int32_t distance_bucket(uint32_t n, uint32_t nb, uint32_t max_distance) {
  const uint32_t max_exact = nb / 2;
  if (n < max_exact) return int32_t(n);
  const float ratio = float(n) / float(max_exact);
  const float span = float(std::log(double(max_distance) / double(max_exact)));  // a Python float, then fp32
  const float v = std::log(ratio) / span * float(nb - max_exact);
  return int32_t(std::min<int64_t>(int64_t(max_exact) + int64_t(v), int64_t(nb) - 1));
}

}  // namespace

std::vector<int32_t> t5_buckets(uint32_t num_buckets, uint32_t max_distance, bool bidirectional) {
  const int64_t m = max_distance;
  std::vector<int32_t> out(size_t(2 * m + 1));
  for (int64_t r = -m; r <= m; ++r) {
    int32_t b;
    if (bidirectional) {
      const uint32_t half = num_buckets / 2;
      b = (r > 0 ? int32_t(half) : 0) + distance_bucket(uint32_t(std::abs(r)), half, max_distance);
    } else {
      b = distance_bucket(uint32_t(std::max<int64_t>(-r, 0)), num_buckets, max_distance);
    }
    out[size_t(r + m)] = b;
  }
  return out;
}

}  // namespace vkf
