// Device choice (discrete > integrated > virtual > CPU, or what the user names)
// and the capabilities the kernels are chosen from.
#include <algorithm>
#include <cctype>
#include <cstring>

#include "vk/check.hpp"
#include "vk/context_impl.hpp"

namespace vkf {
namespace {

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has_compute_queue(VkPhysicalDevice d) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(d, &n, nullptr);
  std::vector<VkQueueFamilyProperties> q(n);
  vkGetPhysicalDeviceQueueFamilyProperties(d, &n, q.data());
  for (auto& f : q)
    if (f.queueFlags & VK_QUEUE_COMPUTE_BIT) return true;
  return false;
}

}  // namespace

bool has_device_extension(VkPhysicalDevice phys, const char* name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> e(n);
  // VK_INCOMPLETE only if the list grew in between: what was read is still valid.
  if (vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, e.data()) < 0) return false;
  for (uint32_t i = 0; i < n; ++i)
    if (std::strcmp(e[i].extensionName, name) == 0) return true;
  return false;
}

std::string device_type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::vector<VkPhysicalDevice> devices_in_preference_order(VkInstance instance) {
  uint32_t n = 0;
  VKF_CHECK(vkEnumeratePhysicalDevices(instance, &n, nullptr));
  std::vector<VkPhysicalDevice> all(n);
  VKF_CHECK(vkEnumeratePhysicalDevices(instance, &n, all.data()));
  std::vector<VkPhysicalDevice> usable;
  for (auto d : all) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(d, &p);
    if (p.apiVersion >= VK_API_VERSION_1_2 && has_compute_queue(d)) usable.push_back(d);
  }
  std::stable_sort(usable.begin(), usable.end(), [](VkPhysicalDevice a, VkPhysicalDevice b) {
    VkPhysicalDeviceProperties pa, pb;
    vkGetPhysicalDeviceProperties(a, &pa);
    vkGetPhysicalDeviceProperties(b, &pb);
    return type_rank(pa.deviceType) < type_rank(pb.deviceType);
  });
  return usable;
}

VkPhysicalDevice select_device(VkInstance instance, const std::string& selector, uint32_t* index) {
  auto devs = devices_in_preference_order(instance);
  if (devs.empty())
    throw Error("no Vulkan 1.2 device with a compute queue was found "
                "(on Debian, mesa-vulkan-drivers provides the CPU device lavapipe)");
  std::string names;
  for (size_t i = 0; i < devs.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devs[i], &p);
    names += (i ? ", " : "") + std::to_string(i) + ": " + p.deviceName;
  }
  if (selector.empty()) {
    *index = 0;
    return devs[0];
  }
  bool numeric = std::all_of(selector.begin(), selector.end(),
                             [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (numeric) {
    unsigned long i = selector.size() <= 9 ? std::stoul(selector) : devs.size();
    if (i >= devs.size())
      throw Error("device index " + selector + " is out of range; devices are " + names);
    *index = uint32_t(i);
    return devs[i];
  }
  for (size_t i = 0; i < devs.size(); ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devs[i], &p);
    if (lower(p.deviceName).find(lower(selector)) != std::string::npos) {
      *index = uint32_t(i);
      return devs[i];
    }
  }
  throw Error("no device name contains \"" + selector + "\"; devices are " + names);
}

namespace {

const char* component_name(VkComponentTypeNV t) {
  switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_NV: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_NV: return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_NV: return "f64";
    case VK_COMPONENT_TYPE_SINT8_NV: return "s8";
    case VK_COMPONENT_TYPE_UINT8_NV: return "u8";
    case VK_COMPONENT_TYPE_SINT32_NV: return "s32";
    case VK_COMPONENT_TYPE_UINT32_NV: return "u32";
    default: return "other";
  }
}

/// The subgroup-scope shapes VK_NV_cooperative_matrix lists, into c.coopmat_shapes;
/// whether 16×16×16 f16·f16 + f32 is among them.
bool query_coopmat_shapes(VkInstance instance, VkPhysicalDevice phys, Capabilities& c) {
  auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (!get) return false;
  uint32_t n = 0;
  if (get(phys, &n, nullptr) != VK_SUCCESS || n == 0) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (get(phys, &n, props.data()) != VK_SUCCESS) return false;
  props.resize(n);
  bool found = false;
  for (const auto& q : props) {
    if (q.scope != VK_SCOPE_SUBGROUP_NV) continue;
    c.coopmat_shapes.push_back(std::to_string(q.MSize) + "x" + std::to_string(q.NSize) + "x" + std::to_string(q.KSize) +
                               " " + component_name(q.AType) + "*" + component_name(q.BType) + "+" +
                               component_name(q.CType));
    found = found || (q.MSize == 16 && q.NSize == 16 && q.KSize == 16 && q.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                      q.BType == VK_COMPONENT_TYPE_FLOAT16_NV && q.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                      q.DType == VK_COMPONENT_TYPE_FLOAT32_NV);
  }
  return found;
}

}  // namespace

