// What a compute shader declares, read from its SPIR-V: the interface its
// pipeline layout must match (storage buffers, push constants) and what it
// asks of the device once its specialization constants are set (shared
// memory, checked against the profile's clamped limits; the validation layer
// only knows the device's own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkf {

/// The resources a shader's pipeline layout holds.
struct ShaderInterface {
  uint32_t bindings = 0;   ///< resources of set 0, bindings 0..n-1 (aliasing blocks count once)
  /// Per binding: true for a uniform texel buffer (samplerBuffer), false for
  /// a storage buffer.
  std::vector<bool> texel;
  uint32_t push_size = 0;  ///< bytes of the push-constant block, 0 without one
  std::string push_block;  ///< the block's type name (its C++ struct in shaders/push/), "" without one
};

/// Reads the interface. Throws vkf::Error("internal: <name>: ...") when the
/// shader leaves the conventions the pipelines rely on: storage buffers or
/// samplerBuffers in set 0 at bindings 0..n-1 with no gap, and a push block of 4-byte scalars
/// at offsets 0, 4, 8... (shaders/push/push.h), laid out as its C++ struct.
ShaderInterface spirv_interface(const uint32_t* words, size_t count, const std::string& name);

/// Bytes of Workgroup (shared) memory the shader declares with constants
/// 0..n-1 set to `spec` (tightly packed, an upper bound of what a driver
/// allocates). nullopt when a size depends on an expression not understood.
std::optional<uint64_t> spirv_shared_bytes(const uint32_t* words, size_t count,
                                           const std::vector<uint32_t>& spec);

}  // namespace vkf
