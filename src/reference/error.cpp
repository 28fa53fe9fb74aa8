#include <cmath>

#include "vkformer/reference.hpp"

namespace vkf::ref {

double max_rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;  // NaN must never pass
    max_err = std::max(max_err, std::fabs(double(got[i]) - want[i]));
    max_ref = std::max(max_ref, std::fabs(want[i]));
  }
  return max_ref > 0 ? max_err / max_ref : max_err;
}

}  // namespace vkf::ref