Capabilities query_capabilities(VkPhysicalDevice phys, uint32_t instance_api, VkInstance instance) {
  Capabilities c;
  VkPhysicalDeviceProperties basic;
  vkGetPhysicalDeviceProperties(phys, &basic);
  // Subgroup size control: core in 1.3 (same structures), else the extension;
  // its structures may only be chained when one of the two applies.
  const bool size_control = core_1_3(instance_api, basic.apiVersion) ||
                            has_device_extension(phys, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  VkPhysicalDeviceSubgroupSizeControlProperties ssc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  sub.pNext = &drv;
  if (size_control) drv.pNext = &ssc;
  const bool coopmat_ext = has_device_extension(phys, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  VkPhysicalDeviceCooperativeMatrixPropertiesNV pcm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
  if (coopmat_ext) pcm.pNext = sub.pNext, sub.pNext = &pcm;
  VkPhysicalDeviceFloatControlsProperties fcp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  fcp.pNext = sub.pNext;
  sub.pNext = &fcp;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &sub;
  vkGetPhysicalDeviceProperties2(phys, &p2);
  const auto& p = p2.properties;
  const auto& l = p.limits;

  c.device_name = p.deviceName;
  c.device_type = device_type_name(p.deviceType);
  c.driver_name = drv.driverName;
  c.driver_info = drv.driverInfo;
  c.driver_id = uint32_t(drv.driverID);
  c.vendor_id = p.vendorID;
  c.device_id = p.deviceID;
  c.driver_version = p.driverVersion;
  c.api_version = p.apiVersion;
  std::memcpy(c.pipeline_cache_uuid, p.pipelineCacheUUID, VK_UUID_SIZE);

  c.subgroup_size = std::max(1u, sub.subgroupSize);
  bool compute = sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT;
  c.subgroup_arithmetic = compute && (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  c.subgroup_shuffle = compute && (sub.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
  c.min_subgroup_size = size_control ? std::max(1u, ssc.minSubgroupSize) : c.subgroup_size;
  c.max_subgroup_size = size_control ? std::max(c.min_subgroup_size, ssc.maxSubgroupSize) : c.subgroup_size;
  c.max_workgroup_subgroups = size_control ? ssc.maxComputeWorkgroupSubgroups : 0;
  c.max_shared_memory = l.maxComputeSharedMemorySize;
  c.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    c.max_workgroup_size[i] = l.maxComputeWorkGroupSize[i];
    c.max_workgroup_count[i] = l.maxComputeWorkGroupCount[i];
  }
  c.max_storage_buffer_range = l.maxStorageBufferRange;
  c.min_storage_buffer_offset_alignment = l.minStorageBufferOffsetAlignment;
  c.max_push_constants_size = l.maxPushConstantsSize;
  c.max_texel_buffer_elements = l.maxTexelBufferElements;
  c.min_texel_buffer_offset_alignment = l.minTexelBufferOffsetAlignment;
  const auto texel = [&](VkFormat f) {
    VkFormatProperties fp{};
    vkGetPhysicalDeviceFormatProperties(phys, f, &fp);
    return (fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT) != 0;
  };
  c.texel_f32 = texel(VK_FORMAT_R32G32B32A32_SFLOAT) && texel(VK_FORMAT_R32_SFLOAT);
  c.texel_f16 = texel(VK_FORMAT_R16G16B16A16_SFLOAT) && texel(VK_FORMAT_R16_SFLOAT);
  c.texel_u32 = texel(VK_FORMAT_R32_UINT);
  c.timestamp_period_ns = l.timestampPeriod;

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f11.pNext = &f12;
  VkPhysicalDeviceSubgroupSizeControlFeatures fsc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  if (size_control) f12.pNext = &fsc;
  // Cooperative matrices: their structures may only be chained where the extension is.
  VkPhysicalDeviceCooperativeMatrixFeaturesNV fcm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  if (coopmat_ext) fcm.pNext = f12.pNext, f12.pNext = &fcm;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f11;
  vkGetPhysicalDeviceFeatures2(phys, &f2);
  c.storage_16bit = f11.storageBuffer16BitAccess;
  c.subgroup_size_control = size_control && fsc.subgroupSizeControl &&
                            (ssc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) && c.max_workgroup_subgroups > 0;
  c.compute_full_subgroups = c.subgroup_size_control && fsc.computeFullSubgroups;
  c.shader_float16 = f12.shaderFloat16;
  c.f16_packed = true;  // unpackHalf2x16 is core SPIR-V (GLSL.std.450)
  // gemm's coopmat shader: fp16 values in registers (Float16), 16-bit loads, the
  // Vulkan memory model that glslang's cooperative-matrix SPIR-V declares, and
  // fp16 denormals kept (its DenormPreserve 16 execution mode).
  if (coopmat_ext && fcm.cooperativeMatrix && instance != VK_NULL_HANDLE &&
      (pcm.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT)) {
    const bool shapes = query_coopmat_shapes(instance, phys, c);
    c.coopmat = shapes && f12.shaderFloat16 && f12.vulkanMemoryModel && c.storage_16bit &&
                fcp.shaderDenormPreserveFloat16;
  }

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> q(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, q.data());
  for (auto& f : q)
    if (f.queueFlags & VK_QUEUE_COMPUTE_BIT) {
      c.timestamps = f.timestampValidBits > 0 && l.timestampPeriod > 0;
      break;
    }

  VkPhysicalDeviceMemoryProperties mp;
  vkGetPhysicalDeviceMemoryProperties(phys, &mp);
  for (uint32_t i = 0; i < mp.memoryHeapCount; ++i)
    if (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      c.device_local_bytes = std::max<uint64_t>(c.device_local_bytes, mp.memoryHeaps[i].size);
  return c;
}

}  // namespace vkf
