// Instance creation: Vulkan 1.3 when the loader has it (else 1.2), and with validation on, the Khronos layer with
// synchronization validation plus a messenger that logs and counts messages.
#include <cstdio>
#include <cstring>
#include <vector>

#include "vk/check.hpp"
#include "vk/context_impl.hpp"

namespace vkf {
namespace {

const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data,
                                          void* user) {
  auto* log = static_cast<ValidationLog*>(user);
  const char* level = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error" : "warning";
  const char* text = data && data->pMessage ? data->pMessage : "(no message)";
  std::fprintf(stderr, "vkformer: validation %s: %s\n", level, text);
  if (log) {
    log->count++;
    std::lock_guard<std::mutex> lock(log->mu);
    log->last = text;
  }
  return VK_FALSE;
}

bool has_layer(const char* name) {
  // A loader that cannot list its layers has none we can use: the caller's
  // "not installed" error is the right one.
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) < 0) return false;  // VK_INCOMPLETE: a prefix
  layers.resize(n);
  for (auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

}  // namespace

InstanceHandles create_instance(bool validation, ValidationLog* log) {
  InstanceHandles h;
  if (validation && !has_layer(kValidationLayer))
    throw Error(std::string("validation was requested (VKFORMER_VALIDATION=1) but ") +
                kValidationLayer + " is not installed (Debian: vulkan-validationlayers)");

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "vkformer";
  app.pEngineName = "vkformer";
  // 1.3 where the loader allows it, so that a 1.3 device's core features
  // (subgroup size control) are usable; devices are still required to have 1.2
  // only, and each is used at min(this, its own version).
  uint32_t loader = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion(&loader) != VK_SUCCESS) loader = VK_API_VERSION_1_0;
  app.apiVersion = loader >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
  h.api_version = app.apiVersion;

  std::vector<const char*> layers, exts;
  if (validation) {
    layers.push_back(kValidationLayer);
    exts.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }
  VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;

  VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mci.pfnUserCallback = on_message;
  mci.pUserData = log;
  // Chained into instance creation too, so messages from vkCreateInstance count.
  features.pNext = &mci;

  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = uint32_t(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = uint32_t(exts.size());
  ci.ppEnabledExtensionNames = exts.data();
  if (validation) ci.pNext = &features;
  VkResult r = vkCreateInstance(&ci, nullptr, &h.instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    throw Error("no Vulkan driver found (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER); "
                "on Debian install mesa-vulkan-drivers for the CPU device lavapipe");
  VKF_CHECK(r);
  h.validation = validation;

  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(h.instance, "vkCreateDebugUtilsMessengerEXT"));
    if (!create) {
      vkDestroyInstance(h.instance, nullptr);
      throw Error("validation: vkCreateDebugUtilsMessengerEXT is not available");
    }
    VkDebugUtilsMessengerCreateInfoEXT m = mci;
    m.pNext = nullptr;
    VKF_CHECK(create(h.instance, &m, nullptr, &h.messenger));
  }
  return h;
}

void destroy_instance(InstanceHandles& h) {
  if (h.messenger) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(h.instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(h.instance, h.messenger, nullptr);
    h.messenger = VK_NULL_HANDLE;
  }
  if (h.instance) vkDestroyInstance(h.instance, nullptr);
  h.instance = VK_NULL_HANDLE;
}

}  // namespace vkf
