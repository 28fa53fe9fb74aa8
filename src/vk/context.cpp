// Context: creates instance and device, owns memory and pipelines, and moves
// data between host and device.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "vk/check.hpp"
#include "vk/context_impl.hpp"
#include "vk/recorder_impl.hpp"
#include "vkformer/reference.hpp"

namespace vkf {
namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

/// VKFORMER_MEMORY_LIMIT: "1048576", "512K", "64M", "2G" (powers of 1024; "MiB" and "MB" alike).
uint64_t memory_limit(const ContextOptions& o) {
  if (o.memory_limit_bytes) return o.memory_limit_bytes;
  const char* e = std::getenv("VKFORMER_MEMORY_LIMIT");
  if (!e || !*e) return 0;
  const std::string s = e;
  auto bad = [&]() -> Error {
    return Error("VKFORMER_MEMORY_LIMIT \"" + s + "\": expected a positive size in bytes, e.g. 1048576, 512K, 64M or 2G");
  };
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == 0 || i > 15) throw bad();
  uint64_t v = std::stoull(s.substr(0, i));
  std::string unit = s.substr(i);
  for (auto& c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (unit == "B") unit.clear();
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (unit.size() == 2 && unit[1] == 'I') unit.pop_back();
  const std::string units = "KMGT";
  if (unit.size() > 1 || (unit.size() == 1 && units.find(unit[0]) == std::string::npos)) throw bad();
  const unsigned shift = unit.empty() ? 0 : unsigned(10 * (units.find(unit[0]) + 1));
  if (v == 0 || v > (UINT64_MAX >> shift)) throw bad();
  v <<= shift;
  return v;
}

uint32_t compute_queue_family(VkPhysicalDevice phys) {
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, nullptr);
  std::vector<VkQueueFamilyProperties> q(n);
  vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, q.data());
  // Prefer a compute family without graphics (async compute) only if it has timestamps.
  for (uint32_t i = 0; i < n; ++i)
    if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) &&
        q[i].timestampValidBits)
      return i;
  for (uint32_t i = 0; i < n; ++i)
    if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return i;
  throw Error("the selected device has no compute queue");
}

void transfer_barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags sa,
                      VkPipelineStageFlags dst, VkAccessFlags da) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = sa;
  b.dstAccessMask = da;
  vkCmdPipelineBarrier(cb, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

}  // namespace

std::vector<DeviceDescription> list_devices() {
  InstanceHandles h = create_instance(false, nullptr);
  std::vector<DeviceDescription> out;
  try {
    auto devs = devices_in_preference_order(h.instance);
    for (uint32_t i = 0; i < devs.size(); ++i) {
      Capabilities c = query_capabilities(devs[i], h.api_version, h.instance);
      out.push_back({i, c.device_name, c.device_type, c.driver_name, c});
    }
  } catch (...) {
    destroy_instance(h);
    throw;
  }
  destroy_instance(h);
  return out;
}

