#include "vk/memory.hpp"

#include <algorithm>
#include <cstdio>

#include "vk/check.hpp"

namespace vkf {
namespace {
constexpr VkDeviceSize kBlockSize = 64ull << 20;
constexpr VkBufferUsageFlags kUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                      VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;
VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }
}  // namespace

std::string format_bytes(uint64_t b) {
  char buf[48];
  if (b < 1024) return std::to_string(b) + " B";
  const char* unit[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = double(b) / 1024;
  int i = 0;
  for (; v >= 1024 && i < 3; ++i) v /= 1024;
  std::snprintf(buf, sizeof buf, "%.1f %s", v, unit[i]);
  return buf;
}

uint64_t MemoryStatus::available() const {
  uint64_t room = heap > held ? heap - held : 0;
  if (has_budget) room = std::min(room, budget_left);
  if (limit) room = std::min(room, limit > held ? limit - held : 0);
  return free_in_blocks + room;
}

std::string MemoryStatus::describe() const {
  std::string s = format_bytes(available()) + " available (";
  if (limit) s += "memory limit " + format_bytes(limit) + " set by VKFORMER_MEMORY_LIMIT or ContextOptions, ";
  s += format_bytes(held) + " held by vkformer of which " + format_bytes(free_in_blocks) +
       " free, device-local heap " + format_bytes(heap);
  if (has_budget) s += ", VK_EXT_memory_budget leaves " + format_bytes(budget_left);
  return s + ")";
}

Allocation::~Allocation() {
  if (pool) pool->free(*this);
}

MemoryPool::MemoryPool(VkPhysicalDevice phys, VkDevice device, const Capabilities& caps,
                       bool force_staging, const VkAllocationCallbacks* alloc, uint64_t limit,
                       bool budget)
    : phys_(phys), device_(device), alloc_(alloc),
      alignment_(std::max<VkDeviceSize>({caps.min_storage_buffer_offset_alignment,
                                         caps.min_texel_buffer_offset_alignment, 64})),
      block_size_(kBlockSize), heap_bytes_(caps.device_local_bytes), limit_(limit), budget_(budget) {
  vkGetPhysicalDeviceMemoryProperties(phys_, &props_);
  // Probe which memory types a storage buffer may live in.
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = 4096;
  bi.usage = kUsage;
  VkBuffer probe;
  VKF_CHECK(vkCreateBuffer(device_, &bi, alloc_, &probe));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, probe, &req);
  vkDestroyBuffer(device_, probe, alloc_);

  device_type_ = find_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  staging_type_ = find_type(req.memoryTypeBits,
                            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                            VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  const VkMemoryPropertyFlags coherent =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  readback_type_ = staging_type_;
  for (uint32_t i = 0; i < props_.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags f = props_.memoryTypes[i].propertyFlags;
    if ((req.memoryTypeBits & (1u << i)) && (f & coherent) == coherent && (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) &&
        !(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) {
      readback_type_ = i;
      break;
    }
  }
  // UMA devices (integrated GPUs, lavapipe) let the host touch tensors directly.
  direct_mapped_ = !force_staging &&
                   (props_.memoryTypes[device_type_].propertyFlags & coherent) == coherent;
  heap_bytes_ = props_.memoryHeaps[props_.memoryTypes[device_type_].heapIndex].size;
}

VkDeviceSize MemoryPool::footprint(VkDeviceSize bytes) const {
  return align_up(std::max<VkDeviceSize>(bytes, 4), alignment_);
}

MemoryStatus MemoryPool::status() {
  std::lock_guard<std::mutex> lock(mu_);
  return status_locked();
}

MemoryStatus MemoryPool::status_locked() const {
  MemoryStatus s;
  s.held = held_;
  for (const auto& b : blocks_)
    for (const auto& [off, size] : b.free) s.free_in_blocks += size;
  s.heap = heap_bytes_;
  s.limit = limit_;
  if (budget_) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT bp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    p2.pNext = &bp;
    vkGetPhysicalDeviceMemoryProperties2(phys_, &p2);
    const uint32_t h = props_.memoryTypes[device_type_].heapIndex;
    s.has_budget = bp.heapBudget[h] > 0;
    s.budget_left = bp.heapBudget[h] > bp.heapUsage[h] ? bp.heapBudget[h] - bp.heapUsage[h] : 0;
  }
  return s;
}

MemoryPool::~MemoryPool() { release(); }

uint32_t MemoryPool::find_type(uint32_t bits, VkMemoryPropertyFlags want,
                               VkMemoryPropertyFlags avoid) const {
  int fallback = -1;
  for (uint32_t i = 0; i < props_.memoryTypeCount; ++i) {
    if (!(bits & (1u << i))) continue;
    auto f = props_.memoryTypes[i].propertyFlags;
    if ((f & want) != want) continue;
    if (!(f & avoid)) return i;
    if (fallback < 0) fallback = int(i);
  }
  if (fallback >= 0) return uint32_t(fallback);
  // Every device has a host-visible coherent type; a device-local one may be absent
  // on odd drivers, where any type a buffer accepts will do.
  for (uint32_t i = 0; i < props_.memoryTypeCount; ++i)
    if (bits & (1u << i)) return i;
  throw Error("no memory type can hold a storage buffer on this device");
}

MemoryPool::Block MemoryPool::make_block(VkDeviceSize size, uint32_t type, bool map,
                                         const std::string& what) {
  Block b;
  b.size = size;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size;
  bi.usage = kUsage;
  VKF_CHECK(vkCreateBuffer(device_, &bi, alloc_, &b.buffer));
  try {
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device_, b.buffer, &req);
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = type;
    VkResult r = VKF_CALL(vkAllocateMemory(device_, &ai, alloc_, &b.memory));
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
      b.memory = VK_NULL_HANDLE;
      throw VulkanError(r, "out of device memory: vkAllocateMemory returned " + std::string(vk_result_name(r)) +
                               " for a block of " + format_bytes(req.size) + " holding " + what + "; " +
                               status_locked().describe());
    }
    if (r != VK_SUCCESS) {
      b.memory = VK_NULL_HANDLE;
      vk_fail(r, "vkAllocateMemory");
    }
    VKF_CHECK(vkBindBufferMemory(device_, b.buffer, b.memory, 0));
    if (map)
      VKF_CHECK(vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, reinterpret_cast<void**>(&b.mapped)));
  } catch (...) {
    b.mapped = nullptr;
    destroy_block(b);
    throw;
  }
  b.free[0] = size;
  b.type = type;
  return b;
}

