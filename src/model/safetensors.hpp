// The safetensors format: u64 little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}} (+ optional __metadata__), then the data.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vkformer/tensor.hpp"

namespace vkf {

struct SafeTensor {
  std::string dtype;            ///< any of the format's: "F32", "F16", "BF16", "I64", "BOOL", ...
  std::vector<int64_t> shape;
  uint64_t offset = 0;          ///< into the data section
  uint64_t bytes = 0;
};

/// Whether to_f32 reads this dtype: F32, F16 and BF16 (the others are read
/// and checked at open, but a model cannot use them).
inline bool is_float_dtype(const std::string& dtype) {
  return dtype == "F32" || dtype == "F16" || dtype == "BF16";
}
/// The block format a tensor's dtype names in GGUF's spelling ("Q4_1"), or nullopt
/// ("F32", "U8", ...): a GGUF's tensors, and a `vkformer quantize` file's.
std::optional<DType> block_dtype_named(const std::string& dtype);
/// A block format's name in GGUF's spelling: "Q4_1" for DType::Q4_1.
std::string block_dtype_spelled(DType t);
/// `__metadata__` key prefix of a `vkformer quantize` file: "vkformer.format.NAME": "Q4_0"
/// says that tensor NAME, stored as U8 [..., bytes of a row] (safetensors has no
/// block dtypes), holds GGUF blocks of that type, [..., values of a row].
inline const std::string kBlockFormatKey = "vkformer.format.";
/// A bfloat16's value: its bits are the upper half of an fp32's (safetensors'
/// and GGUF's BF16 tensors).
inline float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
/// "[2, 3]", cut short past 80 characters (a file may give a million dimensions).
std::string shape_string(const std::vector<int64_t>& shape);
/// The message for a tensor of another dtype asked for as a weight.
std::string unsupported_dtype(const std::string& name, const std::string& dtype);

/// A safetensors file, mapped read-only and checked at open: the header is
/// checked against the file size before any tensor byte is touched, and the
/// data is read from the mapping tensor by tensor (never the whole file copied).
class SafeTensorsFile {
 public:
  /// @throws vkf::Error naming the file and what is wrong with it (truncated,
  /// header not JSON, offsets out of bounds or overlapping, unknown dtype,
  /// shape × dtype ≠ bytes, ...).
  explicit SafeTensorsFile(const std::string& path);
  /// The same checks on a file's bytes already in memory; `name` stands for the
  /// path in messages (the fuzz target's entry point).
  static SafeTensorsFile from_memory(const std::string& name, std::vector<uint8_t> bytes);
  /// The tensors of another container, already checked (a GGUF file's, under
  /// transformers' names: model/gguf_model.hpp), each at its offset into `data`
  /// (`size` bytes, kept alive by `storage`). Their dtypes may be block-quantized
  /// ("Q4_1"...), which bytes() reads as stored and to_f32 dequantizes.
  static SafeTensorsFile from_tensors(std::string path, std::map<std::string, SafeTensor> tensors,
                                      std::shared_ptr<const void> storage, const uint8_t* data, uint64_t size);

  const std::string& path() const { return path_; }
  const std::map<std::string, SafeTensor>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  /// The tensor converted to fp32. The mapped pages it was read from are then
  /// released, so that loading a model never holds the whole file in memory.
  /// @throws vkf::Error if the tensor is missing, its dtype is not F32, F16 or
  /// BF16, or there is no host memory for it.
  std::vector<float> to_f32(const std::string& name) const;
  const SafeTensor& get(const std::string& name) const;
  /// The tensor's bytes as stored (t.bytes of them). @throws vkf::Error if it is missing.
  const uint8_t* bytes(const std::string& name) const { return data_ + data_start_ + get(name).offset; }

 private:
  SafeTensorsFile() = default;
  /// Drops the mapped pages of [p, p + bytes) from memory (the file keeps them).
  void release(const uint8_t* p, uint64_t bytes) const;
  /// Checks the file (data_, size_) and fills tensors_ and data_start_.
  void parse();

  std::string path_;
  std::map<std::string, SafeTensor> tensors_;
  std::shared_ptr<const void> storage_;  ///< owns the mapping (or from_memory's bytes)
  const uint8_t* data_ = nullptr;        ///< the whole file
  uint64_t size_ = 0;
  bool mapped_ = false;
  uint64_t data_start_ = 0;              ///< where the data section begins in data_
};

}  // namespace vkf