Context::Context(const ContextOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.options = options;
  const std::string profile = resolve_profile(options);  // a bad name fails before any Vulkan work
  s.max_dispatches_per_submit = resolve_max_dispatches(options);
  bool validation = options.validation < 0 ? env_flag("VKFORMER_VALIDATION") : options.validation > 0;
  std::string selector = options.device;
  if (selector.empty())
    if (const char* e = std::getenv("VKFORMER_DEVICE")) selector = e;

  s.inst = create_instance(validation, &s.vlog);
  try {
    uint32_t index = 0;
    s.phys = select_device(s.inst.instance, selector, &index);
    s.caps = query_capabilities(s.phys, s.inst.api_version, s.inst.instance);
    apply_profile(profile, s.caps);
    s.queue_family = compute_queue_family(s.phys);

    // Enable only what the kernels use and the profile allows: 16-bit storage
    // for fp16 tensors (so the validation layer flags an fp16 shader under no-fp16),
    // subgroup size control for the SGS knob (the extension below Vulkan 1.3).
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.storageBuffer16BitAccess = s.caps.storage_16bit;
    VkPhysicalDeviceSubgroupSizeControlFeatures fsc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    fsc.subgroupSizeControl = s.caps.subgroup_size_control;
    fsc.computeFullSubgroups = s.caps.compute_full_subgroups;
    if (s.caps.subgroup_size_control) f11.pNext = &fsc;
    // fp16 arithmetic for the coopmat variants and their emulation; for
    // coopmat, the extension and the Vulkan memory model too.
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV fcm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    f12.shaderFloat16 = s.caps.shader_float16;
    f12.pNext = f11.pNext;
    f11.pNext = &f12;
    if (s.caps.coopmat) {
      f12.vulkanMemoryModel = VK_TRUE;
      fcm.cooperativeMatrix = VK_TRUE;
      fcm.pNext = f12.pNext;
      f12.pNext = &fcm;
    }
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    f2.pNext = &f11;
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = s.queue_family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &prio;
    // VK_EXT_memory_budget, when present, says how much memory is really left.
    std::vector<const char*> exts;
    s.memory_budget = has_device_extension(s.phys, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (s.memory_budget) exts.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (s.caps.subgroup_size_control && !core_1_3(s.inst.api_version, s.caps.api_version))
      exts.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    if (s.caps.coopmat) exts.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.pNext = &f2;
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = uint32_t(exts.size());
    dci.ppEnabledExtensionNames = exts.data();
    VKF_CHECK(vkCreateDevice(s.phys, &dci, nullptr, &s.device));
    vkGetDeviceQueue(s.device, s.queue_family, 0, &s.queue);
    s.finish_setup();
    if (options.verbose)
      std::fprintf(stderr,
                   "vkformer: device %u: %s (%s, driver %s), subgroup %u, shared memory %u KiB, "
                   "fp16 storage %s, validation %s, profile %s\n",
                   index, s.caps.device_name.c_str(), s.caps.device_type.c_str(),
                   s.caps.driver_name.c_str(), s.caps.subgroup_size, s.caps.max_shared_memory / 1024,
                   s.caps.f16_storage(), validation ? "on" : "off", profile.c_str());
  } catch (...) {
    s.destroy();
    throw;
  }
}

Context::Context(const HostVulkan& host, const ContextOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.options = options;
  const std::string profile = resolve_profile(options);
  s.max_dispatches_per_submit = resolve_max_dispatches(options);
  s.adopted = true;
  s.alloc = host.allocator;
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("host Vulkan objects: " + what);
  };
  need(host.instance && host.physical_device && host.device && host.queue,
       "instance, physical_device, device and queue must all be given");
  if (host.get_instance_proc_addr)
    need(host.get_instance_proc_addr(host.instance, "vkCreateDevice") ==
             vkGetInstanceProcAddr(host.instance, "vkCreateDevice"),
         "get_instance_proc_addr resolves to another Vulkan loader than the one vkformer links");
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(host.physical_device, &props);
  need(props.apiVersion >= VK_API_VERSION_1_2,
       std::string("the device \"") + props.deviceName + "\" supports Vulkan " +
           std::to_string(VK_API_VERSION_MAJOR(props.apiVersion)) + "." +
           std::to_string(VK_API_VERSION_MINOR(props.apiVersion)) + "; vkformer needs 1.2");
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(host.physical_device, &n, nullptr);
  std::vector<VkQueueFamilyProperties> q(n);
  vkGetPhysicalDeviceQueueFamilyProperties(host.physical_device, &n, q.data());
  need(host.queue_family_index < n, "queue_family_index " + std::to_string(host.queue_family_index) +
                                        " does not exist (the device has " + std::to_string(n) + ")");
  need(q[host.queue_family_index].queueFlags & VK_QUEUE_COMPUTE_BIT,
       "queue family " + std::to_string(host.queue_family_index) + " has no VK_QUEUE_COMPUTE_BIT");
  s.phys = host.physical_device;
  s.device = host.device;
  s.queue = host.queue;
  s.queue_family = host.queue_family_index;
  s.caps = query_capabilities(s.phys, VK_API_VERSION_1_2);  // the host's instance may be 1.2
  // Only what the host enabled may be used. Nothing says whether it enabled
  // subgroupSizeControl, so pipelines never require a subgroup size there.
  s.caps.storage_16bit = s.caps.storage_16bit && host.storage_buffer_16bit_access;
  s.caps.subgroup_size_control = s.caps.compute_full_subgroups = false;
  s.caps.coopmat = false;  // query_capabilities() without the instance leaves it off too
  s.caps.shader_float16 = false;  // nothing says whether the host enabled shaderFloat16
  apply_profile(profile, s.caps);
  s.caps.timestamps = s.caps.timestamps && q[s.queue_family].timestampValidBits > 0;
  s.memory_budget = std::find(host.device_extensions.begin(), host.device_extensions.end(),
                              VK_EXT_MEMORY_BUDGET_EXTENSION_NAME) != host.device_extensions.end();
  try {
    s.finish_setup();
  } catch (...) {
    s.destroy();
    throw;
  }
  if (options.verbose)
    std::fprintf(stderr, "vkformer: on the host's device %s (%s), queue family %u, fp16 storage %s, profile %s\n",
                 s.caps.device_name.c_str(), s.caps.device_type.c_str(), s.queue_family,
                 s.caps.f16_storage(), profile.c_str());
}

