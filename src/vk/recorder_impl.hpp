// What ops see of the recorder: "dispatch this pipeline over this grid with
// these tensors and push constants". Barriers and timestamps are its business.
#pragma once

#include <vulkan/vulkan.h>

#include <deque>
#include <string>
#include <type_traits>
#include <vector>

#include "vk/context_impl.hpp"
#include "vk/pipelines.hpp"
#include "vkformer/recorder.hpp"

namespace vkf {

/// A tensor a dispatch binds, in binding order, and whether it writes it.
/// [begin, end) binds only those bytes of it (end 0: the whole tensor); begin
/// must keep the binding at a multiple of minStorageBufferOffsetAlignment and
/// the range must not pass maxStorageBufferRange (slice() in op_util.hpp).
struct Use {
  const Tensor* tensor;
  bool write;
  uint64_t begin = 0, end = 0;
  /// Bound to a samplerBuffer binding: elements per texel of its view, 4
  /// (RGBA, a vec4 a fetch) or 1 (R: any length and alignment of rows).
  uint32_t texel_width = 4;
};

struct Grid {
  uint32_t x = 1, y = 1, z = 1;
};

struct Recorder::Impl {
  Impl(Context& ctx, bool timestamps);
  ~Impl();

  Context& context;
  Context::Impl& ctx;

  /// The pipeline for a shader variant (created on first use, then cached).
  /// Its bindings and push-constant size are the shader's own, read from its
  /// SPIR-V (spirv_interface()). `subgroup_size`: the one it requires (the
  /// tuning knob SGS), 0 for the driver's choice.
  const Pipeline& pipeline(const std::string& shader, const std::vector<uint32_t>& spec, uint32_t subgroup_size = 0);
  /// Records one dispatch: `uses` bound in order to bindings 0..n-1, `push`
  /// (the shader's struct from shaders/push/) as its push constants. Throws
  /// when their number or size is not what the shader declares. A barrier
  /// goes before it only when it reads or writes what an earlier dispatch
  /// wrote since the last barrier, or writes what one read.
  template <class Push>
  void dispatch(const Pipeline& p, const std::vector<Use>& uses, const Push& push, Grid grid,
                const std::string& label) {
    static_assert(std::is_trivially_copyable_v<Push> && std::is_class_v<Push>,
                  "push constants are a struct from shaders/push/");
    dispatch_bytes(p, uses, &push, uint32_t(sizeof push), grid, label);
  }
  /// `total` workgroups laid out within the device's per-dimension limits:
  /// shaders recover the linear index with linear_group_id() (shaders/lib/grid.glsl).
  Grid fold(uint64_t total) const;

  /// Records a copy of host data into a tensor (≤ 64 KiB per command), with
  /// the barriers around it: the data travels in the command buffer itself.
  void update(const Tensor& t, const void* data, size_t bytes);
  /// A device tensor for intermediate results of one op (flash attention's
  /// split partials): it lives as long as this recording (until reset() or
  /// destruction), so the command buffer may be submitted again.
  Tensor& scratch(std::vector<int64_t> shape);
  /// Where the host writes `t`'s contents before each submission of this
  /// recording: t's own memory where the host maps tensors (UMA devices,
  /// lavapipe); else a host-visible buffer kept with the recording, copied
  /// into t at this point of the command buffer, so a pass's inputs take no
  /// submission of their own on a discrete GPU. Call it before the dispatches
  /// that read t.
  uint8_t* host_input(const Tensor& t);
  /// Where the host reads `t` after each submission: t's own memory where the
  /// host maps tensors; else a host-visible buffer filled by a copy recorded at
  /// this point. Call it after the dispatches that write t.
  const uint8_t* host_output(const Tensor& t);
  /// Ends recording (adds the final device→host barrier). Called by submit.
  /// More than one command buffer when max_dispatches_per_submit split the
  /// recording: submit them in order, one submission each.
  std::vector<VkCommandBuffer> finish();
  /// Reads the timestamps after the submission finished.
  void collect_timings();
  void reset();

  VkCommandBuffer cb = VK_NULL_HANDLE;
  bool recording = false;
  bool ended = false;
  bool timestamps = false;
  bool external = false;  ///< cb is the host's: never begun, ended, freed or submitted here
  std::string scope;  ///< prefix of timing labels
  size_t n_dispatches = 0, n_barriers = 0;
  std::vector<DispatchTiming> timings;

 private:
  struct Range {
    VkBuffer buffer;
    VkDeviceSize begin, end;
  };
  static bool overlaps(const std::vector<Range>& set, const Range& r);
  void begin();
  /// Ends the current command buffer and continues in a new one.
  void next_piece();
  VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);
  void dispatch_bytes(const Pipeline& p, const std::vector<Use>& uses, const void* push, uint32_t push_size,
                      Grid grid, const std::string& label);

  std::vector<VkCommandBuffer> pieces_;  ///< all allocated; [0, piece_] used
  size_t piece_ = 0, piece_dispatches_ = 0;

  std::vector<Range> written_, read_;
  std::deque<Tensor> scratch_;  ///< scratch(): a deque, so references stay valid
  std::vector<std::shared_ptr<MemoryPool::HostBuffer>> host_buffers_;  ///< host_input(), host_output()
  /// A host buffer of `bytes` kept with the recording.
  /// `readback`: the host reads it (MemoryPool::host_buffer()).
  MemoryPool::HostBuffer& new_host_buffer(size_t bytes, const std::string& what, bool readback = false);
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorPool> pools_;
  size_t pool_index_ = 0;
  std::vector<VkQueryPool> query_pools_;
  std::vector<std::string> labels_;
  /// Views of the uniform texel buffers bound so far: they live as long as the
  /// descriptor sets that name them (until reset or destruction).
  std::vector<VkBufferView> views_;
  VkBufferView texel_view(const Tensor& t, uint32_t width, VkBuffer buffer, VkDeviceSize offset,
                          VkDeviceSize range, const std::string& label);
};

}  // namespace vkf
