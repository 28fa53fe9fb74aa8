// GGUF's block formats on the host (vkformer/weight_format.hpp has the
// layouts): dequantize as ggml's dequantize_row_* does, in fp32 and in the
// same order (so the values are bit for bit ggml's and the gguf package's),
// and quantize Q8_0, Q4_0 and Q4_1 as ggml's reference quantizers
// (quantize_row_*_ref) do, so that a checkpoint quantized here equals one
// quantized by llama.cpp or gguf-py. tests/quant_check.py checks both against
// gguf.quants.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "vkformer/reference.hpp"

namespace vkf::ref {
namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}

void put_half(uint8_t* p, float f) {
  const uint16_t h = float_to_half(f);
  std::memcpy(p, &h, 2);
}

/// Q4_K's 6-bit scale and min of sub-block j (0..7) from its 12 packed bytes:
/// ggml's get_scale_min_k4. Sub-blocks 0-3 keep theirs in the low 6 bits of
/// bytes j and j+4; 4-7 in the nibbles of bytes j+4 (8..11) and the top 2 bits of bytes j-4 and j.
void scale_min_k4(uint32_t j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = uint8_t((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void dequantize_block(WeightFormat f, const uint8_t* b, float* y) {
  switch (f) {
    case WeightFormat::Q8_0: {
      const float d = half_at(b);
      for (int j = 0; j < 32; ++j) y[j] = float(int8_t(b[2 + j])) * d;
      return;
    }
    case WeightFormat::Q4_0: {
      const float d = half_at(b);
      for (int j = 0; j < 16; ++j) {
        y[j] = d * float(int(b[2 + j] & 0xF) - 8);
        y[j + 16] = d * float(int(b[2 + j] >> 4) - 8);
      }
      return;
    }
    case WeightFormat::Q4_1: {
      const float d = half_at(b), m = half_at(b + 2);
      for (int j = 0; j < 16; ++j) {
        y[j] = d * float(b[4 + j] & 0xF) + m;
        y[j + 16] = d * float(b[4 + j] >> 4) + m;
      }
      return;
    }
    case WeightFormat::Q4_K: {
      const float d = half_at(b), dmin = half_at(b + 2);
      const uint8_t* scales = b + 4;
      const uint8_t* q = b + 16;
      for (uint32_t c = 0; c < 4; ++c) {  // 64 values: low nibbles (sub-block 2c), high nibbles (2c + 1)
        uint8_t sc, m;
        scale_min_k4(2 * c, scales, sc, m);
        const float d1 = d * float(sc), m1 = dmin * float(m);
        scale_min_k4(2 * c + 1, scales, sc, m);
        const float d2 = d * float(sc), m2 = dmin * float(m);
        for (int l = 0; l < 32; ++l) y[64 * c + l] = d1 * float(q[32 * c + l] & 0xF) - m1;
        for (int l = 0; l < 32; ++l) y[64 * c + 32 + l] = d2 * float(q[32 * c + l] >> 4) - m2;
      }
      return;
    }
    case WeightFormat::Q6_K: {
      const uint8_t* ql = b;
      const uint8_t* qh = b + 128;
      const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
      const float d = half_at(b + 208);
      for (int h = 0; h < 2; ++h) {  // 128 values: ql[64], qh[32], scales[8] each
        for (int l = 0; l < 32; ++l) {
          const int is = l / 16;
          const int q1 = int((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
          const int q2 = int((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
          const int q3 = int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          const int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
          y[l] = d * float(sc[is]) * float(q1);
          y[l + 32] = d * float(sc[is + 2]) * float(q2);
          y[l + 64] = d * float(sc[is + 4]) * float(q3);
          y[l + 96] = d * float(sc[is + 6]) * float(q4);
        }
        y += 128, ql += 64, qh += 32, sc += 8;
      }
      return;
    }
    case WeightFormat::F32:
    case WeightFormat::F16: break;
  }
}

void quantize_block(WeightFormat f, const float* x, uint8_t* b) {
  switch (f) {
    case WeightFormat::Q8_0: {
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      put_half(b, d);
      for (int j = 0; j < 32; ++j) b[2 + j] = uint8_t(int8_t(std::roundf(x[j] * id)));
      return;
    }
    case WeightFormat::Q4_0: {
      float amax = 0.0f, max = 0.0f;  // the value of largest magnitude, its sign kept
      for (int j = 0; j < 32; ++j)
        if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
      const float d = max / -8.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      put_half(b, d);
      for (int j = 0; j < 16; ++j) {
        const int q0 = std::min(15, int(int8_t(x[j] * id + 8.5f)));
        const int q1 = std::min(15, int(int8_t(x[j + 16] * id + 8.5f)));
        b[2 + j] = uint8_t(q0 | (q1 << 4));
      }
      return;
    }
    case WeightFormat::Q4_1: {
      float min = x[0], max = x[0];
      for (int j = 1; j < 32; ++j) min = std::min(min, x[j]), max = std::max(max, x[j]);
      const float d = (max - min) / 15.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      put_half(b, d);
      put_half(b + 2, min);
      for (int j = 0; j < 16; ++j) {
        const int q0 = std::min(15, int(int8_t((x[j] - min) * id + 0.5f)));
        const int q1 = std::min(15, int(int8_t((x[j + 16] - min) * id + 0.5f)));
        b[4 + j] = uint8_t(q0 | (q1 << 4));
      }
      return;
    }
    default: break;
  }
}

}  // namespace

std::vector<float> dequantize(WeightFormat format, const uint8_t* bytes, size_t values) {
  const WeightFormatInfo& fi = weight_format_info(format);
  std::vector<float> out(values);
  if (format == WeightFormat::F32) {
    std::memcpy(out.data(), bytes, values * 4);
    return out;
  }
  if (format == WeightFormat::F16) {
    for (size_t i = 0; i < values; ++i) out[i] = half_at(bytes + 2 * i);
    return out;
  }
  if (values % fi.block_values)
    throw Error(std::string("dequantize: ") + std::to_string(values) + " values are not whole " + fi.name +
                " blocks of " + std::to_string(fi.block_values));
  for (size_t b = 0; b < values / fi.block_values; ++b)
    dequantize_block(format, bytes + b * fi.block_bytes, out.data() + b * fi.block_values);
  return out;
}

std::vector<uint8_t> quantize(WeightFormat format, const float* values, size_t n) {
  const WeightFormatInfo& fi = weight_format_info(format);
  if (format != WeightFormat::Q8_0 && format != WeightFormat::Q4_0 && format != WeightFormat::Q4_1)
    throw Error(std::string("quantize: no quantizer for ") + fi.name + " (q8_0, q4_0 and q4_1 have one)");
  if (n % fi.block_values)
    throw Error("quantize: " + std::to_string(n) + " values are not whole " + fi.name + " blocks of " +
                std::to_string(fi.block_values));
  std::vector<uint8_t> out(n / fi.block_values * fi.block_bytes);
  for (size_t b = 0; b < n / fi.block_values; ++b)
    quantize_block(format, values + b * fi.block_values, out.data() + b * fi.block_bytes);
  return out;
}

}  // namespace vkf::ref