void MemoryPool::destroy_block(Block& b) {
  if (b.mapped) vkUnmapMemory(device_, b.memory);
  if (b.buffer) vkDestroyBuffer(device_, b.buffer, alloc_);
  if (b.memory) vkFreeMemory(device_, b.memory, alloc_);
  b = Block{};
}

std::shared_ptr<Allocation> MemoryPool::allocate(VkDeviceSize bytes, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!device_) throw Error("allocation after the context was destroyed");
  const VkDeviceSize need = footprint(bytes);
  auto take = [&](size_t bi) -> std::shared_ptr<Allocation> {
    Block& b = blocks_[bi];
    for (auto it = b.free.begin(); it != b.free.end(); ++it) {
      if (it->second < need) continue;
      VkDeviceSize off = it->first, left = it->second - need;
      b.free.erase(it);
      if (left) b.free[off + need] = left;
      auto a = std::make_shared<Allocation>();
      a->pool = shared_from_this();
      a->block = bi;
      a->buffer = b.buffer;
      a->offset = off;
      a->size = bytes;
      a->reserved = need;
      a->mapped = b.mapped ? b.mapped + off : nullptr;
      bytes_in_use_ += need;
      ++live_allocations_;
      return a;
    }
    return nullptr;
  };
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (blocks_[i].buffer)
      if (auto a = take(i)) return a;
  VkDeviceSize size = std::max(need, block_size_);
  if (limit_) {
    // Under a limit, blocks shrink to what is left so that small models fit small limits.
    const uint64_t left = limit_ > held_ ? limit_ - held_ : 0;
    if (need > left)
      throw VulkanError(VK_ERROR_OUT_OF_DEVICE_MEMORY,
                        "out of device memory: " + what + " needs " + format_bytes(need) + "; " +
                            status_locked().describe());
    size = std::max(need, std::min<VkDeviceSize>(block_size_, left));
  }
  Block nb = make_block(size, device_type_, direct_mapped_, what);
  held_ += nb.size;
  size_t slot = blocks_.size();
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (!blocks_[i].buffer) { slot = i; break; }
  if (slot == blocks_.size()) blocks_.push_back(std::move(nb)); else blocks_[slot] = std::move(nb);
  return take(slot);
}

