// Every VkResult is checked; a failure becomes a vkf::Error naming the call.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "vkformer/tensor.hpp"

namespace vkf {

const char* vk_result_name(VkResult r);
[[noreturn]] void vk_fail(VkResult r, const char* call);

}  // namespace vkf

#define VKF_CHECK(call)                                 \
  do {                                                  \
    VkResult vkf_r_ = (call);                           \
    if (vkf_r_ != VK_SUCCESS) ::vkf::vk_fail(vkf_r_, #call); \
  } while (0)
