#version 450
// dst[b, dst_row0 + i, dst_col + c] = src[index ? index[b] : b, src_row0 + i, src_col + c].
// A workgroup covers a tile of RPG·IR rows × LPR·IC units of one batch, where a
// unit is a vec4 when ALIGNED (every offset, stride and the width are multiples
// of 4), else one element. Lanes take neighbouring units of a row; when rows are
// narrower than the workgroup (LPR < WG) each group spreads over RPG rows.
// Each lane works out its (row, unit) once: no division per element.
//
// src and dst are stored as S_F16 / D_F16 say, independently: fp32 → fp16 is
// the KV-cache append of an fp16 cache (rounded by the device's conversion),
// fp16 → fp16 copies the halves' bits (slot copies, beam reordering). Without
// 16-bit storage (F16_PACKED) an fp16 dst is 32-bit words of two halves: a vec4
// unit writes whole words; a single element may share its word with another
// lane's (odd offsets or strides), so it clears and sets its own half with two
// atomics, which leave the other half alone whatever the order.
#extension GL_GOOGLE_include_directive : require
#ifndef S_F16
#define S_F16 0  // 1: src is fp16
#endif
#ifndef D_F16
#define D_F16 0  // 1: dst is fp16
#endif
#define ANY_F16 (S_F16 || D_F16)
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint IR = 1;          // rows per lane
layout(constant_id = 2) const uint IC = 1;          // units per lane within a row
layout(constant_id = 3) const bool ALIGNED = false;

layout(std430, binding = 0) readonly buffer S { STORAGE(S_F16) s[]; };
layout(std430, binding = 0) readonly buffer S4 { QUAD(S_F16) s4[]; };
layout(std430, binding = 1) readonly buffer Index { int index[]; };
#if D_F16 && F16_PACKED
layout(std430, binding = 2) buffer D { uint d[]; };  // two halves a word, element k in word k / 2
#else
layout(std430, binding = 2) writeonly buffer D { STORAGE(D_F16) d[]; };
#endif
layout(std430, binding = 2) writeonly buffer D4 { QUAD(D_F16) d4[]; };

#include "push/copy_rows.h"

// Four elements from src unit j (elements 4j..4j+3) to dst unit k.
void copy4(uint j, uint k) {
#if S_F16 == D_F16
  d4[k] = s4[j];  // the same bits: fp32 words, or fp16 halves two a word
#elif D_F16
  const vec4 v = s4[j];
  d4[k] = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
#else
  d4[k] = as_vec4(s4[j]);
#endif
}

#if D_F16 && F16_PACKED
// The 16 bits of element k of dst, the word's other half untouched.
void store_half(uint k, uint bits) {
  const uint shift = (k & 1u) * 16u;
  atomicAnd(d[k >> 1], ~(0xffffu << shift));
  atomicOr(d[k >> 1], bits << shift);
}
#endif

// Element j of src to element k of dst.
void copy1(uint j, uint k) {
#if D_F16 && F16_PACKED
#if S_F16
  store_half(k, (s[j >> 1].bits >> ((j & 1u) * 16u)) & 0xffffu);  // packed src too: its bits
#else
  store_half(k, packHalf2x16(vec2(s[j], 0.0)) & 0xffffu);
#endif
#elif S_F16 == D_F16
  d[k] = s[j];
#elif D_F16
  d[k] = float16_t(s[j]);
#else
  d[k] = AT(S_F16, s, j);
#endif
}

void main() {
  const uint g = linear_group_id();
  if (g >= p.total) return;
  const uint lane = gl_LocalInvocationID.x;
  const uint r = lane / p.lpr, cl = lane % p.lpr;
  if (r >= p.rpg) return;  // lanes beyond RPG·LPR have no row (no barriers follow)
  const uint b = g / p.gpb, t = g % p.gpb;
  const uint row_tile = t / p.segs, seg = t % p.segs;
  // Clamped so that an index the host cannot see never reads outside src.
  const uint sb = p.has_index != 0 ? uint(clamp(index[b], 0, int(p.src_batches) - 1)) : b;
  const uint src_b = sb * p.src_batch + p.src_off, dst_b = b * p.dst_batch + p.dst_off;
  const uint i0 = row_tile * p.rpg * IR + r, c0 = seg * p.lpr * IC + cl;
  for (uint kr = 0; kr < IR; ++kr) {
    const uint i = i0 + kr * p.rpg;
    if (i >= p.rows) break;
    const uint src_i = src_b + i * p.src_row, dst_i = dst_b + i * p.dst_row;
    for (uint kc = 0; kc < IC; ++kc) {
      const uint c = c0 + kc * p.lpr;
      if (c >= p.units) break;
      if (ALIGNED) copy4(src_i / 4 + c, dst_i / 4 + c);
      else copy1(src_i + c, dst_i + c);
    }
  }
}
