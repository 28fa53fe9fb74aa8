#include <algorithm>

#include "vk/check.hpp"
#include "vk/recorder_impl.hpp"

namespace vkf {
namespace {
constexpr uint32_t kSetsPerPool = 256;
constexpr uint32_t kQueriesPerPool = 256;

void global_barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
                    VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cb, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}
}  // namespace

Recorder::Recorder(Context& ctx, bool timestamps) : impl_(std::make_unique<Impl>(ctx, timestamps)) {}
Recorder::Recorder(Context& ctx, VkCommandBuffer host_command_buffer)
    : impl_(std::make_unique<Impl>(ctx, false)) {
  if (!host_command_buffer) throw Error("Recorder: the host command buffer is VK_NULL_HANDLE");
  impl_->cb = host_command_buffer;
  impl_->external = true;
}
void Recorder::end() {
  if (!impl_->external) throw Error("Recorder::end() is for host command buffers; Context::submit ends its own");
  impl_->finish();
}
Recorder::~Recorder() = default;
void Recorder::reset() { impl_->reset(); }
size_t Recorder::dispatches() const { return impl_->n_dispatches; }
size_t Recorder::barriers() const { return impl_->n_barriers; }
std::vector<DispatchTiming> Recorder::timings() const { return impl_->timings; }
void Recorder::set_scope(const std::string& scope) { impl_->scope = scope; }

Recorder::Impl::Impl(Context& c, bool ts) : context(c), ctx(internals(c)), timestamps(ts) {
  if (timestamps && !ctx.caps.timestamps)
    throw Error("timestamps were requested but the device's compute queue has no timestamp support");
}

Recorder::Impl::~Impl() {
  if (pool_) vkDestroyCommandPool(ctx.device, pool_, ctx.alloc);  // frees cb with it
  for (auto p : pools_) vkDestroyDescriptorPool(ctx.device, p, ctx.alloc);
  for (auto q : query_pools_) vkDestroyQueryPool(ctx.device, q, ctx.alloc);
  for (auto v : views_) vkDestroyBufferView(ctx.device, v, ctx.alloc);
}

Tensor& Recorder::Impl::scratch(std::vector<int64_t> shape) {
  scratch_.push_back(context.tensor(std::move(shape)));
  return scratch_.back();
}

MemoryPool::HostBuffer& Recorder::Impl::new_host_buffer(size_t bytes, const std::string& what, bool readback) {
  host_buffers_.push_back(ctx.memory->host_buffer(bytes, what, readback));
  return *host_buffers_.back();
}

uint8_t* Recorder::Impl::host_input(const Tensor& t) {
  if (ended) throw Error("this recorder was submitted; call reset() before recording again");
  const Allocation& a = *t.allocation();
  if (a.mapped) return a.mapped;
  if (!recording) begin();
  MemoryPool::HostBuffer& h = new_host_buffer(a.size, "the input " + t.describe());
  // Earlier dispatches (and earlier submissions of this recording) may still read t.
  global_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
  const VkBufferCopy c{0, a.offset, a.size};
  vkCmdCopyBuffer(cb, h.buffer(), a.buffer, 1, &c);
  global_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  written_.clear();
  read_.clear();
  n_barriers += 2;
  return h.mapped();
}

const uint8_t* Recorder::Impl::host_output(const Tensor& t) {
  if (ended) throw Error("this recorder was submitted; call reset() before recording again");
  const Allocation& a = *t.allocation();
  if (a.mapped) return a.mapped;
  if (!recording) begin();
  MemoryPool::HostBuffer& h = new_host_buffer(a.size, "the output " + t.describe(), true);
  global_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_TRANSFER_READ_BIT);
  const VkBufferCopy c{a.offset, 0, a.size};
  vkCmdCopyBuffer(cb, a.buffer, h.buffer(), 1, &c);
  // The host reads it after the fence; a later dispatch must not overwrite t before the copy.
  global_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_HOST_READ_BIT);
  n_barriers += 2;
  return h.mapped();
}

const Pipeline& Recorder::Impl::pipeline(const std::string& shader, const std::vector<uint32_t>& spec,
                                         uint32_t subgroup_size) {
  ctx.alive("pipeline " + shader);
  try {
    return ctx.pipelines->get(shader, spec, subgroup_size);
  } catch (const VulkanError& e) {
    std::string what = "creating the pipeline " + shader + " (specialization";
    for (uint32_t v : spec) what += " " + std::to_string(v);
    if (subgroup_size) what += ", subgroup size " + std::to_string(subgroup_size);
    rethrow_with_context(e, what + ")");
  }
}

