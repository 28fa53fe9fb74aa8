#include "vkformer/reference.hpp"

namespace vkf::ref {

std::vector<double> mul(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<double> y(a.size());
  for (size_t i = 0; i < a.size(); ++i) y[i] = double(a[i]) * double(b[i]);
  return y;
}

}  // namespace vkf::ref
