// vkformer: Transformer inference in Vulkan compute shaders.
// The Context owns (or, later, adopts) the Vulkan instance, device and queue,
// and is the only place that knows about them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

#include "vkformer/tensor.hpp"

namespace vkf {

/// What the device offers, as queried at context creation. Kernel variants and
/// tile sizes are chosen from this, never from assumptions about a vendor.
struct Capabilities {
  std::string device_name;
  std::string device_type;   ///< "discrete", "integrated", "virtual", "cpu" or "other"
  std::string driver_name;   ///< e.g. "llvmpipe"; empty when the driver does not say
  /// The driver's own version text (VkPhysicalDeviceDriverProperties::driverInfo), e.g.
  /// "580.159.04" or "Mesa 22.3.6": vendors pack driver_version differently.
  std::string driver_info;
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint32_t driver_id = 0;    ///< VkDriverId (0 when the driver does not say)
  uint32_t api_version = 0;
  uint8_t pipeline_cache_uuid[16] = {};

  uint32_t subgroup_size = 1;              ///< default subgroup size in compute shaders
  bool subgroup_arithmetic = false;        ///< subgroupAdd/Max... usable in compute
  bool subgroup_shuffle = false;
  /// The subgroup sizes a compute pipeline may require (VK_EXT_subgroup_size_control,
  /// core in Vulkan 1.3); both equal subgroup_size when the device cannot say.
  uint32_t min_subgroup_size = 1;
  uint32_t max_subgroup_size = 1;
  /// maxComputeWorkgroupSubgroups: a workgroup holds at most this many subgroups
  /// of a required size (0 when the device cannot say).
  uint32_t max_workgroup_subgroups = 0;
  /// Compute pipelines may require a subgroup size (the tuning knob SGS,
  /// docs/tuning.md): subgroupSizeControl is enabled on the device and compute
  /// is in requiredSubgroupSizeStages. Off on a host application's device
  /// (vkformer cannot know what the host enabled) and under the min and
  /// no-subgroup profiles.
  bool subgroup_size_control = false;
  /// computeFullSubgroups is enabled: a pipeline requiring a subgroup size that
  /// divides its workgroup size also asks for full subgroups.
  bool compute_full_subgroups = false;
  uint32_t max_shared_memory = 16384;      ///< maxComputeSharedMemorySize, bytes
  uint32_t max_workgroup_invocations = 128;
  uint32_t max_workgroup_size[3] = {128, 128, 64};
  uint32_t max_workgroup_count[3] = {65535, 65535, 65535};
  uint64_t max_storage_buffer_range = 1u << 27;
  uint64_t min_storage_buffer_offset_alignment = 256;
  uint32_t max_push_constants_size = 128;
  /// Uniform texel buffers (samplerBuffer): texels a view may span, and the
  /// alignment of its offset. Reading through them is a vectorized gather on
  /// lavapipe, where a storage-buffer load is a loop over the lanes.
  uint64_t max_texel_buffer_elements = 65536;
  uint64_t min_texel_buffer_offset_alignment = 256;
  bool texel_f32 = false;  ///< R32G32B32A32_SFLOAT and R32_SFLOAT views can be read in shaders
  bool texel_f16 = false;  ///< R16G16B16A16_SFLOAT and R16_SFLOAT views can be read in shaders
  /// R32_UINT views can be read in shaders (usamplerBuffer): block-format
  /// weights read as words (gemm's texel variants, shaders/lib/quant.glsl)
  bool texel_u32 = false;
  bool storage_16bit = false;              ///< fp16 tensors can be stored and loaded as 16-bit values
  /// fp16 tensors can be read as 32-bit words holding two halves each
  /// (unpackHalf2x16): what a device without 16-bit storage does. Any Vulkan
  /// device can; off only under the no-fp16 profile.
  bool f16_packed = false;
  /// fp16 arithmetic (shaderFloat16), enabled on vkformer's own device: the
  /// tensor-core kernels and their emulation (the coopmat_emulated variants)
  /// use it, with fp32 accumulation. Off on a host application's device
  /// (vkformer cannot know what it enabled).
  bool shader_float16 = false;
  /// Tensor cores through VK_NV_cooperative_matrix: the driver lists a subgroup-scope
  /// 16×16×16 fp16·fp16 + fp32 shape; shaderFloat16, vulkanMemoryModel (both enabled
  /// with it) and shaderDenormPreserveFloat16 are there. gemm's coopmat variant.
  /// Off on a host application's device (vkformer cannot know what it enabled)
  /// and under the min, no-fp16 and no-subgroup profiles.
  bool coopmat = false;
  /// The shapes the driver lists for VK_NV_cooperative_matrix, "16x16x16 f16*f16+f32"
  /// each (subgroup scope only), for `vkformer devices`.
  std::vector<std::string> coopmat_shapes;
  bool timestamps = false;                 ///< timestamp queries work on the compute queue
  double timestamp_period_ns = 1.0;
  uint64_t device_local_bytes = 0;         ///< size of the largest device-local heap
  /// The capability profile these values were clamped to ("full": as the
  /// device reports them). See ContextOptions::device_profile.
  std::string profile = "full";
  /// fp16 weights, tables and K/V can be used, natively or packed: memory is halved either way.
  bool f16_tensors() const { return storage_16bit || f16_packed; }
  /// How fp16 tensors are read, for messages: "yes" (16-bit storage), "packed" or "no".
  const char* f16_storage() const { return storage_16bit ? "yes" : f16_packed ? "packed" : "no"; }
};

/// How a standalone context is created.
struct ContextOptions {
  /// Device index (as listed by list_devices()) or a case-insensitive substring
  /// of its name. Empty: the VKFORMER_DEVICE environment variable, else the best
  /// device (discrete, then integrated, then virtual, then CPU).
  std::string device;
  /// Enable VK_LAYER_KHRONOS_validation with synchronization validation.
  /// -1: follow VKFORMER_VALIDATION=1; 0: off; 1: on (an error if the layer is missing).
  int validation = -1;
  /// Directory of the on-disk pipeline cache. Empty: VKFORMER_CACHE_DIR, else
  /// $XDG_CACHE_HOME/vkformer, else ~/.cache/vkformer. "off" disables it.
  std::string cache_dir;
  /// Never map device memory directly, always go through staging buffers
  /// (what a discrete GPU does; lets a UMA device test that path).
  bool force_staging = false;
  /// Capability profile: clamps what the engine may use to below what the
  /// device offers (docs/device-profiles.md). One of device_profiles() --
  /// "full", "no-fp16", "no-subgroup", "min" -- or several joined by commas
  /// ("min,no-fp16"). Empty: VKFORMER_DEVICE_PROFILE, else "full".
  /// @throws vkf::Error (from the constructor) naming the valid profiles.
  std::string device_profile;
  /// Shorthand for adding "no-subgroup" to the profile.
  bool disable_subgroups = false;
  /// Shorthand for adding "no-fp16" to the profile.
  bool disable_fp16 = false;
  /// Most dispatches per queue submission: Context::submit splits a longer
  /// recording into several submissions (OS watchdogs such as Windows TDR kill
  /// long ones). 0: VKFORMER_MAX_DISPATCHES_PER_SUBMIT, else never split.
  uint32_t max_dispatches_per_submit = 0;
  /// Print the chosen device to stderr.
  bool verbose = true;
  /// Tuned kernel configurations (`vkformer tune`, docs/tuning.md): "off", "auto"
  /// (the database in the cache directory, when there is one) or the path of a
  /// database file. Empty: VKFORMER_TUNING, else "auto". Without an entry for a
  /// shape, or with tuning off, the engine's own rules choose.
  std::string tuning;
  /// Most bytes of device memory this context may allocate for tensors; 0: the
  /// VKFORMER_MEMORY_LIMIT environment variable (bytes, or with a K/M/G suffix,
  /// powers of 1024), else no limit beyond the device's. For sharing a GPU with
  /// a host application, and for testing out-of-memory handling with small
  /// models. Going over it is an out-of-memory error like the device's own.
  uint64_t memory_limit_bytes = 0;
};

/// One entry of list_devices().
struct DeviceDescription {
  uint32_t index;
  std::string name;
  std::string type;
  std::string driver;
  Capabilities caps;  ///< as the device reports them, before any option's clamps
};

/// The capability profile names ContextOptions::device_profile accepts.
std::vector<std::string> device_profiles();

/// Lists the Vulkan devices in the order vkformer prefers them.
/// @throws vkf::Error when no Vulkan instance can be created.
std::vector<DeviceDescription> list_devices();

class Recorder;

/// Device memory as vkformer holds it now: for leak checks (`vkformer soak`)
/// and for host applications that share the device.
struct MemoryReport {
  uint64_t bytes_in_use = 0;  ///< reserved by live tensors
  uint64_t block_bytes = 0;   ///< device memory held in blocks (staging included)
  uint32_t blocks = 0;        ///< live blocks, staging included
  uint64_t allocations = 0;   ///< live tensors
  /// VK_EXT_memory_budget's figures for the device-local heap, when the device has it.
  bool budget = false;
  uint64_t heap_usage = 0, heap_budget = 0;
};

/// The host application's own Vulkan objects, for a context that runs on them
/// ("bring your own Vulkan"). vkformer creates no instance and no device then,
/// and destroys none of these. Requirements (checked, with a clear error):
/// Vulkan 1.2 on the device, a queue family with VK_QUEUE_COMPUTE_BIT, and the
/// queue from that family. fp16 tensors use 16-bit storage when the host enabled
/// storageBuffer16BitAccess (say so in `storage_buffer_16bit_access`); otherwise
/// they are read packed, two halves per 32-bit word.
struct HostVulkan {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical_device = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  uint32_t queue_family_index = 0;
  VkQueue queue = VK_NULL_HANDLE;
  /// Optional: the loader entry the host used. vkformer calls the Vulkan loader
  /// it links; when this is given it must resolve to the same loader (checked).
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  /// Optional: used for every Vulkan object vkformer creates on the device.
  const VkAllocationCallbacks* allocator = nullptr;
  /// What the host enabled on the device that vkformer may use.
  bool storage_buffer_16bit_access = false;
  bool timeline_semaphore = false;  ///< needed for SubmitSync's semaphore values
  std::vector<std::string> device_extensions;
};

/// What a non-blocking submission waits on and signals (way (a) of running
/// inside a host application). Values are for timeline semaphores (0 for binary).
struct SubmitSync {
  std::vector<VkSemaphore> wait;
  std::vector<uint64_t> wait_values;
  std::vector<VkPipelineStageFlags> wait_stages;  ///< default: VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
  std::vector<VkSemaphore> signal;
  std::vector<uint64_t> signal_values;
  VkFence fence = VK_NULL_HANDLE;                 ///< signalled when the work is done
};

/// A Vulkan device ready for vkformer's kernels: instance, device, queue,
/// memory, pipelines and the validation messenger. Not copyable.
/// Thread safety: a Context may be shared by threads, each with its own
/// Recorders and Sessions (tensors, pipelines and submissions are guarded).
/// A Recorder or Session is used by one thread at a time. When the queue is the
/// host's, the host must not submit to it while vkformer does (Vulkan requires
/// queue access to be externally synchronized).
class Context {
 public:
  /// Creates the instance and device as `options` says.
  /// @throws vkf::Error naming what failed (no device, missing layer, ...).
  explicit Context(const ContextOptions& options = {});
  /// Runs on the host application's instance, device and queue. `options.device`
  /// and `options.validation` are ignored (the host chose both); messages of a
  /// validation layer the host enabled reach the host's own messenger.
  /// @throws vkf::Error naming what the host's device lacks.
  explicit Context(const HostVulkan& host, const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The device's capabilities, after the profile's clamps (caps().profile).
  const Capabilities& caps() const;

  /// Allocates a tensor on the device. Contents are undefined.
  /// @throws vkf::Error when the shape is empty or memory runs out.
  Tensor tensor(std::vector<int64_t> shape, DType dtype = DType::F32);

  /// Allocates a tensor and fills it from fp32 host data (converted to `dtype`).
  Tensor tensor(std::vector<int64_t> shape, const std::vector<float>& data,
                DType dtype = DType::F32);

  /// Allocates an int32 tensor and fills it (token ids, masks, indices).
  Tensor tensor_i32(std::vector<int64_t> shape, const std::vector<int32_t>& data);

  /// A tensor over the host application's own buffer, e.g. one a fragment
  /// shader reads. vkformer never frees it. `usage` is what the buffer was
  /// created with: it must include VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, and
  /// TRANSFER_SRC / TRANSFER_DST for read() / write() (vkformer never maps a
  /// host buffer: it copies through a staging buffer); `offset` must be a multiple of minStorageBufferOffsetAlignment and
  /// the buffer must be bound to memory and hold offset + the tensor's bytes.
  /// @throws vkf::Error naming the missing usage flag or the bad offset.
  Tensor wrap_buffer(VkBuffer buffer, VkDeviceSize offset, VkDeviceSize buffer_size,
                     VkBufferUsageFlags usage, std::vector<int64_t> shape, DType dtype = DType::F32);

  /// Copies host data into a tensor, converting fp32 to the tensor's dtype
  /// (Q8_0, Q4_0, Q4_1: quantized as ggml's reference quantizers do; Q4_K and
  /// Q6_K have no quantizer: write their blocks with write_bytes).
  /// Waits for the copy; the device must not be using the tensor.
  void write(Tensor& t, const std::vector<float>& data);
  /// Copies raw bytes into a tensor (its dtype's layout; a block tensor takes
  /// Tensor::bytes() bytes, GGUF's blocks as they are). Waits for the copy.
  void write_bytes(Tensor& t, const void* data, size_t bytes);
  /// Reads a tensor back as fp32 (fp16 is widened, blocks dequantized). Waits for the copy.
  std::vector<float> read(const Tensor& t);
  /// Reads an int32 tensor back.
  std::vector<int32_t> read_i32(const Tensor& t);

  /// Submits a recorder's command buffer and waits for it to finish.
  /// Thread-safe: submissions from several threads are serialized. With
  /// max_dispatches_per_submit set, a longer recording goes in several
  /// submissions (pieces recorded as such, barriers correct across them).
  void submit(Recorder& rec);
  /// Submits without waiting: the host waits on `sync.fence` or its semaphores,
  /// and must not reuse or reset `rec` before then.
  void submit_async(Recorder& rec, const SubmitSync& sync);
  /// True when the context runs on a host application's device.
  bool adopted() const;

  /// Warnings and errors reported by the validation layer so far.
  uint64_t validation_messages() const;
  /// The last validation message, for test output.
  std::string last_validation_message() const;

  /// Writes the pipeline cache to disk now (it is also written on destruction).
  void save_pipeline_cache();
  /// Queue submissions so far: kernels, and uploads or downloads that had to
  /// go through a staging buffer (none on devices with host-visible memory).
  uint64_t submissions() const;
  /// Number of compute pipelines created by this context so far.
  uint64_t pipelines_created() const;
  /// Bytes of device memory new tensors can still get: free space in vkformer's
  /// blocks plus what the device-local heap (or VK_EXT_memory_budget, when the
  /// device has it) and the memory limit leave.
  uint64_t available_memory() const;
  /// What vkformer's memory pool holds now, and the device's budget figures.
  MemoryReport memory_report() const;
  /// True when tensors are read and written through mapped device memory
  /// (integrated GPUs, lavapipe): uploads and downloads need no submission.
  bool host_mapped() const;
  /// True when vkformer enabled VK_LAYER_KHRONOS_validation on its own instance.
  bool validation_enabled() const;
  /// The on-disk pipeline cache file (keyed by the device's pipeline-cache
  /// UUID and driver version); empty when caching is off. Other per-device
  /// caches, such as `bench ops`'s measured peak, live beside it.
  std::string pipeline_cache_file() const;
  /// Why the on-disk pipeline cache is not used although caching is on (e.g.
  /// "PATH: cannot read the pipeline cache: is a directory, expected a file;
  /// running without the pipeline cache"), or empty. Pipelines still work; an
  /// application may show it as a warning (the CLI does).
  std::string pipeline_cache_warning() const;
  /// True once a Vulkan call reported VK_ERROR_DEVICE_LOST. Every later call
  /// that would use the device throws a vkf::Error saying so; destroy the
  /// Context (and its Models and Sessions) and create a new one.
  bool device_lost() const;

  /// The Vulkan handles the context runs on (the host's, or its own): for
  /// creating fences and semaphores for submit_async(), or sharing the device.
  VkDevice vk_device() const;
  VkPhysicalDevice vk_physical_device() const;
  VkQueue vk_queue() const;
  uint32_t queue_family_index() const;

  struct Impl;  ///< internal: every Vulkan object vkformer holds (src/vk/context_impl.hpp)

 private:
  friend struct InternalAccess;  // vkformer's own code reaches Impl through src/vk/internals.hpp
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf
