#include "vk/pipelines.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "io/read_file.hpp"
#include "vk/check.hpp"
#include "vk/shader_registry.hpp"
#include "vk/spirv_reflect.hpp"

namespace vkf {
namespace {

std::string default_cache_dir() {
  if (const char* d = std::getenv("VKFORMER_CACHE_DIR")) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/vkformer";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/vkformer";
  return "";
}

void make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
}

// The cache is only handed to the driver when its header matches this device:
// some drivers crash on another device's data instead of ignoring it.
bool header_matches(const std::vector<char>& data, const Capabilities& caps) {
  if (data.size() < 32) return false;
  uint32_t len, version, vendor, device;
  std::memcpy(&len, data.data(), 4);
  std::memcpy(&version, data.data() + 4, 4);
  std::memcpy(&vendor, data.data() + 8, 4);
  std::memcpy(&device, data.data() + 12, 4);
  return len >= 32 && version == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         vendor == caps.vendor_id && device == caps.device_id &&
         std::memcmp(data.data() + 16, caps.pipeline_cache_uuid, VK_UUID_SIZE) == 0;
}

}  // namespace

std::string subgroup_size_problem(const Capabilities& c, uint32_t size, uint32_t workgroup) {
  const std::string range = std::to_string(c.min_subgroup_size) + ".." + std::to_string(c.max_subgroup_size);
  if (!c.subgroup_size_control)
    return "subgroup size " + std::to_string(size) + " was required, but the device (profile " + c.profile +
           ") offers no subgroup size control for compute (VK_EXT_subgroup_size_control or Vulkan 1.3; never on a "
           "host application's device); its subgroups are " + range;
  if (size < c.min_subgroup_size || size > c.max_subgroup_size || (size & (size - 1)) != 0)
    return "subgroup size " + std::to_string(size) + " is not a power of two within the device's " + range;
  if (uint64_t(workgroup) > uint64_t(size) * c.max_workgroup_subgroups)
    return "a workgroup of " + std::to_string(workgroup) + " invocations needs more subgroups of " +
           std::to_string(size) + " than maxComputeWorkgroupSubgroups (" + std::to_string(c.max_workgroup_subgroups) +
           ")";
  return "";
}

Pipelines::Pipelines(VkDevice device, const Capabilities& caps, const std::string& cache_dir,
                     const VkAllocationCallbacks* alloc)
    : device_(device), alloc_(alloc), caps_(caps) {
  std::string dir = cache_dir.empty() ? default_cache_dir() : cache_dir;
  std::vector<char> data;
  if (!dir.empty() && dir != "off") {
    char uuid[33];
    for (int i = 0; i < 16; ++i) std::snprintf(uuid + 2 * i, 3, "%02x", caps.pipeline_cache_uuid[i]);
    cache_file_ = dir + "/pipelines-" + uuid + "-" + std::to_string(caps.driver_version) + ".bin";
    data = read_cache(cache_file_, caps);
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = data.size();
  ci.pInitialData = data.empty() ? nullptr : data.data();
  VKF_CHECK(vkCreatePipelineCache(device_, &ci, alloc_, &cache_));
}

Pipelines::~Pipelines() {
  try {
    save();
  } catch (...) {
    // A cache that cannot be written only costs time on the next start.
  }
  for (auto& [k, p] : pipelines_) vkDestroyPipeline(device_, p->pipeline, alloc_);
  for (auto& [k, l] : layouts_) {
    vkDestroyPipelineLayout(device_, l.second, alloc_);
    vkDestroyDescriptorSetLayout(device_, l.first, alloc_);
  }
  for (auto& [k, m] : modules_) vkDestroyShaderModule(device_, m, alloc_);
  vkDestroyPipelineCache(device_, cache_, alloc_);
}

void Pipelines::save() {
  if (cache_file_.empty() || !cache_) return;
  size_t n = 0;
  VKF_CHECK(vkGetPipelineCacheData(device_, cache_, &n, nullptr));
  std::vector<char> data(n);
  VKF_CHECK(vkGetPipelineCacheData(device_, cache_, &n, data.data()));
  make_dirs(cache_file_.substr(0, cache_file_.rfind('/')));
  write_cache(cache_file_, data.data(), n);
}

std::vector<char> Pipelines::read_cache(const std::string& file, const Capabilities& caps) {
  if (!io::exists(file)) return {};
  std::string bytes;
  try {
    bytes = io::read_file(file, "the pipeline cache", kMaxCacheBytes);
  } catch (const Error& e) {
    // A directory, FIFO or unreadable file there: run without the cache, and never
    // write over it (save() does nothing once cache_file_ is empty).
    cache_warning_ = std::string(e.what()) + "; running without the pipeline cache";
    cache_file_.clear();
    return {};
  }
  std::vector<char> data(bytes.begin(), bytes.end());
  if (!header_matches(data, caps)) data.clear();  // another driver's, or garbage: replaced on save
  return data;
}

void Pipelines::write_cache(const std::string& file, const char* data, size_t n) {
  // Only a regular file (or nothing) is replaced; a symlink, directory or device
  // at the path is left alone.
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return;
  // Write a fresh temporary (O_EXCL: never through an existing name), then
  // rename, so a concurrent process never reads half a file.
  const std::string tmp = file + ".tmp" + std::to_string(::getpid()) + "-" +
                          std::to_string(reinterpret_cast<uintptr_t>(this));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return;
  bool ok = true;
  for (size_t done = 0; ok && done < n;) {
    const ssize_t w = ::write(fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) done += size_t(w);
  }
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), file.c_str()) != 0) ::unlink(tmp.c_str());
}

