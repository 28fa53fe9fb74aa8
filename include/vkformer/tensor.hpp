// Device tensors: a typed, shaped region of a sub-allocated device buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkformer/error.hpp"

namespace vkf {

/// Element types a tensor can be stored in. Arithmetic is always fp32.
/// Q8_0 ... Q6_K are GGUF's block-quantized formats, byte for byte as ggml
/// lays them out (vkformer/weight_format.hpp): a tensor of such a type counts
/// values in numel(), stores them in whole blocks, and its innermost dim is a
/// multiple of the block (dtype_block()).
enum class DType { F32, F16, I32, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K };

/// Bytes per element of a plain type (F32, F16, I32).
/// @throws vkf::Error for a block type, which has no element size (dtype_bytes()).
size_t dtype_size(DType t);
/// "f32", "f16", "i32", "q8_0", "q4_0", "q4_1", "q4_k" or "q6_k".
const char* dtype_name(DType t);
/// Values per block: 1 for a plain type, 32 (Q8_0, Q4_0, Q4_1) or 256 (Q4_K, Q6_K).
uint32_t dtype_block(DType t);
/// Bytes per block: dtype_size() for a plain type, 34, 18, 20, 144, 210 for the block types.
uint32_t dtype_block_bytes(DType t);
/// True for the block-quantized types.
inline bool is_block_dtype(DType t) { return dtype_block(t) > 1; }
/// Bytes that `values` values of type `t` take (whole blocks: `values` a multiple of the block).
uint64_t dtype_bytes(DType t, uint64_t values);

struct Allocation;  // internal: one sub-allocation of a device memory block

/// A tensor on the device. Cheap to copy: copies share the same memory, which
/// returns to its block when the last copy goes away.
class Tensor {
 public:
  Tensor() = default;

  /// Shape, outermost first.
  const std::vector<int64_t>& shape() const { return shape_; }
  /// Element type.
  DType dtype() const { return dtype_; }
  /// Number of elements.
  int64_t numel() const;
  /// Size in bytes (whole blocks for a block type).
  uint64_t bytes() const { return dtype_bytes(dtype_, uint64_t(numel())); }
  /// Size of dimension i; negative i counts from the end.
  int64_t dim(int i) const;
  /// True for a default-constructed tensor.
  bool empty() const { return !alloc_; }
  /// "[2, 3, 4] f32", for messages.
  std::string describe() const;
  /// The same memory seen with another shape of the same number of elements.
  /// @throws vkf::Error when the element counts differ.
  Tensor reshaped(std::vector<int64_t> shape) const;

  /// Internal: the allocation behind this tensor.
  const std::shared_ptr<Allocation>& allocation() const { return alloc_; }
  /// Internal: used by Context.
  Tensor(std::shared_ptr<Allocation> a, std::vector<int64_t> shape, DType dt)
      : alloc_(std::move(a)), shape_(std::move(shape)), dtype_(dt) {}

 private:
  std::shared_ptr<Allocation> alloc_;
  std::vector<int64_t> shape_;
  DType dtype_ = DType::F32;
};

/// IEEE half <-> float on the host, round to nearest even.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
/// Rounds each value to the nearest fp16 and back: what an fp16 tensor holds.
std::vector<float> round_to_half(const std::vector<float>& v);

}  // namespace vkf
