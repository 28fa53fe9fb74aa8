// vkformer: Transformer inference in Vulkan compute shaders.
// The Context owns (or, later, adopts) the Vulkan instance, device and queue,
// and is the only place that knows about them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkformer/tensor.hpp"

namespace vkf {

/// What the device offers, as queried at context creation. Kernel variants and
/// tile sizes are chosen from this, never from assumptions about a vendor.
struct Capabilities {
  std::string device_name;
  std::string device_type;   ///< "discrete", "integrated", "virtual", "cpu" or "other"
  std::string driver_name;   ///< e.g. "llvmpipe"; empty when the driver does not say
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint32_t api_version = 0;
  uint8_t pipeline_cache_uuid[16] = {};

  uint32_t subgroup_size = 1;              ///< default subgroup size in compute shaders
  bool subgroup_arithmetic = false;        ///< subgroupAdd/Max... usable in compute
  bool subgroup_shuffle = false;
  uint32_t max_shared_memory = 16384;      ///< maxComputeSharedMemorySize, bytes
  uint32_t max_workgroup_invocations = 128;
  uint32_t max_workgroup_size[3] = {128, 128, 64};
  uint32_t max_workgroup_count[3] = {65535, 65535, 65535};
  uint64_t max_storage_buffer_range = 1u << 27;
  uint64_t min_storage_buffer_offset_alignment = 256;
  uint32_t max_push_constants_size = 128;
  bool storage_16bit = false;              ///< fp16 tensors can be stored and loaded
  bool shader_float16 = false;             ///< fp16 arithmetic (vkformer accumulates in fp32 anyway)
  bool timestamps = false;                 ///< timestamp queries work on the compute queue
  double timestamp_period_ns = 1.0;
  uint64_t device_local_bytes = 0;         ///< size of the largest device-local heap
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
  /// Do not use subgroup operations even when the device has them.
  bool disable_subgroups = false;
  /// Do not use 16-bit storage even when the device has it.
  bool disable_fp16 = false;
  /// Print the chosen device to stderr.
  bool verbose = true;
};

/// One entry of list_devices().
struct DeviceDescription {
  uint32_t index;
  std::string name;
  std::string type;
  std::string driver;
  Capabilities caps;  ///< as the device reports them, before any option's clamps
};

/// Lists the Vulkan devices in the order vkformer prefers them.
/// @throws vkf::Error when no Vulkan instance can be created.
std::vector<DeviceDescription> list_devices();

class Recorder;

/// A Vulkan device ready for vkformer's kernels: instance, device, queue,
/// memory, pipelines and the validation messenger. Not copyable.
/// A Context may be used from one thread at a time.
class Context {
 public:
  /// Creates the instance and device as `options` says.
  /// @throws vkf::Error naming what failed (no device, missing layer, ...).
  explicit Context(const ContextOptions& options = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The device's capabilities, after the options' clamps (disable_fp16 ...).
  const Capabilities& caps() const;

  /// Allocates a tensor on the device. Contents are undefined.
  /// @throws vkf::Error when the shape is empty or memory runs out.
  Tensor tensor(std::vector<int64_t> shape, DType dtype = DType::F32);

  /// Allocates a tensor and fills it from fp32 host data (converted to `dtype`).
  Tensor tensor(std::vector<int64_t> shape, const std::vector<float>& data,
                DType dtype = DType::F32);

  /// Allocates an int32 tensor and fills it (token ids, masks, indices).
  Tensor tensor_i32(std::vector<int64_t> shape, const std::vector<int32_t>& data);

  /// Copies host data into a tensor, converting fp32 to the tensor's dtype.
  /// Waits for the copy; the device must not be using the tensor.
  void write(Tensor& t, const std::vector<float>& data);
  /// Copies raw bytes into a tensor (its dtype's layout). Waits for the copy.
  void write_bytes(Tensor& t, const void* data, size_t bytes);
  /// Reads a tensor back as fp32 (fp16 is widened). Waits for the copy.
  std::vector<float> read(const Tensor& t);
  /// Reads an int32 tensor back.
  std::vector<int32_t> read_i32(const Tensor& t);

  /// Submits a recorder's command buffer and waits for it to finish.
  void submit(Recorder& rec);

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

  struct Impl;
  /// Internal state, used by ops and the recorder (not part of the stable API).
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf
