#include <cstring>

#include "vkformer/tensor.hpp"
#include "vkformer/weight_format.hpp"

namespace vkf {

namespace {

struct DTypeRow {
  const char* name;
  uint32_t block_values, block_bytes;
};

const DTypeRow& dtype_row(DType t) {
  static const DTypeRow rows[] = {{"f32", 1, 4},     {"f16", 1, 2},     {"i32", 1, 4},     {"q8_0", 32, 34},
                                  {"q4_0", 32, 18},  {"q4_1", 32, 20},  {"q4_k", 256, 144}, {"q6_k", 256, 210}};
  const size_t i = size_t(t);
  if (i >= sizeof(rows) / sizeof(rows[0])) throw Error("unknown dtype " + std::to_string(i));
  return rows[i];
}

}  // namespace

size_t dtype_size(DType t) {
  const DTypeRow& r = dtype_row(t);
  if (r.block_values != 1)
    throw Error(std::string("dtype ") + r.name + " is a block format of " + std::to_string(r.block_values) +
                " values in " + std::to_string(r.block_bytes) + " bytes: it has no element size");
  return r.block_bytes;
}

const char* dtype_name(DType t) { return dtype_row(t).name; }
uint32_t dtype_block(DType t) { return dtype_row(t).block_values; }
uint32_t dtype_block_bytes(DType t) { return dtype_row(t).block_bytes; }

uint64_t dtype_bytes(DType t, uint64_t values) {
  const DTypeRow& r = dtype_row(t);
  return (values + r.block_values - 1) / r.block_values * r.block_bytes;
}

const WeightFormatInfo& weight_format_info(WeightFormat f) {
  // name, block values, block bytes, scaled, dtype
  static const WeightFormatInfo rows[] = {
      {"f32", 1, 4, false, DType::F32},      {"f16", 1, 2, false, DType::F16},
      {"q8_0", 32, 34, true, DType::Q8_0},   {"q4_0", 32, 18, true, DType::Q4_0},
      {"q4_1", 32, 20, true, DType::Q4_1},   {"q4_k", 256, 144, true, DType::Q4_K},
      {"q6_k", 256, 210, true, DType::Q6_K}};
  const size_t i = size_t(f);
  if (i >= sizeof(rows) / sizeof(rows[0])) throw Error("unknown weight format " + std::to_string(i));
  return rows[i];
}

WeightFormat weight_format_of(DType t) {
  switch (t) {
    case DType::F32: return WeightFormat::F32;
    case DType::F16: return WeightFormat::F16;
    case DType::Q8_0: return WeightFormat::Q8_0;
    case DType::Q4_0: return WeightFormat::Q4_0;
    case DType::Q4_1: return WeightFormat::Q4_1;
    case DType::Q4_K: return WeightFormat::Q4_K;
    case DType::Q6_K: return WeightFormat::Q6_K;
    case DType::I32: break;
  }
  throw Error("weights are f32, f16 or a block format, not i32");
}

bool weight_format_from_name(const std::string& name, WeightFormat& out) {
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::F16, WeightFormat::Q8_0, WeightFormat::Q4_0,
                         WeightFormat::Q4_1, WeightFormat::Q4_K, WeightFormat::Q6_K})
    if (name == weight_format_name(f)) {
      out = f;
      return true;
    }
  return false;
}

uint64_t weight_bytes(WeightFormat f, uint64_t values) {
  const WeightFormatInfo& w = weight_format_info(f);
  return (values + w.block_values - 1) / w.block_values * w.block_bytes;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  Tensor t(alloc_, std::move(shape), dtype_);
  if (t.numel() != numel()) throw Error("reshaped: " + describe() + " cannot be seen as " + t.describe());
  return t;
}

int64_t Tensor::numel() const {
  if (shape_.empty()) return 0;
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

int64_t Tensor::dim(int i) const {
  int n = int(shape_.size());
  int j = i < 0 ? n + i : i;
  if (j < 0 || j >= n)
    throw Error("tensor " + describe() + " has no dimension " + std::to_string(i));
  return shape_[size_t(j)];
}

std::string Tensor::describe() const {
  std::string s = "[";
  for (size_t i = 0; i < shape_.size(); ++i) s += (i ? ", " : "") + std::to_string(shape_[i]);
  return s + "] " + dtype_name(dtype_);
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (man ? 0x200u : 0));  // inf / nan
  int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00u);                           // overflow -> inf
  if (e <= 0) {                                                           // subnormal or zero
    if (e < -10) return uint16_t(sign);
    man |= 0x800000u;
    uint32_t shift = uint32_t(14 - e);
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(e) << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // carries into exp correctly
  return uint16_t(half);
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (man == 0) {
      x = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do { man <<= 1; ++e; } while (!(man & 0x400u));
      x = sign | (uint32_t(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (man << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

std::vector<float> round_to_half(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = half_to_float(float_to_half(v[i]));
  return out;
}

}  // namespace vkf