const SpirvBlob& Pipelines::blob(const std::string& shader) {
  for (const auto& b : spirv_blobs())
    if (shader == b.name) return b;
  throw Error("internal: no embedded shader named \"" + shader + "\"");
}

VkShaderModule Pipelines::module(const std::string& shader) {
  auto it = modules_.find(shader);
  if (it != modules_.end()) return it->second;
  const SpirvBlob& b = blob(shader);
  VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  ci.codeSize = b.count * 4;
  ci.pCode = b.words;
  VkShaderModule m;
  VKF_CHECK(vkCreateShaderModule(device_, &ci, alloc_, &m));
  return modules_[shader] = m;
}

void Pipelines::check_limits(const std::string& shader, const std::vector<uint32_t>& spec, uint32_t subgroup_size,
                             Pipeline& p) {
  const std::string where = "internal: shader " + shader + " under profile " + caps_.profile + ": ";
  // Variants are named for what they use (see src/ops/ops.cmake).
  if (!caps_.subgroup_arithmetic && shader.find("subgroup") != std::string::npos)
    throw Error(where + "subgroup operations are not available");
  if (!caps_.coopmat && shader.find("coopmat") != std::string::npos && shader.find("_emulated") == std::string::npos)
    throw Error(where + "cooperative matrices are not available");
  const bool packed = shader.size() > 7 && shader.compare(shader.size() - 7, 7, "_packed") == 0;
  if (shader.find("f16") != std::string::npos && !(packed ? caps_.f16_packed : caps_.storage_16bit))
    throw Error(where + (packed ? "fp16 tensors are not available" : "16-bit storage is not available"));
  p.workgroup_size = spec.empty() ? 1 : spec[0];
  const uint32_t wg_limit = std::min(caps_.max_workgroup_invocations, caps_.max_workgroup_size[0]);
  if (p.workgroup_size == 0 || p.workgroup_size > wg_limit)
    throw Error(where + "workgroup size " + std::to_string(p.workgroup_size) + " is outside 1.." +
                std::to_string(wg_limit));
  if (subgroup_size) {
    const std::string problem = subgroup_size_problem(caps_, subgroup_size, p.workgroup_size);
    if (!problem.empty()) throw Error(where + problem);
    p.subgroup_size = subgroup_size;
    p.full_subgroups = caps_.compute_full_subgroups && p.workgroup_size % subgroup_size == 0;
  }
  const SpirvBlob& b = blob(shader);
  p.shared_bytes = spirv_shared_bytes(b.words, b.count, spec);
  if (p.shared_bytes && *p.shared_bytes > caps_.max_shared_memory)
    throw Error(where + "declares " + std::to_string(*p.shared_bytes) + " bytes of shared memory, more than " +
                std::to_string(caps_.max_shared_memory));
}

