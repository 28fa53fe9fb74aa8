// Compute pipelines from embedded SPIR-V + specialization constants, created
// lazily, kept by key, and backed by a VkPipelineCache saved on disk.
#pragma once

#include <vulkan/vulkan.h>

#include <map>
#include <mutex>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "vk/shader_registry.hpp"
#include "vkformer/context.hpp"

namespace vkf {

struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;   ///< resources 0..n-1, read from the SPIR-V
  std::vector<bool> texel; ///< per binding: a uniform texel buffer, not a storage buffer
  uint32_t push_size = 0;  ///< bytes of push constants, read from the SPIR-V
  std::string push_block;  ///< the push block's name: its struct in shaders/push/
  std::string name;
  uint32_t workgroup_size = 0;  ///< specialization constant 0 (local_size_x_id)
  std::optional<uint64_t> shared_bytes;  ///< declared Workgroup memory, when it could be read
  uint32_t subgroup_size = 0;  ///< the subgroup size it requires; 0: the driver's choice
  bool full_subgroups = false; ///< created with REQUIRE_FULL_SUBGROUPS
};

/// Why a compute pipeline of `workgroup` invocations cannot require subgroups
/// of `size` on a device with `caps`, or "" when it can: subgroup size control,
/// a power of two within [min_subgroup_size, max_subgroup_size], at most
/// max_workgroup_subgroups subgroups. Ops check tuned sizes with it, and
/// Pipelines::get checks every pipeline.
std::string subgroup_size_problem(const Capabilities& caps, uint32_t size, uint32_t workgroup);

class Pipelines {
 public:
  Pipelines(VkDevice device, const Capabilities& caps, const std::string& cache_dir,
            const VkAllocationCallbacks* alloc);
  ~Pipelines();

  /// The pipeline of shader `shader` with specialization constants 0..n-1 set
  /// to `spec`. Its layout (storage buffers, push constants) is the one the
  /// shader declares (spirv_interface()). An f16 shader runs as its *_packed
  /// twin on a device without 16-bit storage. `subgroup_size` non-zero: the
  /// pipeline requires that subgroup size (VK_EXT_subgroup_size_control), and
  /// full subgroups when the device can and it divides the workgroup size.
  const Pipeline& get(const std::string& shader, const std::vector<uint32_t>& spec, uint32_t subgroup_size = 0);
  void save();
  uint64_t created() const { return created_; }
  /// The on-disk cache file (keyed by pipeline-cache UUID and driver version);
  /// empty when caching is off. Other per-device caches live next to it.
  const std::string& cache_file() const { return cache_file_; }
  /// Why the on-disk cache is not used (something other than a regular file at
  /// its path, or an unreadable file), or empty.
  const std::string& cache_warning() const { return cache_warning_; }

 private:
  VkShaderModule module(const std::string& shader);
  /// The embedded SPIR-V of a shader; throws when there is none.
  static const SpirvBlob& blob(const std::string& shader);
  /// Throws unless the variant stays within the (profile-clamped) capabilities.
  void check_limits(const std::string& shader, const std::vector<uint32_t>& spec, uint32_t subgroup_size,
                    Pipeline& p);
  /// The cache file's data when it is this device's; on a file that cannot be
  /// read, sets cache_warning_ and turns the cache off.
  std::vector<char> read_cache(const std::string& file, const Capabilities& caps);
  /// Replaces `file` (only a regular file or nothing) atomically; failures are ignored.
  void write_cache(const std::string& file, const char* data, size_t n);
  static constexpr uint64_t kMaxCacheBytes = 1ull << 30;
  VkDevice device_;
  const VkAllocationCallbacks* alloc_;
  std::mutex mu_;  ///< get() may be called from several threads
  const Capabilities& caps_;
  std::string cache_file_;
  std::string cache_warning_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::map<std::string, VkShaderModule> modules_;
  /// By (binding kinds, push-constant bytes).
  std::map<std::pair<std::vector<bool>, uint32_t>, std::pair<VkDescriptorSetLayout, VkPipelineLayout>> layouts_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  uint64_t created_ = 0;
};

}  // namespace vkf
