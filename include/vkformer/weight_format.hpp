// How weights are stored on the device: WeightFormat and its table.
#pragma once

#include <cstdint>
#include <string>

#include "vkformer/tensor.hpp"

namespace vkf {

/// How weights (a linear layer's matrix, a norm's scales, an embedding table)
/// and the K/V they make are stored on the device. Arithmetic is fp32 whatever
/// the format. The block formats are GGUF's, byte for byte (so that GGUF
/// tensors upload as they are), each block a scale (and Q4_1/Q4_K a minimum)
/// and the quantized values:
///   Q8_0: 34 bytes per 32 values: fp16 d, int8 qs[32]; x = d·q.
///   Q4_0: 18 bytes per 32: fp16 d, uint8 qs[16]; value j < 16 is the low
///         nibble of qs[j], value j ≥ 16 the high nibble of qs[j − 16]; x = d·(q − 8).
///   Q4_1: 20 bytes per 32: fp16 d, fp16 m, qs[16] as Q4_0; x = d·q + m.
///   Q4_K: 144 bytes per 256: fp16 d, fp16 dmin, scales[12] (6-bit scale and
///         min of 8 sub-blocks of 32, ggml's get_scale_min_k4), qs[128]; x = d·sc·q − dmin·m.
///   Q6_K: 210 bytes per 256: ql[128], qh[64], int8 scales[16], fp16 d.
/// Only gemm and embedding read block formats (their shaders are built per
/// format by the WEIGHTS axis of vkf_add_op, cmake/ops.cmake); the host
/// reference is ref::dequantize / ref::quantize (vkformer/reference.hpp).
/// As a Precision (vkformer/model.hpp) Q8_0, Q4_0 and Q4_1 quantize the
/// linear layers' matrices at load; Q4_K and Q6_K only arrive from GGUF files.
enum class WeightFormat { F32, F16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K };

/// What a WeightFormat is. A plain format is a block of one value.
struct WeightFormatInfo {
  const char* name;       ///< "f32", "f16", "q8_0"...: shader suffixes, shape classes, --precision
  uint32_t block_values;  ///< values per block: 1 for a plain format
  uint32_t block_bytes;   ///< bytes per block, its scales included
  bool scaled;            ///< each block carries a scale besides its values
  DType dtype;            ///< a plain format's tensor element type
};

/// The row of the format table describing `f`.
const WeightFormatInfo& weight_format_info(WeightFormat f);
/// "f32", "f16", "q8_0", "q4_0", "q4_1", "q4_k" or "q6_k".
inline const char* weight_format_name(WeightFormat f) { return weight_format_info(f).name; }
/// The format of weights stored with element type `t`.
/// @throws vkf::Error for I32, which no weight is stored as.
WeightFormat weight_format_of(DType t);
/// Whether `f` stores blocks of several values (the GGUF formats).
inline bool is_block_format(WeightFormat f) { return weight_format_info(f).block_values > 1; }
/// The format named `name` ("f32", "q4_0"...): false when none is.
bool weight_format_from_name(const std::string& name, WeightFormat& out);
/// Bytes that `values` weights of a row take (whole blocks).
uint64_t weight_bytes(WeightFormat f, uint64_t values);

}  // namespace vkf
