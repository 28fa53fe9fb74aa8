// Device memory: a few large blocks, each with one VkBuffer over it, handed out
// as aligned sub-allocations. Tensors hold a shared_ptr<Allocation>.
#pragma once

#include <vulkan/vulkan.h>

#include <map>
#include <memory>
#include <mutex>
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

class MemoryPool : public std::enable_shared_from_this<MemoryPool> {
 public:
  MemoryPool(VkPhysicalDevice phys, VkDevice device, const Capabilities& caps, bool force_staging,
             const VkAllocationCallbacks* alloc);
  ~MemoryPool();

  /// An aligned sub-allocation of at least `bytes`.
  std::shared_ptr<Allocation> allocate(VkDeviceSize bytes, const char* what);
  /// A host-visible, coherent buffer of at least `bytes` for uploads and downloads.
  struct Staging { VkBuffer buffer; uint8_t* mapped; };
  Staging staging(VkDeviceSize bytes);
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
  };
  Block make_block(VkDeviceSize size, uint32_t type, bool map, const char* what);
  void destroy_block(Block& b);
  uint32_t find_type(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const;

  VkPhysicalDevice phys_;
  VkDevice device_;
  const VkAllocationCallbacks* alloc_;
  VkPhysicalDeviceMemoryProperties props_{};
  VkDeviceSize alignment_;
  VkDeviceSize block_size_;
  uint64_t heap_bytes_;
  uint32_t device_type_ = 0;
  uint32_t staging_type_ = 0;
  bool direct_mapped_ = false;
  std::vector<Block> blocks_;
  Block staging_{};
  uint64_t bytes_in_use_ = 0, live_allocations_ = 0;
  std::mutex mu_;
};

}  // namespace vkf
