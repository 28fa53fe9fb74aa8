// Device memory: a few large blocks, each with one VkBuffer over it, handed out
// as aligned sub-allocations. Tensors hold a shared_ptr<Allocation>.
#pragma once

#include <vulkan/vulkan.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vkformer/context.hpp"

namespace vkf {

class MemoryPool;

/// One tensor's bytes: a range of a block's buffer.
struct Allocation {
  std::shared_ptr<MemoryPool> pool;
  size_t block = 0;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;       ///< bytes requested
  VkDeviceSize reserved = 0;   ///< bytes taken from the block (aligned)
  uint8_t* mapped = nullptr;   ///< host pointer when the block is mapped directly
  const void* external_owner = nullptr;  ///< the Context::Impl of a wrapped host buffer
  VkBufferUsageFlags usage = 0;          ///< of a wrapped host buffer
  ~Allocation();
};

/// What device memory vkformer holds and what it may still take.
struct MemoryStatus {
  uint64_t held = 0;            ///< device-local blocks vkformer allocated
  uint64_t free_in_blocks = 0;  ///< unused bytes inside them
  uint64_t heap = 0;            ///< size of the device-local heap
  uint64_t budget_left = 0;     ///< VK_EXT_memory_budget: heapBudget - heapUsage (valid if has_budget)
  bool has_budget = false;
  uint64_t limit = 0;           ///< ContextOptions::memory_limit_bytes / VKFORMER_MEMORY_LIMIT; 0: none
  /// Bytes new tensors can still get: free space in the blocks plus what the
  /// heap (or budget) and the limit leave for new blocks.
  uint64_t available() const;
  /// "1.0 MiB available: memory limit 1.0 MiB, 64.0 MiB held, ..." for messages.
  std::string describe() const;
};

/// "3.0 MiB", "512 B": sizes in messages.
std::string format_bytes(uint64_t bytes);

class MemoryPool : public std::enable_shared_from_this<MemoryPool> {
 public:
  /// `limit`: most bytes of device memory to allocate (0: no limit).
  /// `budget`: VK_EXT_memory_budget may be queried on `phys`.
  MemoryPool(VkPhysicalDevice phys, VkDevice device, const Capabilities& caps, bool force_staging,
             const VkAllocationCallbacks* alloc, uint64_t limit = 0, bool budget = false);
  ~MemoryPool();

  /// An aligned sub-allocation of at least `bytes`; `what` names it in errors.
  /// @throws VulkanError (VK_ERROR_OUT_OF_DEVICE_MEMORY) when the limit or the device refuses.
  std::shared_ptr<Allocation> allocate(VkDeviceSize bytes, const std::string& what);
  /// Bytes a tensor of `bytes` takes from a block.
  VkDeviceSize footprint(VkDeviceSize bytes) const;
  MemoryStatus status();
  /// A host-visible, coherent buffer of at least `bytes` for uploads, or with
  /// `readback` for downloads (host-cached memory where the device has it).
  struct Staging { VkBuffer buffer; uint8_t* mapped; };
  Staging staging(VkDeviceSize bytes, bool readback = false);
  /// A host-visible, coherent buffer of its own, mapped, for a recording's
  /// inputs and outputs on a device whose tensors the host cannot map
  /// (Recorder::Impl::host_input()). With the last reference it goes back to
  /// the pool, which keeps a few for the next recording: a decode step records
  /// anew each token and would otherwise allocate and map its ids, positions,
  /// mask and logits buffers every time.
  class HostBuffer;
  /// `readback`: the host reads it (host-cached memory where there is some).
  std::shared_ptr<HostBuffer> host_buffer(VkDeviceSize bytes, const std::string& what, bool readback = false);
  /// True when tensors can be read and written through a host pointer.
  bool direct_mapped() const { return direct_mapped_; }
  /// Frees every block; later Allocation destructors do nothing.
  void release();

  /// What the pool holds now (for leak checks such as `vkformer soak`).
  struct Usage {
    uint64_t bytes_in_use = 0;  ///< reserved by live allocations
    uint64_t block_bytes = 0;   ///< device memory held in blocks (staging included)
    uint32_t blocks = 0;        ///< live blocks, staging included
    uint64_t allocations = 0;   ///< live allocations
  };
  Usage usage();

  void free(const Allocation& a);

 private:
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    uint8_t* mapped = nullptr;
    std::map<VkDeviceSize, VkDeviceSize> free;  ///< offset -> size, coalesced
    uint32_t type = 0;                          ///< its memory type
  };

 public:
  class HostBuffer {
   public:
    HostBuffer(std::shared_ptr<MemoryPool> pool, Block b) : pool_(std::move(pool)), b_(std::move(b)) {}
    ~HostBuffer();
    HostBuffer(const HostBuffer&) = delete;
    HostBuffer& operator=(const HostBuffer&) = delete;
    VkBuffer buffer() const { return b_.buffer; }
    uint8_t* mapped() const { return b_.mapped; }

   private:
    std::shared_ptr<MemoryPool> pool_;
    Block b_;
  };

 private:
  Block make_block(VkDeviceSize size, uint32_t type, bool map, const std::string& what);
  MemoryStatus status_locked() const;
  void destroy_block(Block& b);
  /// A host buffer given back (mu_ held): kept for host_buffer(), or destroyed.
  void keep_host_block(Block b);
  uint32_t find_type(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const;

  VkPhysicalDevice phys_;
  VkDevice device_;
  const VkAllocationCallbacks* alloc_;
  VkPhysicalDeviceMemoryProperties props_{};
  VkDeviceSize alignment_;
  VkDeviceSize block_size_;
  uint64_t heap_bytes_;
  uint64_t limit_ = 0;
  bool budget_ = false;
  uint64_t held_ = 0;  ///< bytes of device blocks
  uint32_t device_type_ = 0;
  uint32_t staging_type_ = 0;
  /// What the host reads back through: host-cached and coherent where the device
  /// has such memory (a discrete GPU's plain host-visible memory is
  /// write-combined: quick for the host to write, slow to read), else staging_type_.
  uint32_t readback_type_ = 0;
  bool direct_mapped_ = false;
  std::vector<Block> blocks_;
  Block staging_{}, readback_staging_{};
  /// Host buffers given back, newest last, for host_buffer() to hand out again:
  /// at most kKeptHostBlocks blocks and kKeptHostBytes bytes.
  std::vector<Block> kept_host_;
  static constexpr size_t kKeptHostBlocks = 16;
  static constexpr VkDeviceSize kKeptHostBytes = VkDeviceSize(64) << 20;
  uint64_t bytes_in_use_ = 0, live_allocations_ = 0;
  std::mutex mu_;
};

}  // namespace vkf