void Recorder::Impl::begin() {
  ctx.alive("recording");
  if (external) {
    // The host's earlier commands, any stage, may have written what we read.
    global_barrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    recording = true;
    return;
  }
  if (!pool_) {
    // A pool per recorder: recorders on different threads never share one.
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = ctx.queue_family;
    VKF_CHECK(vkCreateCommandPool(ctx.device, &pci, ctx.alloc, &pool_));
  }
  if (pieces_.empty()) {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VKF_CHECK(vkAllocateCommandBuffers(ctx.device, &ai, &cb));
    pieces_.push_back(cb);
  }
  piece_ = piece_dispatches_ = 0;
  cb = pieces_[0];
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  VKF_CHECK(vkBeginCommandBuffer(cb, &bi));
  // Earlier submissions (uploads, other recorders) wrote what this one reads.
  global_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                 VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  recording = true;
}

void Recorder::Impl::next_piece() {
  VKF_CHECK(vkEndCommandBuffer(cb));
  if (++piece_ == pieces_.size()) {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer next;
    VKF_CHECK(vkAllocateCommandBuffers(ctx.device, &ai, &next));
    pieces_.push_back(next);
  }
  cb = pieces_[piece_];
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  VKF_CHECK(vkBeginCommandBuffer(cb, &bi));
  // A barrier's first scope reaches back over earlier submissions to the same
  // queue, so this one orders the previous piece's dispatches (and, through
  // it, whatever the first piece waited for) before the next piece's: the
  // data-flow tracking starts afresh.
  global_barrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  written_.clear();
  read_.clear();
  piece_dispatches_ = 0;
}

bool Recorder::Impl::overlaps(const std::vector<Range>& set, const Range& r) {
  for (const auto& s : set)
    if (s.buffer == r.buffer && s.begin < r.end && r.begin < s.end) return true;
  return false;
}

VkDescriptorSet Recorder::Impl::allocate_set(VkDescriptorSetLayout layout) {
  for (;; ++pool_index_) {
    if (pool_index_ == pools_.size()) {
      const VkDescriptorPoolSize sizes[] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool * 8},
                                            {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, kSetsPerPool * 2}};
      VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      ci.maxSets = kSetsPerPool;
      ci.poolSizeCount = 2;
      ci.pPoolSizes = sizes;
      VkDescriptorPool p;
      VKF_CHECK(vkCreateDescriptorPool(ctx.device, &ci, ctx.alloc, &p));
      pools_.push_back(p);
    }
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pools_[pool_index_];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set;
    VkResult r = VKF_CALL(vkAllocateDescriptorSets(ctx.device, &ai, &set));
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL)
      vk_fail(r, "vkAllocateDescriptorSets");
  }
}

VkBufferView Recorder::Impl::texel_view(const Tensor& t, uint32_t width, VkBuffer buffer, VkDeviceSize offset,
                                        VkDeviceSize range, const std::string& label) {
  // Ops check texel_readable() (ops/op_util.hpp) before they pick a texel
  // variant; these are the same rules, so a failure here is a bug.
  const auto& caps = ctx.caps;
  const bool f16 = t.dtype() == DType::F16, words = is_block_dtype(t.dtype());  // words: R32_UINT
  if (words) width = 1;
  const VkDeviceSize texel = (f16 ? 2 : 4) * width;
  if ((t.dtype() != DType::F32 && !f16 && !words) || (width != 4 && width != 1) ||
      !(words ? caps.texel_u32 : f16 ? caps.texel_f16 : caps.texel_f32) || offset % texel ||
      range % texel || offset % caps.min_texel_buffer_offset_alignment ||
      range / texel > caps.max_texel_buffer_elements)
    throw Error("internal: " + label + " binds tensor " + t.describe() + " as a texel buffer at byte " +
                std::to_string(offset) + " (" + std::to_string(range) +
                " bytes), which the device's texel-buffer limits do not allow (profile " + caps.profile + ")");
  VkBufferViewCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
  ci.buffer = buffer;
  ci.format = words ? VK_FORMAT_R32_UINT
              : width == 1 ? (f16 ? VK_FORMAT_R16_SFLOAT : VK_FORMAT_R32_SFLOAT)
                         : (f16 ? VK_FORMAT_R16G16B16A16_SFLOAT : VK_FORMAT_R32G32B32A32_SFLOAT);
  ci.offset = offset;
  ci.range = range;
  VkBufferView v;
  VKF_CHECK(vkCreateBufferView(ctx.device, &ci, ctx.alloc, &v));
  views_.push_back(v);
  return v;
}