void MemoryPool::free(const Allocation& a) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!device_ || a.block >= blocks_.size()) return;
  Block& b = blocks_[a.block];
  bytes_in_use_ -= a.reserved;
  --live_allocations_;
  auto it = b.free.emplace(a.offset, a.reserved).first;
  auto next = std::next(it);
  if (next != b.free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    b.free.erase(next);
  }
  if (it != b.free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      b.free.erase(it);
      it = prev;
    }
  }
  // Give a block back to the device once nothing lives in it (beyond the first).
  if (a.block > 0 && it->first == 0 && it->second == b.size) {
    held_ -= b.size;
    destroy_block(b);
  }
}

MemoryPool::Staging MemoryPool::staging(VkDeviceSize bytes, bool readback) {
  std::lock_guard<std::mutex> lock(mu_);
  // One block serves both ways where the types are the same.
  const bool own = readback && readback_type_ != staging_type_;
  Block& b = own ? readback_staging_ : staging_;
  if (b.size < bytes) {
    destroy_block(b);
    b = make_block(align_up(std::max<VkDeviceSize>(bytes, 1 << 20), 1 << 20), own ? readback_type_ : staging_type_,
                   true, own ? "a readback buffer" : "a staging buffer");
  }
  return {b.buffer, b.mapped};
}

MemoryPool::Usage MemoryPool::usage() {
  std::lock_guard<std::mutex> lock(mu_);
  Usage u;
  u.bytes_in_use = bytes_in_use_;
  u.allocations = live_allocations_;
  auto count = [&u](const Block& b) {
    if (b.buffer) u.block_bytes += b.size, ++u.blocks;
  };
  count(staging_);
  count(readback_staging_);
  for (const auto& b : kept_host_) count(b);
  for (const auto& b : blocks_) count(b);
  return u;
}

std::shared_ptr<MemoryPool::HostBuffer> MemoryPool::host_buffer(VkDeviceSize bytes, const std::string& what,
                                                                bool readback) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!device_) throw Error("allocation after the context was destroyed");
  const VkDeviceSize size = align_up(std::max<VkDeviceSize>(bytes, 4), 256);
  const uint32_t type = readback ? readback_type_ : staging_type_;
  // The smallest kept block of the type that fits, if it is not more than twice the size.
  size_t best = kept_host_.size();
  for (size_t i = 0; i < kept_host_.size(); ++i) {
    const Block& b = kept_host_[i];
    if (b.type == type && b.size >= size && b.size <= 2 * size &&
        (best == kept_host_.size() || b.size < kept_host_[best].size))
      best = i;
  }
  if (best < kept_host_.size()) {
    Block b = std::move(kept_host_[best]);
    kept_host_.erase(kept_host_.begin() + std::ptrdiff_t(best));
    return std::make_shared<HostBuffer>(shared_from_this(), std::move(b));
  }
  return std::make_shared<HostBuffer>(shared_from_this(), make_block(size, type, true, what));
}

MemoryPool::HostBuffer::~HostBuffer() {
  std::lock_guard<std::mutex> lock(pool_->mu_);
  if (!pool_->device_) return;  // after release() the device is gone, and its memory with it
  pool_->keep_host_block(std::move(b_));
}

void MemoryPool::keep_host_block(Block b) {
  if (b.size > kKeptHostBytes) {
    destroy_block(b);
    return;
  }
  kept_host_.push_back(std::move(b));
  VkDeviceSize total = 0;
  for (const Block& k : kept_host_) total += k.size;
  while (kept_host_.size() > kKeptHostBlocks || total > kKeptHostBytes) {  // the oldest go first
    total -= kept_host_.front().size;
    destroy_block(kept_host_.front());
    kept_host_.erase(kept_host_.begin());
  }
}

void MemoryPool::release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!device_) return;
  for (auto& b : blocks_) destroy_block(b);
  blocks_.clear();
  held_ = 0;
  destroy_block(staging_);
  destroy_block(readback_staging_);
  for (auto& b : kept_host_) destroy_block(b);
  kept_host_.clear();
  device_ = VK_NULL_HANDLE;
}

}  // namespace vkf
