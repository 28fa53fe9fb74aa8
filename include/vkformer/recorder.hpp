// A Recorder collects kernel dispatches into one command buffer, with only the
// barriers the data flow needs, and optionally a timestamp pair per dispatch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

namespace vkf {

class Context;

/// Time one dispatch took on the device, from timestamp queries.
struct DispatchTiming {
  std::string label;  ///< op and variant, e.g. "gemm/tiled"
  double ms = 0.0;
};

/// Records ops (see ops.hpp) into one command buffer. Submit it with
/// Context::submit(); after that it can be reset() and reused.
class Recorder {
 public:
  /// @param timestamps bracket every dispatch with timestamp queries.
  explicit Recorder(Context& ctx, bool timestamps = false);
  /// Way (b) of running inside a host application: records into the host's
  /// command buffer, which must be in the recording state, outside a render
  /// pass, from a pool of the context's queue family. The host submits it.
  /// Boundary: the first dispatch is preceded by a barrier making all earlier
  /// writes (any stage) visible to compute shaders; end() adds a barrier making
  /// the compute writes visible to every later stage (vertex, fragment,
  /// transfer, host). Timestamps are not available in this mode. The Recorder
  /// owns the descriptor sets the recorded commands use: keep it alive until
  /// the host's submission has completed.
  Recorder(Context& ctx, VkCommandBuffer host_command_buffer);
  /// Host command buffer mode: records the closing barrier. Call once, after
  /// the last op and before the host ends its command buffer.
  void end();
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// Drops everything recorded, ready to record again. Waits for nothing:
  /// call only after the submission finished (Context::submit returns then).
  void reset();

  /// Dispatches recorded so far.
  size_t dispatches() const;
  /// Pipeline barriers recorded so far.
  size_t barriers() const;
  /// Prefixes the labels of the dispatches recorded from now on ("decoder.3"),
  /// so timings say which layer a kernel ran for. Empty: no prefix.
  void set_scope(const std::string& scope);
  /// Per-dispatch device times of the last submission (needs timestamps=true).
  std::vector<DispatchTiming> timings() const;

  struct Impl;  ///< internal: the command buffer and barrier state (src/vk/recorder_impl.hpp)

 private:
  friend struct InternalAccess;  // ops reach Impl through src/vk/internals.hpp
  std::unique_ptr<Impl> impl_;
};

}  // namespace vkf