void Context::Impl::finish_setup() {
  // The gpu profile stands for a discrete GPU, whose memory the host does not map.
  const bool staging = options.force_staging || caps.profile.find("gpu") != std::string::npos;
  memory = std::make_shared<MemoryPool>(phys, device, caps, staging, alloc,
                                        memory_limit(options), memory_budget);
  pipelines = std::make_unique<Pipelines>(device, caps, options.cache_dir, alloc);
  if (const std::string w = pipelines->cache_warning(); !w.empty())
    std::fprintf(stderr, "vkformer: warning: %s\n", w.c_str());
  load_tuning_table();
  VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = queue_family;
  VKF_CHECK(vkCreateCommandPool(device, &pci, alloc, &command_pool));
}

void Context::Impl::destroy() {
  if (device) {
    // The host's device may be busy with the host's own work: wait for our queue only.
    // Unchecked: nothing can be done about a failure while tearing down, and
    // on a lost device it returns VK_ERROR_DEVICE_LOST with nothing left running.
    if (queue) {
      std::lock_guard<std::mutex> lock(queue_mu);
      vkQueueWaitIdle(queue);
    }
    pipelines.reset();
    if (memory) memory->release();
    if (command_pool) vkDestroyCommandPool(device, command_pool, alloc);
    command_pool = VK_NULL_HANDLE;
    if (!adopted) vkDestroyDevice(device, nullptr);
    device = VK_NULL_HANDLE;
  }
  destroy_instance(inst);
}

Context::Impl::~Impl() = default;

Context::~Context() {
  if (impl_) impl_->destroy();
}

bool Context::adopted() const { return impl_->adopted; }

const Capabilities& Context::caps() const { return impl_->caps; }
uint64_t Context::validation_messages() const { return impl_->vlog.count; }
std::string Context::last_validation_message() const {
  std::lock_guard<std::mutex> lock(impl_->vlog.mu);
  return impl_->vlog.last;
}
void Context::save_pipeline_cache() { impl_->pipelines->save(); }
uint64_t Context::pipelines_created() const { return impl_->pipelines->created(); }
uint64_t Context::submissions() const { return impl_->submissions; }
uint64_t Context::available_memory() const { return impl_->memory->status().available(); }
bool Context::device_lost() const { return impl_->lost; }
VkDevice Context::vk_device() const { return impl_->device; }
VkPhysicalDevice Context::vk_physical_device() const { return impl_->phys; }
VkQueue Context::vk_queue() const { return impl_->queue; }
uint32_t Context::queue_family_index() const { return impl_->queue_family; }
bool Context::host_mapped() const { return impl_->memory->direct_mapped(); }
bool Context::validation_enabled() const { return impl_->inst.validation; }
std::string Context::pipeline_cache_file() const { return impl_->pipelines->cache_file(); }
std::string Context::pipeline_cache_warning() const { return impl_->pipelines->cache_warning(); }

