// GGUF's block formats (include/vkformer/weight_format.hpp has the layouts),
// decoded from an array of 32-bit words: no 8- or 16-bit storage needed, so
// the same shader runs on every device. Blocks of 34 or 18 bytes are not
// word-aligned: a field is read from the word(s) that cover it and shifted.
// Values are dequantized in registers; arithmetic stays fp32.
//
// The includer sets WQ (-D, lib/types.glsl) to the format and defines QBUF,
// the name of its `uint` array, or QWORD(i), how word i is read (a texel
// fetch from a usamplerBuffer: on lavapipe a gather, where a storage load is
// a loop over the lanes), before including this file. It gets
//   float q_at(uint i)    value i of the tensor (flat index: row·K + k)
//   vec4  q_at4(uint i)   values i .. i+3, i a multiple of 4
//   q_unit32(base, s, q, ab)  sub-block s (32 values) of the block at byte
//                         `base`, its scales read once: q_unit32 below.
//   q_unit_lanes(base, s, q, ab)  Q_GROUP sub-blocks sharing their words,
//                         unshifted (gemm_vec.comp's; below q_unit32).
// The innermost dim is a multiple of the block, so value i lies in block
// i / QB and a vec4 at a multiple of 4 never straddles a block or a half of one.
#ifndef VKF_QUANT_GLSL
#define VKF_QUANT_GLSL

#define WQ_Q8_0 1
#define WQ_Q4_0 2
#define WQ_Q4_1 3
#define WQ_Q4_K 4
#define WQ_Q6_K 5

#ifndef QWORD
#define QWORD(i) QBUF[i]
#endif

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
  const uint lo_ = QWORD(wi_), hi_ = QWORD(wi_ + uint(s_ != 0u));
  return s_ == 0u ? lo_ : (lo_ >> s_) | (hi_ << (32u - s_));
}
// The byte at b.
uint q_byte(uint b) { return (QWORD(b >> 2u) >> ((b & 3u) * 8u)) & 0xffu; }
// The fp16 at b (b even: every block starts at an even byte, fields at even offsets).
float q_half(uint b) { return unpackHalf2x16(QWORD(b >> 2u) >> ((b & 2u) * 8u)).x; }
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
// The same from the scales' three words s0, s1, s2, already read (the GEMV
// units read them once for two sub-blocks).
uvec2 q4k_scale_min(uint s0, uint s1, uint s2, uint s) {
  const uint sh = 8u * (s & 3u);
  if (s < 4u) return uvec2((s0 >> sh) & 63u, (s1 >> sh) & 63u);
  const uint e = s2 >> sh;
  return uvec2((e & 0xfu) | (((s0 >> sh) >> 6u) & 3u) << 4u, ((e >> 4u) & 0xfu) | (((s1 >> sh) >> 6u) & 3u) << 4u);
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

// The N words of bytes b .. b + 4N − 1 (b even) into OUT[0..N): N + 1 fetches
// when b is not word-aligned, N (and one repeated) when it is; never past the
// word holding byte b + 4N − 1.
#define Q_STREAM(OUT, N, B)                                                        \
  {                                                                                \
    const uint a_ = (B) >> 2u, sh_ = ((B)&2u) * 8u;                                \
    uint lo_ = QWORD(a_);                                                          \
    [[unroll]] for (uint j_ = 0u; j_ < (N); ++j_) {                                \
      const uint hi_ = QWORD(a_ + min(j_ + 1u, (N)-1u + uint(sh_ != 0u)));          \
      OUT[j_] = sh_ == 0u ? lo_ : (lo_ >> sh_) | (hi_ << ((32u - sh_) & 31u));      \
      lo_ = hi_;                                                                   \
    }                                                                              \
  }

// Nibbles of a word's bytes: the low ones (hi = 0) or the high ones (hi = 4).
vec4 q_nibbles(uint v_, uint hi) { return vec4((uvec4(v_) >> (uvec4(0u, 8u, 16u, 24u) + hi)) & 0xfu); }

// Sub-block s (values 32s .. 32s + 31; s = 0 for the 32-value formats) of the
// block at byte `base`, block-aware: its scale(s) read once, its quants as
// whole words. Values 4i .. 4i + 3 are ab.x·q[i] + ab.y for i < 4 and
// ab.z·q[i] + ab.w for i ≥ 4 (two halves of 16, for Q6_K's 16-value scales),
// so a dot product with x is ab.x·Σx·q + ab.y·Σx per half.
void q_unit32(uint base, uint s, out vec4 q[8], out vec4 ab) {
#if WQ == WQ_Q8_0
  uint w_[8];
  Q_STREAM(w_, 8u, base + 2u)
  [[unroll]] for (uint i = 0u; i < 8u; ++i) q[i] = q_sbytes(w_[i]);
  const float d = q_half(base);
  ab = vec4(d, 0.0, d, 0.0);
#elif WQ == WQ_Q4_0 || WQ == WQ_Q4_1
#if WQ == WQ_Q4_0
  const uint qb_ = base + 2u;
  const float d = q_half(base), m = -8.0 * d;
#else
  const uint qb_ = base + 4u;
  const float d = q_half(base), m = q_half(base + 2u);
#endif
  uint w_[4];
  Q_STREAM(w_, 4u, qb_)
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    q[i] = q_nibbles(w_[i], 0u);
    q[i + 4u] = q_nibbles(w_[i], 4u);
  }
  ab = vec4(d, m, d, m);
#elif WQ == WQ_Q4_K
  // 144-byte blocks: every block starts word-aligned. Sub-block s: chunk
  // c = s / 2's qs words, low nibbles for even s, high for odd.
  const uint wb = base >> 2u, c = s >> 1u, hi = (s & 1u) * 4u;
  const vec2 dm = unpackHalf2x16(QWORD(wb));
  const uint s0 = QWORD(wb + 1u), s1 = QWORD(wb + 2u), s2 = QWORD(wb + 3u);
  const uvec2 sm = q4k_scale_min(s0, s1, s2, s);
  [[unroll]] for (uint i = 0u; i < 8u; ++i) q[i] = q_nibbles(QWORD(wb + 4u + 8u * c + i), hi);
  const float a = dm.x * float(sm.x), b = -dm.y * float(sm.y);
  ab = vec4(a, b, a, b);
#elif WQ == WQ_Q6_K
  // Half h of 128 values, quarter t of 32 within it: ql[64h + 32(t & 1) ..]
  // (nibble t >> 1), qh[32h ..] (bits 2t), scales[8h + 2t], [8h + 2t + 1].
  const uint h = s >> 2u, t = s & 3u;
  uint l_[8], u_[8];
  Q_STREAM(l_, 8u, base + 64u * h + 32u * (t & 1u))
  Q_STREAM(u_, 8u, base + 128u + 32u * h)
  const uint lsh = 4u * (t >> 1u), ush = 2u * t;
  [[unroll]] for (uint i = 0u; i < 8u; ++i)
    q[i] = vec4(((uvec4(l_[i]) >> (uvec4(0u, 8u, 16u, 24u) + lsh)) & 0xfu) |
                (((uvec4(u_[i]) >> (uvec4(0u, 8u, 16u, 24u) + ush)) & 3u) << 4u));
  const uint sb = base + 192u + 8u * h + 2u * t;  // even: both bytes in one word
  const uint sw = QWORD(sb >> 2u) >> ((sb & 2u) * 8u);
  const float d = q_half(base + 208u);
  const float a0 = d * float(bitfieldExtract(int(sw), 0, 8)), a1 = d * float(bitfieldExtract(int(sw), 8, 8));
  ab = vec4(a0, -32.0 * a0, a1, -32.0 * a1);
#endif
}

