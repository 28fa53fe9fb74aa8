// GGUF's block formats (include/vkformer/weight_format.hpp has the layouts),
// decoded from an array of 32-bit words: no 8- or 16-bit storage needed, so
// the same shader runs on every device. Blocks of 34 or 18 bytes are not
// word-aligned: a field is read from the word(s) that cover it and shifted.
// Values are dequantized in registers; arithmetic stays fp32.
//
// The includer sets WQ (-D, lib/types.glsl) to the format and defines QBUF,
// the name of its `uint` array, before including this file. It gets
//   float q_at(uint i)    value i of the tensor (flat index: row·K + k)
//   vec4  q_at4(uint i)   values i .. i+3, i a multiple of 4
// The innermost dim is a multiple of the block, so value i lies in block
// i / QB and a vec4 at a multiple of 4 never straddles a block or a half of one.
#ifndef VKF_QUANT_GLSL
#define VKF_QUANT_GLSL

#define WQ_Q8_0 1
#define WQ_Q4_0 2
#define WQ_Q4_1 3
#define WQ_Q4_K 4
#define WQ_Q6_K 5

#if WQ == WQ_Q8_0
const uint QB = 32u, QBYTES = 34u;
#elif WQ == WQ_Q4_0
const uint QB = 32u, QBYTES = 18u;
#elif WQ == WQ_Q4_1
const uint QB = 32u, QBYTES = 20u;
#elif WQ == WQ_Q4_K
const uint QB = 256u, QBYTES = 144u;
#elif WQ == WQ_Q6_K
const uint QB = 256u, QBYTES = 210u;
#else
#error "lib/quant.glsl needs WQ set to a block format"
#endif

// The 4 bytes at byte b (any alignment), little-endian: the byte at b lowest.
// Reads the next word only when b is not word-aligned (the allocation is whole
// words, so the bytes b..b+3 of the tensor lie within it).
uint q_word(uint b) {
  const uint wi_ = b >> 2u, s_ = (b & 3u) * 8u;
  const uint lo_ = QBUF[wi_], hi_ = QBUF[wi_ + uint(s_ != 0u)];
  return s_ == 0u ? lo_ : (lo_ >> s_) | (hi_ << (32u - s_));
}
// The byte at b.
uint q_byte(uint b) { return (QBUF[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu; }
// The fp16 at b (b even: every block starts at an even byte, fields at even offsets).
float q_half(uint b) { return unpackHalf2x16(QBUF[b >> 2u] >> ((b & 2u) * 8u)).x; }
// (Locals end in _ so that none hides the includer's buffer, QBUF.)
// Byte lanes of a word, as unsigned or as signed (int8) values.
uvec4 q_bytes(uint v_) { return (uvec4(v_) >> uvec4(0u, 8u, 16u, 24u)) & 0xffu; }
vec4 q_sbytes(uint v_) { return vec4((ivec4(int(v_)) << ivec4(24, 16, 8, 0)) >> 24); }

#if WQ == WQ_Q4_K
// Sub-block s's 6-bit scale (x) and min (y): ggml's get_scale_min_k4 on the
// 12 bytes at `sb`.
uvec2 q4k_scale_min(uint sb, uint s) {
  if (s < 4u) return uvec2(q_byte(sb + s) & 63u, q_byte(sb + s + 4u) & 63u);
  const uint a = q_byte(sb + s + 4u);
  return uvec2((a & 0xfu) | ((q_byte(sb + s - 4u) >> 6u) << 4u), (a >> 4u) | ((q_byte(sb + s) >> 6u) << 4u));
}
#endif

// Values j .. j+3 (j % 4 == 0) of the block at byte `base`.
vec4 q_block4(uint base, uint j) {
#if WQ == WQ_Q8_0
  return q_sbytes(q_word(base + 2u + j)) * q_half(base);
#elif WQ == WQ_Q4_0
  const uvec4 q = (q_bytes(q_word(base + 2u + (j & 15u))) >> (j & 16u) / 4u) & 0xfu;
  return (vec4(q) - 8.0) * q_half(base);
#elif WQ == WQ_Q4_1
  const uvec4 q = (q_bytes(q_word(base + 4u + (j & 15u))) >> (j & 16u) / 4u) & 0xfu;
  return q_half(base) * vec4(q) + q_half(base + 2u);
#elif WQ == WQ_Q4_K
  // Chunk c of 64: the low nibbles of qs[32c ..] (sub-block 2c), then the high ones (2c + 1).
  const uint c = j / 64u, hi = (j / 32u) & 1u, l = j & 31u;
  const uvec2 sm = q4k_scale_min(base + 4u, 2u * c + hi);
  const uvec4 q = (q_bytes(q_word(base + 16u + 32u * c + l)) >> (4u * hi)) & 0xfu;
  return (q_half(base) * float(sm.x)) * vec4(q) - q_half(base + 2u) * float(sm.y);
#elif WQ == WQ_Q6_K
  // Half h of 128 values: ql[64h ..], qh[32h ..], scales[8h ..]; quarter t of 32 within it.
  const uint h = j / 128u, t = (j / 32u) & 3u, l = j & 31u;
  const uvec4 lo = (q_bytes(q_word(base + 64u * h + 32u * (t & 1u) + l)) >> (4u * (t >> 1u))) & 0xfu;
  const uvec4 up = (q_bytes(q_word(base + 128u + 32u * h + l)) >> (2u * t)) & 3u;
  const float sc = float(bitfieldExtract(int(q_byte(base + 192u + 8u * h + l / 16u + 2u * t)), 0, 8));
  return (q_half(base + 208u) * sc) * (vec4(lo | (up << 4u)) - 32.0);
#endif
}

vec4 q_at4(uint i) { return q_block4((i / QB) * QBYTES, i % QB); }
float q_at(uint i) { return q_at4(i & ~3u)[i & 3u]; }

#endif