MemoryReport Context::memory_report() const {
  const MemoryPool::Usage u = impl_->memory->usage();
  MemoryReport r;
  r.bytes_in_use = u.bytes_in_use;
  r.block_bytes = u.block_bytes;
  r.blocks = u.blocks;
  r.allocations = u.allocations;
  if (impl_->memory_budget) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT b{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 p{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    p.pNext = &b;
    vkGetPhysicalDeviceMemoryProperties2(impl_->phys, &p);
    r.budget = true;
    r.heap_usage = b.heapUsage[0];
    r.heap_budget = b.heapBudget[0];
  }
  return r;
}

void Context::Impl::alive(const std::string& what) const {
  if (lost)
    throw VulkanError(VK_ERROR_DEVICE_LOST,
                      what + ": the Vulkan device (" + caps.device_name +
                          ") was lost earlier (VK_ERROR_DEVICE_LOST); this Context can no longer be "
                          "used: destroy it, its Models and Sessions, and create a new one");
}

void Context::Impl::queue_submit(const VkSubmitInfo& si, VkFence fence) {
  guarded("submit", [&] {
    std::lock_guard<std::mutex> lock(queue_mu);
    VKF_CHECK(vkQueueSubmit(queue, 1, &si, fence));
    ++submissions;
  });
}

void Context::Impl::submit_and_wait(const std::vector<VkCommandBuffer>& cbs) {
  VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkFence fence;
  VKF_CHECK(vkCreateFence(device, &fci, alloc, &fence));
  try {
    // The last submission's fence also covers the earlier ones (queue order).
    for (size_t i = 0; i < cbs.size(); ++i) {
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = 1;
      si.pCommandBuffers = &cbs[i];
      queue_submit(si, i + 1 == cbs.size() ? fence : VK_NULL_HANDLE);
    }
    guarded("waiting for the device",
            [&] { VKF_CHECK(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX)); });
  } catch (...) {
    vkDestroyFence(device, fence, alloc);
    throw;
  }
  vkDestroyFence(device, fence, alloc);
}

template <class F>
void Context::Impl::run_now(F&& record) {
  std::lock_guard<std::mutex> lock(pool_mu);
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  VKF_CHECK(vkAllocateCommandBuffers(device, &ai, &cb));
  try {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VKF_CHECK(vkBeginCommandBuffer(cb, &bi));
    record(cb);
    VKF_CHECK(vkEndCommandBuffer(cb));
    submit_and_wait(cb);
  } catch (...) {
    vkFreeCommandBuffers(device, command_pool, 1, &cb);
    throw;
  }
  vkFreeCommandBuffers(device, command_pool, 1, &cb);
}

void Context::submit(Recorder& rec) {
  auto& r = internals(rec);
  if (&r.ctx != impl_.get()) throw Error("submit: the recorder belongs to another context");
  if (r.external) throw Error("submit: this recorder writes into the host's command buffer; the host submits it");
  impl_->guarded("submit", [&] {
    impl_->submit_and_wait(r.finish());
    if (r.timestamps) r.collect_timings();
  });
}

void Context::submit_async(Recorder& rec, const SubmitSync& sync) {
  auto& r = internals(rec);
  if (&r.ctx != impl_.get()) throw Error("submit_async: the recorder belongs to another context");
  if (r.external) throw Error("submit_async: this recorder writes into the host's command buffer");
  const size_t nw = sync.wait.size(), ns = sync.signal.size();
  if ((!sync.wait_values.empty() && sync.wait_values.size() != nw) ||
      (!sync.signal_values.empty() && sync.signal_values.size() != ns) ||
      (!sync.wait_stages.empty() && sync.wait_stages.size() != nw))
    throw Error("submit_async: wait_values, wait_stages and signal_values must be empty or match their semaphores");
  std::vector<VkPipelineStageFlags> stages =
      sync.wait_stages.empty() ? std::vector<VkPipelineStageFlags>(nw, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT)
                               : sync.wait_stages;
  impl_->alive("submit_async");
  const std::vector<VkCommandBuffer> cbs = r.finish();
  // A recording split into pieces: the first waits, the last signals.
  for (size_t i = 0; i + 1 < cbs.size(); ++i) {
    VkTimelineSemaphoreSubmitInfo tw{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    tw.waitSemaphoreValueCount = uint32_t(sync.wait_values.size());
    tw.pWaitSemaphoreValues = sync.wait_values.data();
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    if (i == 0) {
      if (!sync.wait_values.empty()) si.pNext = &tw;
      si.waitSemaphoreCount = uint32_t(nw);
      si.pWaitSemaphores = sync.wait.data();
      si.pWaitDstStageMask = stages.data();
    }
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cbs[i];
    impl_->queue_submit(si, VK_NULL_HANDLE);
  }
  const bool first = cbs.size() == 1;
  VkCommandBuffer cb = cbs.back();
  VkTimelineSemaphoreSubmitInfo tl{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  tl.waitSemaphoreValueCount = first ? uint32_t(sync.wait_values.size()) : 0;
  tl.pWaitSemaphoreValues = first ? sync.wait_values.data() : nullptr;
  tl.signalSemaphoreValueCount = uint32_t(sync.signal_values.size());
  tl.pSignalSemaphoreValues = sync.signal_values.data();
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  if ((first && !sync.wait_values.empty()) || !sync.signal_values.empty()) si.pNext = &tl;
  si.waitSemaphoreCount = first ? uint32_t(nw) : 0;
  si.pWaitSemaphores = sync.wait.data();
  si.pWaitDstStageMask = stages.data();
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  si.signalSemaphoreCount = uint32_t(ns);
  si.pSignalSemaphores = sync.signal.data();
  impl_->queue_submit(si, sync.fence);
}

Tensor Context::wrap_buffer(VkBuffer buffer, VkDeviceSize offset, VkDeviceSize buffer_size,
                            VkBufferUsageFlags usage, std::vector<int64_t> shape, DType dtype) {
  if (!buffer) throw Error("wrap_buffer: the buffer is VK_NULL_HANDLE");
  if (!(usage & VK_BUFFER_USAGE_STORAGE_BUFFER_BIT))
    throw Error("wrap_buffer: the buffer was not created with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, "
                "which compute shaders need to bind it");
  const uint64_t align = impl_->caps.min_storage_buffer_offset_alignment;
  if (offset % align)
    throw Error("wrap_buffer: offset " + std::to_string(offset) +
                " is not a multiple of minStorageBufferOffsetAlignment (" + std::to_string(align) + ")");
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) throw Error("wrap_buffer: every dimension must be positive");
    n *= uint64_t(d);
  }
  if (shape.empty()) throw Error("wrap_buffer: a shape needs at least one dimension");
  if (is_block_dtype(dtype))
    throw Error(std::string("wrap_buffer: ") + dtype_name(dtype) + " blocks cannot be wrapped; upload them with Context::tensor");
  const uint64_t bytes = n * dtype_size(dtype);
  if (offset + bytes > buffer_size)
    throw Error("wrap_buffer: the tensor needs " + std::to_string(bytes) + " bytes at offset " +
                std::to_string(offset) + ", the buffer has " + std::to_string(buffer_size));
  auto a = std::make_shared<Allocation>();
  a->buffer = buffer;
  a->offset = offset;
  a->size = a->reserved = bytes;
  a->external_owner = impl_.get();
  a->usage = usage;
  return Tensor(std::move(a), std::move(shape), dtype);
}

