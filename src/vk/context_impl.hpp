// The inside of a Context: every Vulkan handle vkformer owns for one device.
#pragma once

#include <vulkan/vulkan.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "vk/check.hpp"
#include "vk/internals.hpp"
#include "vk/memory.hpp"
#include "vk/pipelines.hpp"
#include "vkformer/context.hpp"
#include "vkformer/tuning.hpp"

namespace vkf {

/// Instance creation (instance.cpp).
struct InstanceHandles {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  bool validation = false;
  uint32_t api_version = VK_API_VERSION_1_2;  ///< VkApplicationInfo::apiVersion
};
/// Counts and logs what the validation layer says.
struct ValidationLog {
  std::atomic<uint64_t> count{0};
  std::mutex mu;
  std::string last;
};
InstanceHandles create_instance(bool validation, ValidationLog* log);
void destroy_instance(InstanceHandles& h);

/// Device choice and capabilities (device.cpp).
std::vector<VkPhysicalDevice> devices_in_preference_order(VkInstance instance);
VkPhysicalDevice select_device(VkInstance instance, const std::string& selector, uint32_t* index);
/// `instance_api`: the instance's apiVersion; Vulkan 1.3 structures are core
/// when both it and the device's version reach 1.3, else they need the extension.
/// `instance`: to look up VK_NV_cooperative_matrix's query (none: coopmat stays off).
Capabilities query_capabilities(VkPhysicalDevice phys, uint32_t instance_api = VK_API_VERSION_1_2,
                                VkInstance instance = VK_NULL_HANDLE);
/// Whether the device offers the extension `name`.
bool has_device_extension(VkPhysicalDevice phys, const char* name);
/// Whether a device at `device_api` on an instance at `instance_api` has Vulkan 1.3 as core.
inline bool core_1_3(uint32_t instance_api, uint32_t device_api) {
  return std::min(instance_api, device_api) >= VK_API_VERSION_1_3;
}
std::string device_type_name(VkPhysicalDeviceType t);

/// Capability profiles (profile.cpp): the effective profile of the options
/// (device_profile or VKFORMER_DEVICE_PROFILE, plus the shorthand flags),
/// spelled canonically; its clamps; the dispatches-per-submission limit.
std::string resolve_profile(const ContextOptions& o);
void apply_profile(const std::string& profile, Capabilities& c);
uint32_t resolve_max_dispatches(const ContextOptions& o);

struct Context::Impl {
  ContextOptions options;
  ValidationLog vlog;
  InstanceHandles inst;
  VkPhysicalDevice phys = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkQueue queue = VK_NULL_HANDLE;
  Capabilities caps;                             ///< clamped to the profile
  uint32_t max_dispatches_per_submit = 0;        ///< 0: one submission per recording
  std::shared_ptr<MemoryPool> memory;
  std::unique_ptr<Pipelines> pipelines;
  VkCommandPool command_pool = VK_NULL_HANDLE;  ///< for run_now(), guarded by pool_mu
  std::mutex pool_mu, queue_mu;
  std::atomic<uint64_t> submissions{0};
  bool adopted = false;                          ///< the device and queue are the host's
  const VkAllocationCallbacks* alloc = nullptr;  ///< the host's, for everything vkformer creates
  bool memory_budget = false;                    ///< VK_EXT_memory_budget may be queried
  std::atomic<bool> lost{false};                 ///< a call returned VK_ERROR_DEVICE_LOST
  TuningTable tuning;                            ///< this device's tuned configurations (tuning.cpp)
  /// The tuner's candidate per op, used instead of the database while set.
  std::map<std::string, TunedConfig> tuning_forced;
  /// While set, every (op, shape class) an op looks up is added: how the tuner
  /// learns the shapes a model runs.
  std::set<std::pair<std::string, std::string>>* tuning_capture = nullptr;
  bool tuning_suspended = false;  ///< TuningSuspended: every op runs the engine's own rules
  /// Database entries checked against their op's reference at their first use
  /// in this context (ops/tuning_util.cpp), and whether they passed.
  std::map<std::pair<std::string, std::string>, bool> tuning_checked;
  std::mutex tuning_check_mu;  ///< one check at a time; guards tuning_checked

  /// The configuration to use for `op` at `shape_class`, or nullptr for the
  /// engine's own rules: the tuner's candidate, else the database's entry.
  const TunedConfig* tuned(const std::string& op, const std::string& shape_class);
  /// Reads the database ContextOptions::tuning names (after caps are final).
  void load_tuning_table();

  /// Throws "`what`: the device was lost earlier ..." once the device is lost.
  void alive(const std::string& what) const;
  /// Runs f() after alive(what); a VK_ERROR_DEVICE_LOST from it marks the device lost.
  template <class F>
  auto guarded(const char* what, F&& f) -> decltype(f()) {
    alive(what);
    try {
      return f();
    } catch (const VulkanError& e) {
      if (e.result() == VK_ERROR_DEVICE_LOST) lost = true;
      throw;
    }
  }

  /// Memory, pipelines, command pool: everything after the device exists.
  void finish_setup();
  /// Destroys what vkformer created (and the device and instance, if its own).
  void destroy();

  /// Records, submits and waits for a one-off command buffer (staging copies).
  template <class F>
  void run_now(F&& record);
  void submit_and_wait(VkCommandBuffer cb) { submit_and_wait(std::vector<VkCommandBuffer>{cb}); }
  /// One vkQueueSubmit per command buffer, in order; waits for the last.
  void submit_and_wait(const std::vector<VkCommandBuffer>& cbs);
  /// vkQueueSubmit under the queue lock.
  void queue_submit(const VkSubmitInfo& si, VkFence fence);
  /// A tensor's bytes on the host (mapped directly, or through staging).
  std::vector<uint8_t> download(const Allocation& a);
  ~Impl();
};

}  // namespace vkf