Grid Recorder::Impl::fold(uint64_t total) const {
  const auto& m = ctx.caps.max_workgroup_count;
  Grid g;
  g.x = uint32_t(std::min<uint64_t>(std::max<uint64_t>(total, 1), m[0]));
  uint64_t rest = (total + g.x - 1) / g.x;
  g.y = uint32_t(std::min<uint64_t>(std::max<uint64_t>(rest, 1), m[1]));
  uint64_t z = (rest + g.y - 1) / g.y;
  if (z > m[2])
    throw Error("a dispatch of " + std::to_string(total) +
                " workgroups exceeds the device's maxComputeWorkGroupCount in all three dimensions");
  g.z = uint32_t(std::max<uint64_t>(z, 1));
  return g;
}

void Recorder::Impl::dispatch_bytes(const Pipeline& p, const std::vector<Use>& uses, const void* push,
                                    uint32_t push_size, Grid grid, const std::string& label) {
  if (ended) throw Error("this recorder was submitted; call reset() before recording again");
  if (uses.size() != p.bindings)
    throw Error("internal: " + p.name + ": " + label + " binds " + std::to_string(uses.size()) +
                " tensors, the shader declares " + std::to_string(p.bindings));
  if (push_size != p.push_size)
    throw Error("internal: " + p.name + ": " + label + " pushes " + std::to_string(push_size) +
                " bytes of constants, the shader's block " + p.push_block + " has " + std::to_string(p.push_size));
  if (!recording) begin();
  if (!external && ctx.max_dispatches_per_submit && piece_dispatches_ >= ctx.max_dispatches_per_submit)
    next_piece();
  const auto& caps = ctx.caps;
  for (int i = 0; i < 3; ++i) {
    uint32_t v = i == 0 ? grid.x : i == 1 ? grid.y : grid.z;
    if (v == 0 || v > caps.max_workgroup_count[i])
      throw Error("internal: " + p.name + " grid dimension " + std::to_string(i) + " is " +
                  std::to_string(v) + ", the device allows 1.." +
                  std::to_string(caps.max_workgroup_count[i]));
  }

  std::vector<VkDescriptorBufferInfo> infos(uses.size());
  std::vector<VkBufferView> views(uses.size(), VK_NULL_HANDLE);
  std::vector<Range> ranges(uses.size());
  bool need_barrier = false;
  for (size_t i = 0; i < uses.size(); ++i) {
    const Tensor* t = uses[i].tensor;
    if (!t || t->empty()) throw Error("internal: " + p.name + " binding " + std::to_string(i) + " is empty");
    const Allocation& a = *t->allocation();
    if (a.external_owner ? a.external_owner != &ctx : a.pool != ctx.memory)
      throw Error(label + ": tensor " + t->describe() + " belongs to another context");
    // Descriptor limits are checked here, against the profile's clamped
    // values, so that no op can hand the driver a range it may not take.
    uint64_t b = uses[i].begin, e = uses[i].end ? uses[i].end : a.size;
    if (b >= e || e > a.size)
      throw Error("internal: " + label + " binds bytes [" + std::to_string(b) + ", " + std::to_string(e) +
                  ") of tensor " + t->describe() + " (" + std::to_string(a.size) + " bytes)");
    // A packed-fp16 shader reads (and copy_rows writes, by atomics on its own
    // half) whole 32-bit words: an odd number of halves needs the word's other
    // half, which the pool's slot (4-byte granular) holds.
    if (e % 4 && (e + 3) / 4 * 4 <= a.reserved) e = (e + 3) / 4 * 4;
    if (p.texel[i]) {
      if (uses[i].write) throw Error("internal: " + label + " writes through a texel buffer");
      views[i] = texel_view(*t, uses[i].texel_width, a.buffer, a.offset + b, e - b, label);
    } else if ((a.offset + b) % caps.min_storage_buffer_offset_alignment)
      throw Error("internal: " + label + " binds tensor " + t->describe() + " at byte " +
                  std::to_string(a.offset + b) + ", not a multiple of minStorageBufferOffsetAlignment (" +
                  std::to_string(caps.min_storage_buffer_offset_alignment) + ", profile " + caps.profile + ")");
    if (e - b > caps.max_storage_buffer_range)
      throw Error(label + ": tensor " + t->describe() + " needs a binding of " + std::to_string(e - b) +
                  " bytes, more than maxStorageBufferRange (" + std::to_string(caps.max_storage_buffer_range) +
                  " bytes, profile " + caps.profile + "); this op does not split tensors that large "
                  "(docs/device-profiles.md)");
    infos[i] = {a.buffer, a.offset + b, e - b};
    ranges[i] = {a.buffer, a.offset + b, a.offset + e};
    if (overlaps(written_, ranges[i]) || (uses[i].write && overlaps(read_, ranges[i])))
      need_barrier = true;
  }
  // With timestamps every dispatch is serialized, so each time is its own.
  if (need_barrier || (timestamps && n_dispatches > 0)) {
    global_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    written_.clear();
    read_.clear();
    ++n_barriers;
  }
  for (size_t i = 0; i < uses.size(); ++i) (uses[i].write ? written_ : read_).push_back(ranges[i]);

  VkDescriptorSet set = allocate_set(p.set_layout);
  std::vector<VkWriteDescriptorSet> writes(uses.size());
  for (size_t i = 0; i < uses.size(); ++i) {
    writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = uint32_t(i);
    writes[i].descriptorCount = 1;
    if (views[i]) {
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      writes[i].pTexelBufferView = &views[i];
    } else {
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
  }
  vkUpdateDescriptorSets(ctx.device, uint32_t(writes.size()), writes.data(), 0, nullptr);

  uint32_t q = 0;
  VkQueryPool qp = VK_NULL_HANDLE;
  if (timestamps) {
    size_t idx = labels_.size();
    if (idx * 2 % kQueriesPerPool == 0) {
      VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
      ci.queryCount = kQueriesPerPool;
      VkQueryPool pool;
      VKF_CHECK(vkCreateQueryPool(ctx.device, &ci, ctx.alloc, &pool));
      query_pools_.push_back(pool);
      vkCmdResetQueryPool(cb, pool, 0, kQueriesPerPool);
    }
    qp = query_pools_[idx * 2 / kQueriesPerPool];
    q = uint32_t(idx * 2 % kQueriesPerPool);
    labels_.push_back(scope.empty() ? label : scope + "/" + label);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, q);
  }
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
  if (push_size) vkCmdPushConstants(cb, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
  vkCmdDispatch(cb, grid.x, grid.y, grid.z);
  if (timestamps) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, q + 1);
  ++n_dispatches;
  ++piece_dispatches_;
}