const Pipeline& Pipelines::get(const std::string& requested, const std::vector<uint32_t>& spec,
                               uint32_t subgroup_size) {
  // Without 16-bit storage an f16 variant runs as its *_packed twin (cmake/ops.cmake),
  // which reads the same fp16 bytes as 32-bit words: ops name the f16 variant only.
  const bool packed = !caps_.storage_16bit && caps_.f16_packed && requested.find("f16") != std::string::npos &&
                      requested.find("_packed") == std::string::npos;
  const std::string shader = packed ? requested + "_packed" : requested;
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = shader;
  for (uint32_t v : spec) key += "|" + std::to_string(v);
  if (subgroup_size) key += "|sgs=" + std::to_string(subgroup_size);
  auto found = pipelines_.find(key);
  if (found != pipelines_.end()) return *found->second;

  const SpirvBlob& code = blob(shader);
  const ShaderInterface iface = spirv_interface(code.words, code.count, shader);
  const uint32_t bindings = iface.bindings, push_size = iface.push_size;

  if (push_size > caps_.max_push_constants_size)
    throw Error("internal: " + shader + " needs " + std::to_string(push_size) +
                " bytes of push constants, the device allows " +
                std::to_string(caps_.max_push_constants_size));

  auto p = std::make_unique<Pipeline>();
  check_limits(shader, spec, subgroup_size, *p);

  auto& lay = layouts_[{iface.texel, push_size}];
  if (!lay.first) {
    std::vector<VkDescriptorSetLayoutBinding> b(bindings);
    for (uint32_t i = 0; i < bindings; ++i)
      b[i] = {i, iface.texel[i] ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
              VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dci.bindingCount = bindings;
    dci.pBindings = b.data();
    VKF_CHECK(vkCreateDescriptorSetLayout(device_, &dci, alloc_, &lay.first));
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size};
    VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    lci.setLayoutCount = 1;
    lci.pSetLayouts = &lay.first;
    lci.pushConstantRangeCount = push_size ? 1 : 0;
    lci.pPushConstantRanges = &range;
    VKF_CHECK(vkCreatePipelineLayout(device_, &lci, alloc_, &lay.second));
  }

  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo si{uint32_t(spec.size()), entries.data(), spec.size() * 4, spec.data()};

  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module(shader);
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  required.requiredSubgroupSize = p->subgroup_size;
  if (p->subgroup_size) ci.stage.pNext = &required;
  if (p->full_subgroups) ci.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  ci.layout = lay.second;

  const auto start = std::chrono::steady_clock::now();
  VKF_CHECK(vkCreateComputePipelines(device_, cache_, 1, &ci, alloc_, &p->pipeline));
  // VKFORMER_TRACE_PIPELINES=1: one stderr line per pipeline created, with the driver's
  // time. On a CPU driver compiling is most of a cold test suite's time (docs/testing.md).
  static const bool trace = [] {
    const char* e = std::getenv("VKFORMER_TRACE_PIPELINES");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  if (trace)
    std::fprintf(stderr, "vkformer: pipeline %s: %.1f ms\n", key.c_str(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  p->layout = lay.second;
  p->set_layout = lay.first;
  p->bindings = bindings;
  p->texel = iface.texel;
  p->push_size = push_size;
  p->push_block = iface.push_block;
  p->name = shader;
  ++created_;
  return *(pipelines_[key] = std::move(p));
}

}  // namespace vkf
