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
enum class DType { F32, F16, I32 };

/// Bytes per element.
size_t dtype_size(DType t);
/// "f32", "f16" or "i32".
const char* dtype_name(DType t);

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
  /// Size in bytes.
  uint64_t bytes() const { return uint64_t(numel()) * dtype_size(dtype_); }
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