std::vector<VkCommandBuffer> Recorder::Impl::finish() {
  if (ended) {  // resubmitting what was recorded
    if (external) return {cb};
    return std::vector<VkCommandBuffer>(pieces_.begin(), pieces_.begin() + piece_ + 1);
  }
  if (!recording) begin();      // nothing recorded: an empty command buffer
  if (external) {
    // Our writes become visible to whatever the host records next: vertex
    // input, shaders of any stage, transfers, or the host after its fence.
    global_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                   VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_READ_BIT);
    recording = false;
    ended = true;
    return {cb};
  }
  // Make results visible to the host (direct mapping) and to download copies.
  global_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                 VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                 VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
  VKF_CHECK(vkEndCommandBuffer(cb));
  recording = false;
  ended = true;
  return std::vector<VkCommandBuffer>(pieces_.begin(), pieces_.begin() + piece_ + 1);
}

void Recorder::Impl::collect_timings() {
  timings.clear();
  for (size_t i = 0; i < labels_.size(); ++i) {
    uint64_t ts[2];
    VkQueryPool qp = query_pools_[i * 2 / kQueriesPerPool];
    uint32_t q = uint32_t(i * 2 % kQueriesPerPool);
    VKF_CHECK(vkGetQueryPoolResults(ctx.device, qp, q, 2, sizeof(ts), ts, sizeof(uint64_t),
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    timings.push_back({labels_[i], double(ts[1] - ts[0]) * ctx.caps.timestamp_period_ns * 1e-6});
  }
}

void Recorder::Impl::update(const Tensor& t, const void* data, size_t bytes) {
  if (ended) throw Error("this recorder was submitted; call reset() before recording again");
  if (!recording) begin();
  const Allocation& a = *t.allocation();
  if (bytes != a.size || bytes % 4)
    throw Error("update: " + std::to_string(bytes) + " bytes for tensor " + t.describe());
  global_barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                 VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t off = 0; off < bytes; off += 65536)  // vkCmdUpdateBuffer's limit
    vkCmdUpdateBuffer(cb, a.buffer, a.offset + off, std::min<size_t>(65536, bytes - off), p + off);
  global_barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                 VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                 VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  written_.clear();
  read_.clear();
  n_barriers += 2;
}

void Recorder::Impl::reset() {
  if (external) throw Error("a recorder on the host's command buffer cannot be reset");
  for (VkCommandBuffer c : pieces_) VKF_CHECK(vkResetCommandBuffer(c, 0));
  piece_ = piece_dispatches_ = 0;
  for (auto p : pools_) VKF_CHECK(vkResetDescriptorPool(ctx.device, p, 0));
  pool_index_ = 0;
  for (auto q : query_pools_) vkDestroyQueryPool(ctx.device, q, ctx.alloc);
  query_pools_.clear();
  for (auto v : views_) vkDestroyBufferView(ctx.device, v, ctx.alloc);
  views_.clear();
  labels_.clear();
  scratch_.clear();
  host_buffers_.clear();
  written_.clear();
  read_.clear();
  timings.clear();
  recording = ended = false;
  n_dispatches = n_barriers = 0;
}

}  // namespace vkf
