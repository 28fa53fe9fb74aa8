#include "vk/check.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace vkf {
namespace {

struct Named {
  VkResult r;
  const char* name;
  const char* meaning;
};

// Meanings are what a user can act on, not the spec's wording.
const Named kResults[] = {
    {VK_SUCCESS, "VK_SUCCESS", "success"},
    {VK_NOT_READY, "VK_NOT_READY", "not ready"},
    {VK_TIMEOUT, "VK_TIMEOUT", "timed out"},
    {VK_INCOMPLETE, "VK_INCOMPLETE", "incomplete"},
    {VK_ERROR_OUT_OF_HOST_MEMORY, "VK_ERROR_OUT_OF_HOST_MEMORY", "the host ran out of memory"},
    {VK_ERROR_OUT_OF_DEVICE_MEMORY, "VK_ERROR_OUT_OF_DEVICE_MEMORY", "the device ran out of memory"},
    {VK_ERROR_INITIALIZATION_FAILED, "VK_ERROR_INITIALIZATION_FAILED", "the driver could not initialize"},
    {VK_ERROR_DEVICE_LOST, "VK_ERROR_DEVICE_LOST",
     "the device was lost (driver crash, GPU reset or timeout); this Context cannot be used any more"},
    {VK_ERROR_MEMORY_MAP_FAILED, "VK_ERROR_MEMORY_MAP_FAILED", "device memory could not be mapped"},
    {VK_ERROR_LAYER_NOT_PRESENT, "VK_ERROR_LAYER_NOT_PRESENT", "a layer is missing"},
    {VK_ERROR_EXTENSION_NOT_PRESENT, "VK_ERROR_EXTENSION_NOT_PRESENT", "an extension is missing"},
    {VK_ERROR_FEATURE_NOT_PRESENT, "VK_ERROR_FEATURE_NOT_PRESENT", "a feature is missing"},
    {VK_ERROR_INCOMPATIBLE_DRIVER, "VK_ERROR_INCOMPATIBLE_DRIVER", "no compatible driver"},
    {VK_ERROR_TOO_MANY_OBJECTS, "VK_ERROR_TOO_MANY_OBJECTS", "too many objects of this kind"},
    {VK_ERROR_FORMAT_NOT_SUPPORTED, "VK_ERROR_FORMAT_NOT_SUPPORTED", "format not supported"},
    {VK_ERROR_FRAGMENTED_POOL, "VK_ERROR_FRAGMENTED_POOL", "pool fragmented"},
    {VK_ERROR_OUT_OF_POOL_MEMORY, "VK_ERROR_OUT_OF_POOL_MEMORY", "pool exhausted"},
    {VK_ERROR_UNKNOWN, "VK_ERROR_UNKNOWN", "unknown driver error"},
};

const Named* find(VkResult r) {
  for (const auto& n : kResults)
    if (n.r == r) return &n;
  return nullptr;
}

/// "vkQueueSubmit(queue, 1, &si, fence)" -> "vkQueueSubmit".
std::string function_name(const char* call) {
  std::string s(call);
  auto p = s.find('(');
  return p == std::string::npos ? s : s.substr(0, p);
}

struct Injection {
  std::mutex mu;
  bool env_read = false;
  std::string function;  ///< empty: disarmed
  VkResult result = VK_SUCCESS;
  uint64_t nth = 1, seen = 0;
};
Injection& injection() {
  static Injection inj;
  return inj;
}

void parse_into(Injection& inj, const std::string& spec) {
  inj.function.clear();
  inj.seen = 0;
  if (spec.empty()) {
    fault::armed = false;
    return;
  }
  auto bad = [&](const std::string& why) -> Error {
    fault::armed = false;
    return Error("VKFORMER_FAULT_INJECT \"" + spec + "\": " + why +
                 " (expected SITE:RESULT[:N], e.g. submit:device_lost or alloc:oom:3)");
  };
  const auto c1 = spec.find(':');
  if (c1 == std::string::npos) throw bad("no RESULT");
  const auto c2 = spec.find(':', c1 + 1);
  const std::string site = spec.substr(0, c1);
  const std::string res = spec.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
  static const std::pair<const char*, const char*> kSites[] = {
      {"submit", "vkQueueSubmit"},          {"wait", "vkWaitForFences"}, {"alloc", "vkAllocateMemory"},
      {"map", "vkMapMemory"},               {"pipeline", "vkCreateComputePipelines"}};
  std::string fn;
  // Not a Vulkan call: the first-use check of a tuned entry (ops/tuning_util.cpp)
  // reports a wrong output, so tests can reach what follows a failed check.
  if (site == "tuning_check") {
    if (res != "wrong_output") throw bad("the SITE tuning_check takes the RESULT wrong_output");
    fn = site;
  }
  for (const auto& [alias, name] : kSites)
    if (site == alias) fn = name;
  if (fn.empty()) {
    if (site.rfind("vk", 0) != 0) throw bad("unknown SITE \"" + site + "\"");
    fn = site;
  }
  VkResult r = VK_SUCCESS;
  if (fn == "tuning_check") r = VK_ERROR_UNKNOWN;  // any failure: the check reads it as a wrong output
  else if (res == "device_lost") r = VK_ERROR_DEVICE_LOST;
  else if (res == "oom") r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  else if (res == "host_oom") r = VK_ERROR_OUT_OF_HOST_MEMORY;
  else
    for (const auto& n : kResults)
      if (res == n.name && n.r < 0) r = n.r;
  if (r == VK_SUCCESS) throw bad("unknown RESULT \"" + res + "\"");
  uint64_t nth = 1;
  if (c2 != std::string::npos) {
    const std::string n = spec.substr(c2 + 1);
    char* end = nullptr;
    nth = n.empty() || !std::isdigit(static_cast<unsigned char>(n[0])) ? 0 : std::strtoull(n.c_str(), &end, 10);
    if (nth == 0 || !end || *end) throw bad("N must be a positive integer, got \"" + n + "\"");
  }
  inj.function = fn;
  inj.result = r;
  inj.nth = nth;
  fault::armed = true;
}

}  // namespace

