// A wrong command line (a bad option value, a missing or contradictory option):
// main() reports it like any error but exits 2, as getopt and argparse do,
// while errors in the input files or on the device exit 1.
#pragma once

#include <cmath>
#include <string>

#include "vkformer/tensor.hpp"  // vkf::Error

namespace vkf::tools {

class UsageError : public Error {
 public:
  using Error::Error;
};

/// @throws UsageError "OPTION must be a finite number" for NaN and ±inf.
inline void require_finite(double v, const std::string& option) {
  if (!std::isfinite(v)) throw UsageError(option + " must be a finite number, got " + std::to_string(v));
}

}  // namespace vkf::tools
