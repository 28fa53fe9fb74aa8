// The SPIR-V embedded at build time (cmake/shaders.cmake), looked up by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vkf {

struct SpirvBlob {
  const char* name;
  const uint32_t* words;
  size_t count;
  const char* op;       ///< the op that registered it (src/ops/ops.cmake)
  const char* source;   ///< shaders/<source>
  const char* defines;  ///< the -D options it was compiled with
};

/// Every embedded shader variant.
const std::vector<SpirvBlob>& spirv_blobs();

}  // namespace vkf
