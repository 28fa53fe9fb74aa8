#include "vk/check.hpp"

namespace vkf {

const char* vk_result_name(VkResult r) {
  switch (r) {
#define C(x) case x: return #x;
    C(VK_SUCCESS) C(VK_NOT_READY) C(VK_TIMEOUT) C(VK_INCOMPLETE)
    C(VK_ERROR_OUT_OF_HOST_MEMORY) C(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    C(VK_ERROR_INITIALIZATION_FAILED) C(VK_ERROR_DEVICE_LOST) C(VK_ERROR_MEMORY_MAP_FAILED)
    C(VK_ERROR_LAYER_NOT_PRESENT) C(VK_ERROR_EXTENSION_NOT_PRESENT)
    C(VK_ERROR_FEATURE_NOT_PRESENT) C(VK_ERROR_INCOMPATIBLE_DRIVER)
    C(VK_ERROR_TOO_MANY_OBJECTS) C(VK_ERROR_FORMAT_NOT_SUPPORTED)
    C(VK_ERROR_FRAGMENTED_POOL) C(VK_ERROR_OUT_OF_POOL_MEMORY) C(VK_ERROR_UNKNOWN)
#undef C
    default: return "VkResult(unknown)";
  }
}

void vk_fail(VkResult r, const char* call) {
  std::string msg = std::string("Vulkan call failed: ") + call + " returned " + vk_result_name(r) +
                    " (" + std::to_string(int(r)) + ")";
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    msg += ": the device ran out of memory";
  throw Error(msg);
}

}  // namespace vkf
