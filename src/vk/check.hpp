// Every VkResult is checked; a failure becomes a vkf::Error naming the call.
// The same wrapper carries the fault-injection hook (VKFORMER_FAULT_INJECT),
// so tests can make any checked call fail as a broken device would.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <string>
#include <vector>

#include "vkformer/tensor.hpp"

namespace vkf {

/// A failed Vulkan call: a vkf::Error that also carries the VkResult, so the
/// layers above can notice a lost device, and the context tags they add on the
/// way up. what() reads "tag: tag: detail", outermost tag first, e.g.
/// "Session::forward (2 sequences): submitting the forward pass of 119
/// dispatches: vkQueueSubmit failed: ...".
class VulkanError : public Error {
 public:
  VulkanError(VkResult r, const std::string& detail) : Error(detail), result_(r), detail_(detail), text_(detail) {}
  VkResult result() const { return result_; }
  /// The failure itself, without context.
  const std::string& detail() const { return detail_; }
  /// What was being done when it failed, outermost first.
  const std::vector<std::string>& context() const { return context_; }
  /// Adds `tag` as the outermost context. A tag already there is not added
  /// again, so a call that passes through the same wrapper twice names it once.
  void add_context(const std::string& tag);
  const char* what() const noexcept override { return text_.c_str(); }

 private:
  VkResult result_;
  std::string detail_;
  std::vector<std::string> context_;
  std::string text_;  ///< context and detail joined with ": "
};

/// Throws a copy of `e` with `tag` added to its context.
[[noreturn]] void rethrow_with_context(const VulkanError& e, const std::string& tag);

/// Runs f(); a VulkanError leaving it gets tag() added to its context (tag()
/// is only called then, so it may describe how far f got).
template <class Tag, class F>
auto with_context(Tag&& tag, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (VulkanError& e) {
    e.add_context(tag());
    throw;
  }
}

const char* vk_result_name(VkResult r);
/// Throws VulkanError: "<function> failed: <RESULT> (<what it means>)". `call`
/// is the call's source text; only the function name is kept.
[[noreturn]] void vk_fail(VkResult r, const char* call);

namespace fault {
/// Fault injection for tests (never set in production):
///   "SITE:RESULT[:N]"  makes the Nth (default 1st) checked call of SITE return
///   RESULT instead of running it (waits run first, then report RESULT).
///   SITE: submit (vkQueueSubmit), wait (vkWaitForFences), alloc (vkAllocateMemory),
///   map (vkMapMemory), pipeline (vkCreateComputePipelines), or any vk function name.
///   RESULT: device_lost, oom (out of device memory), host_oom, or a VK_ERROR_* name.
///   "tuning_check:wrong_output[:N]" makes the Nth first-use check of a tuned
///   database entry report a wrong output (not a Vulkan call; docs/tuning.md).
/// The environment variable VKFORMER_FAULT_INJECT is read once, at the first
/// checked call; set() replaces it (an empty spec disarms) and restarts the count.
/// @throws vkf::Error on a spec it cannot parse.
void set(const std::string& spec);
extern std::atomic<bool> armed;
/// The injected result for this call, or VK_SUCCESS; `ran_first` says whether
/// the caller must run the call anyway (waits) before reporting it.
VkResult check(const char* call, bool* ran_first);
}  // namespace fault

/// Runs `call` unless a fault is injected for it; returns the VkResult.
template <class F>
VkResult checked_call(const char* text, F&& call) {
  if (fault::armed.load(std::memory_order_relaxed)) {
    bool ran_first = false;
    VkResult f = fault::check(text, &ran_first);
    if (f != VK_SUCCESS) {
      if (ran_first) call();
      return f;
    }
  }
  return call();
}

}  // namespace vkf

/// A Vulkan call's result, with fault injection.
#define VKF_CALL(call) (::vkf::checked_call(#call, [&]() -> VkResult { return (call); }))

#define VKF_CHECK(call)                                      \
  do {                                                       \
    VkResult vkf_r_ = VKF_CALL(call);                        \
    if (vkf_r_ != VK_SUCCESS) ::vkf::vk_fail(vkf_r_, #call); \
  } while (0)