Tensor Context::tensor(std::vector<int64_t> shape, DType dtype) {
  if (shape.empty()) throw Error("tensor: a shape needs at least one dimension");
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) throw Error("tensor: every dimension must be positive, got " + std::to_string(d));
    if (n > (uint64_t(1) << 40) / uint64_t(d)) throw Error("tensor: the shape is absurdly large");
    n *= uint64_t(d);
  }
  std::string what = "a tensor [";
  for (size_t i = 0; i < shape.size(); ++i) what += (i ? ", " : "") + std::to_string(shape[i]);
  what += std::string("] ") + dtype_name(dtype);
  if (uint64_t(shape.back()) % dtype_block(dtype))
    throw Error("tensor: " + what + ": the innermost dim must be a multiple of the " + dtype_name(dtype) +
                " block of " + std::to_string(dtype_block(dtype)) + " values");
  impl_->alive("tensor");
  // Blocks of 34 or 18 bytes end anywhere: the allocation is whole 32-bit
  // words, which shaders read the blocks through (shaders/lib/quant.glsl).
  const uint64_t bytes = dtype_bytes(dtype, n);
  auto a = impl_->memory->allocate(is_block_dtype(dtype) ? (bytes + 3) / 4 * 4 : bytes, what);
  return Tensor(std::move(a), std::move(shape), dtype);
}

Tensor Context::tensor(std::vector<int64_t> shape, const std::vector<float>& data, DType dtype) {
  Tensor t = tensor(std::move(shape), dtype);
  write(t, data);
  return t;
}

Tensor Context::tensor_i32(std::vector<int64_t> shape, const std::vector<int32_t>& data) {
  Tensor t = tensor(std::move(shape), DType::I32);
  if (data.size() != size_t(t.numel()))
    throw Error("tensor_i32: " + std::to_string(data.size()) + " values for " + t.describe());
  write_bytes(t, data.data(), data.size() * 4);
  return t;
}