// gemm_vec.comp's unit: Q_GROUP sub-blocks that share their words (Q4_K's
// two nibbles of one run of 32 bytes; Q6_K's quarters t and t + 2 of a
// 128-value half, the two nibbles of the same ql words and two bit pairs of
// the same qh words), read once for both, where q_unit32 reads them per
// sub-block: on lavapipe each word is a gather. (All four quarters of a Q6_K
// half in one unit read fewer words still, but doubled the shader's compile
// time on lavapipe for no speed-up over two that its noise let one measure.)
#if WQ == WQ_Q4_K || WQ == WQ_Q6_K
const uint Q_GROUP = 2u;
#else
const uint Q_GROUP = 1u;
#endif
// Unit u's member g (g < Q_GROUP): its sub-block's index along the row.
uint q_unit_sub(uint u, uint g) {
#if WQ == WQ_Q6_K
  return 4u * (u >> 1u) + (u & 1u) + 2u * g;  // quarters t and t + 2 of a half
#else
  return u * Q_GROUP + g;
#endif
}
// And cheaper to unpack: component b of each q[i] holds its value still at
// its place in the word (bits 8b ..), i.e. times 2^8b, and the includer
// multiplies x by Q_LANE_SCALE instead (once per row of x, shared by every
// row of W it meets). A lane is then a mask and a conversion, no shift.
// Exact: a nibble (or Q6_K's 6 bits) times 2^8b (≤ 2^24) converts without
// rounding, and x · 2^-8b is x with its exponent moved (unless |x| < 2^-102,
// below fp32's normal range, whose products are negligible anyway).
#if WQ == WQ_Q8_0
const vec4 Q_LANE_SCALE = vec4(1.0);  // signed bytes: q_unit32's shift pairs are as cheap
#else
const vec4 Q_LANE_SCALE = vec4(1.0, 1.0 / 256.0, 1.0 / 65536.0, 1.0 / 16777216.0);
#endif
// The fields of mask m at bits 8b of v_, each times 2^8b: a mask, no shift.
vec4 q_lanes(uint v_, uint m) { return vec4(uvec4(v_) & (uvec4(m) << uvec4(0u, 8u, 16u, 24u))); }
// The unit whose first member is sub-block s (q_unit_sub(u, 0)) of the block
// at byte `base`: member g's values 4i .. 4i + 3 are, as q_unit32's,
// ab[g].x·q[8g + i] + ab[g].y for i < 4 and ab[g].z·q[8g + i] + ab[g].w for
// i ≥ 4, with q times 2^8b in component b (Q_LANE_SCALE).
void q_unit_lanes(uint base, uint s, out vec4 q[8u * Q_GROUP], out vec4 ab[Q_GROUP]) {
#if WQ == WQ_Q8_0
  q_unit32(base, s, q, ab[0]);
#elif WQ == WQ_Q4_0 || WQ == WQ_Q4_1
  uint w_[4];
#if WQ == WQ_Q4_0
  // 18-byte blocks: the quants start at an even byte, word-aligned every other block.
  Q_STREAM(w_, 4u, base + 2u)
  const float d = q_half(base), m = -8.0 * d;
#else
  // 20-byte blocks: word-aligned, d and m in the first word.
  const uint wb = base >> 2u;
  const vec2 dm = unpackHalf2x16(QWORD(wb));
  const float d = dm.x, m = dm.y;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) w_[i] = QWORD(wb + 1u + i);