namespace fault {

std::atomic<bool> armed{false};

namespace {
// Arms the hook from the environment before the first checked call.
struct EnvArm {
  EnvArm() {
    const char* e = std::getenv("VKFORMER_FAULT_INJECT");
    if (e && *e) armed = true;  // parsed (and checked) at the first call
  }
} env_arm;
}  // namespace

void set(const std::string& spec) {
  Injection& inj = injection();
  std::lock_guard<std::mutex> lock(inj.mu);
  inj.env_read = true;
  parse_into(inj, spec);
}

VkResult check(const char* call, bool* ran_first) {
  Injection& inj = injection();
  std::lock_guard<std::mutex> lock(inj.mu);
  if (!inj.env_read) {
    inj.env_read = true;
    const char* e = std::getenv("VKFORMER_FAULT_INJECT");
    parse_into(inj, e ? e : "");
  }
  if (inj.function.empty() || function_name(call) != inj.function) return VK_SUCCESS;
  if (++inj.seen != inj.nth) return VK_SUCCESS;
  *ran_first = inj.function == "vkWaitForFences" || inj.function == "vkQueueWaitIdle" ||
               inj.function == "vkDeviceWaitIdle";
  return inj.result;
}

}  // namespace fault

const char* vk_result_name(VkResult r) {
  const Named* n = find(r);
  return n ? n->name : "VkResult(unknown)";
}

void vk_fail(VkResult r, const char* call) {
  const Named* n = find(r);
  std::string msg = function_name(call) + " failed: " + (n ? n->name : "VkResult " + std::to_string(int(r)));
  if (n) msg += std::string(" (") + n->meaning + ")";
  throw VulkanError(r, msg);
}

void VulkanError::add_context(const std::string& tag) {
  if (std::find(context_.begin(), context_.end(), tag) != context_.end()) return;
  context_.insert(context_.begin(), tag);
  text_ = tag + ": " + text_;
}

void rethrow_with_context(const VulkanError& e, const std::string& tag) {
  VulkanError copy(e);
  copy.add_context(tag);
  throw copy;
}

}  // namespace vkf
