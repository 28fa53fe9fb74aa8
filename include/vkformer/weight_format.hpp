// How weights are stored on the device: WeightFormat and its table.
#pragma once

#include <cstdint>

#include "vkformer/tensor.hpp"

namespace vkf {

/// How weights (a linear layer's matrix, a norm's scales, an embedding table)
/// and the K/V they make are stored on the device. Arithmetic is fp32 whatever
/// the format. Only the plain formats exist so far; a block-quantized one
/// (GGUF's Q8_0, Q4_K...) will be one more value here and one more row of
/// weight_format_info(), with its shaders built by the WEIGHTS axis of
/// vkf_add_op (cmake/ops.cmake).
enum class WeightFormat { F32, F16 };

/// What a WeightFormat is. A plain format is a block of one value.
struct WeightFormatInfo {
  const char* name;       ///< "f32", "f16": shader suffixes, shape classes, --precision
  uint32_t block_values;  ///< values per block: 1 for a plain format
  uint32_t block_bytes;   ///< bytes per block, its scales included
  bool scaled;            ///< each block carries a scale besides its values
  DType dtype;            ///< a plain format's tensor element type
};

/// The row of the format table describing `f`.
const WeightFormatInfo& weight_format_info(WeightFormat f);
/// "f32" or "f16".
inline const char* weight_format_name(WeightFormat f) { return weight_format_info(f).name; }
/// The format of weights stored with element type `t`.
/// @throws vkf::Error for I32, which no weight is stored as.
WeightFormat weight_format_of(DType t);
/// Bytes that `values` weights of a row take (whole blocks).
uint64_t weight_bytes(WeightFormat f, uint64_t values);

}  // namespace vkf