#endif
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    q[i] = q_lanes(w_[i], 0xfu);
    q[i + 4u] = q_lanes(w_[i] >> 4u, 0xfu);
  }
  ab[0] = vec4(d, m, d, m);
#elif WQ == WQ_Q4_K
  // Chunk c = s / 2: its 8 qs words, low nibbles sub-block 2c, high ones 2c + 1;
  // the scales' words once for both (ggml's get_scale_min_k4, by word).
  const uint wb = base >> 2u, c = s >> 1u;
  const vec2 dm = unpackHalf2x16(QWORD(wb));
  const uint s0 = QWORD(wb + 1u), s1 = QWORD(wb + 2u), s2 = QWORD(wb + 3u);
  [[unroll]] for (uint g = 0u; g < 2u; ++g) {
    const uvec2 sm = q4k_scale_min(s0, s1, s2, s + g);
    const float a = dm.x * float(sm.x), b = -dm.y * float(sm.y);
    ab[g] = vec4(a, b, a, b);
  }
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const uint v_ = QWORD(wb + 4u + 8u * c + i);
    q[i] = q_lanes(v_, 0xfu);
    q[8u + i] = q_lanes(v_ >> 4u, 0xfu);
  }
#elif WQ == WQ_Q6_K
  // Quarters t and t + 2 (t = s % 4 < 2) of half h = s / 4 (q_unit_sub): the
  // low and high nibbles of the same 8 ql words (ql[64h + 32t ..]), bits 2t
  // and 2t + 4 of the same 8 qh words (qh[32h ..]); their scales are bytes
  // 2t, 2t + 1 of the first and second of two words (scales[8h ..]).
  const uint h = s >> 2u, t = s & 3u;
  uint l_[8], u_[8], sc_[2];
  Q_STREAM(l_, 8u, base + 64u * h + 32u * t)
  Q_STREAM(u_, 8u, base + 128u + 32u * h)
  Q_STREAM(sc_, 2u, base + 192u + 8u * h)
  const float d = q_half(base + 208u);
  [[unroll]] for (uint g = 0u; g < 2u; ++g) {
    [[unroll]] for (uint i = 0u; i < 8u; ++i)
      q[8u * g + i] = q_lanes(((l_[i] >> (4u * g)) & 0x0f0f0f0fu) |
                                  (((u_[i] >> (2u * t + 4u * g)) & 0x03030303u) << 4u), 0x3fu);
    const int sw = int(sc_[g] >> (16u * t));
    const float a0 = d * float(bitfieldExtract(sw, 0, 8)), a1 = d * float(bitfieldExtract(sw, 8, 8));
    ab[g] = vec4(a0, -32.0 * a0, a1, -32.0 * a1);
  }
#endif
}

vec4 q_at4(uint i) { return q_block4((i / QB) * QBYTES, i % QB); }
float q_at(uint i) { return q_at4(i & ~3u)[i & 3u]; }

#endif
