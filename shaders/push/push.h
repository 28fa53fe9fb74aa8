// One push-constant block for a kernel and its op, in shaders/push/<kernel>.h:
//
//   #include "push/push.h"
//   VKF_PUSH(L2NormalizePush)
//     uint rows;
//     uint d;
//     float eps;
//   VKF_PUSH_END(L2NormalizePush)
//
// GLSL:  layout(push_constant) uniform L2NormalizePush { uint rows; uint d; float eps; } p;
// C++:   namespace vkf { struct L2NormalizePush { uint32_t rows; uint32_t d; float eps; }; }
//
// Members are 4-byte scalars only (uint, int, float; no bool, vectors or
// arrays): std430 then packs them at offsets 0, 4, 8... as C++ does. The
// pipeline reads the block's size from the SPIR-V and refuses other member
// types (src/vk/spirv_reflect.cpp); dispatch() compares it with sizeof.
#ifndef VKF_PUSH_H
#define VKF_PUSH_H

#ifdef __cplusplus
#include <cstdint>
#include <type_traits>
#define VKF_PUSH(name) \
  namespace vkf {      \
  struct name {        \
    using uint = std::uint32_t;
#define VKF_PUSH_END(name)                                                            \
  };                                                                                  \
  static_assert(alignof(name) == 4 && sizeof(name) % 4 == 0 &&                        \
                    std::is_trivially_copyable_v<name>, #name ": 4-byte scalars only"); \
  }
#else
#define VKF_PUSH(name) layout(push_constant) uniform name {
#define VKF_PUSH_END(name) } p;
#endif

#endif
