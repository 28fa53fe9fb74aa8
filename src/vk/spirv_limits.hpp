// What a compute shader asks of the device once its specialization constants
// are set, read from its SPIR-V: checked against the profile's clamped limits
// at pipeline creation (the validation layer only knows the device's own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace vkf {

/// Bytes of Workgroup (shared) memory the shader declares with constants
/// 0..n-1 set to `spec` (tightly packed, an upper bound of what a driver
/// allocates). nullopt when a size depends on an expression not understood.
std::optional<uint64_t> spirv_shared_bytes(const uint32_t* words, size_t count,
                                           const std::vector<uint32_t>& spec);

}  // namespace vkf
