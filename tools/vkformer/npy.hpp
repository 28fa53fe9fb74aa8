// NumPy .npy files (format 1.0, little-endian float32, C order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vkf::tools {

/// Writes `data` with `shape` to `path` (given with `option`; "-": stdout)
/// with write_output (output_file.hpp): a failure leaves no file behind.
/// @throws vkf::Error naming the file when it cannot be written.
void write_npy(const std::string& path, const std::vector<uint64_t>& shape,
               const std::vector<float>& data, const std::string& option = "--out");

}  // namespace vkf::tools