void Context::write(Tensor& t, const std::vector<float>& data) {
  if (data.size() != size_t(t.numel()))
    throw Error("write: " + std::to_string(data.size()) + " values for tensor " + t.describe());
  switch (t.dtype()) {
    case DType::F32: write_bytes(t, data.data(), data.size() * 4); break;
    case DType::F16: {
      std::vector<uint16_t> h(data.size());
      for (size_t i = 0; i < h.size(); ++i) h[i] = float_to_half(data[i]);
      write_bytes(t, h.data(), h.size() * 2);
      break;
    }
    case DType::I32: throw Error("write: tensor " + t.describe() + " holds integers; use write_bytes");
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_1: {  // quantized as ggml's reference quantizers do
      const std::vector<uint8_t> b = ref::quantize(weight_format_of(t.dtype()), data.data(), data.size());
      write_bytes(t, b.data(), b.size());
      break;
    }
    case DType::Q4_K:
    case DType::Q6_K:
      throw Error("write: tensor " + t.describe() + ": there is no quantizer for " + dtype_name(t.dtype()) +
                  "; write its blocks with write_bytes");
  }
}

void Context::write_bytes(Tensor& t, const void* data, size_t bytes) {
  const Allocation& a = *t.allocation();
  if (a.external_owner && !(a.usage & VK_BUFFER_USAGE_TRANSFER_DST_BIT))
    throw Error("write: the host's buffer lacks VK_BUFFER_USAGE_TRANSFER_DST_BIT");
  // A block tensor's allocation is whole words: its bytes, then up to 3 bytes of padding, zeroed.
  std::vector<uint8_t> padded;
  if (bytes != a.size && bytes == t.bytes() && a.size == (bytes + 3) / 4 * 4 && is_block_dtype(t.dtype())) {
    padded.assign(a.size, 0);
    std::memcpy(padded.data(), data, bytes);
    data = padded.data();
    bytes = a.size;
  }
  if (bytes != a.size)
    throw Error("write: " + std::to_string(bytes) + " bytes for tensor " + t.describe() + " of " +
                std::to_string(t.bytes()) + " bytes");
  impl_->alive("write");
  if (a.mapped) {
    std::memcpy(a.mapped, data, bytes);
    return;
  }
  auto st = impl_->memory->staging(bytes);
  std::memcpy(st.mapped, data, bytes);
  impl_->run_now([&](VkCommandBuffer cb) {
    // Earlier dispatches may still read or write the destination.
    transfer_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                     VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                     VK_ACCESS_TRANSFER_WRITE_BIT);
    VkBufferCopy c{0, a.offset, bytes};
    vkCmdCopyBuffer(cb, st.buffer, a.buffer, 1, &c);
  });
}

std::vector<uint8_t> Context::Impl::download(const Allocation& a) {
  if (a.external_owner && !(a.usage & VK_BUFFER_USAGE_TRANSFER_SRC_BIT))
    throw Error("read: the host's buffer lacks VK_BUFFER_USAGE_TRANSFER_SRC_BIT");
  alive("read");
  std::vector<uint8_t> raw(a.size);
  if (a.mapped) {
    std::memcpy(raw.data(), a.mapped, a.size);
    return raw;
  }
  auto st = memory->staging(a.size, true);
  run_now([&](VkCommandBuffer cb) {
    transfer_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                     VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                     VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    VkBufferCopy c{a.offset, 0, a.size};
    vkCmdCopyBuffer(cb, a.buffer, st.buffer, 1, &c);
    transfer_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                     VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  });
  std::memcpy(raw.data(), st.mapped, a.size);
  return raw;
}

std::vector<float> Context::read(const Tensor& t) {
  std::vector<uint8_t> raw = impl_->download(*t.allocation());
  if (is_block_dtype(t.dtype())) return ref::dequantize(weight_format_of(t.dtype()), raw.data(), size_t(t.numel()));
  std::vector<float> out(size_t(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case DType::F32: std::memcpy(&out[i], raw.data() + 4 * i, 4); break;
      case DType::F16: {
        uint16_t h;
        std::memcpy(&h, raw.data() + 2 * i, 2);
        out[i] = half_to_float(h);
        break;
      }
      case DType::I32: {
        int32_t v;
        std::memcpy(&v, raw.data() + 4 * i, 4);
        out[i] = float(v);
        break;
      }
      default: break;  // block types: dequantized above
    }
  }
  return out;
}

std::vector<int32_t> Context::read_i32(const Tensor& t) {
  if (t.dtype() != DType::I32) throw Error("read_i32: tensor " + t.describe() + " is not i32");
  std::vector<uint8_t> raw = impl_->download(*t.allocation());
  std::vector<int32_t> out(size_t(t.numel()));
  std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

}  // namespace vkf
