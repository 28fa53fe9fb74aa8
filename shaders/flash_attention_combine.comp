#version 450
// The second pass of flash attention's split variant (flash-decoding): each
// (row, head) has p.splits partial records (m, l, NaN seen, 0, acc[D4·4]) over
// disjoint key ranges, written by flash_attention.comp with SPLIT. One
// invocation merges one vec4 of a row's output: with M the largest m,
// out = Σ acc·exp(m − M) / Σ l·exp(m − M). A split that saw no visible key
// (m = −inf) adds nothing; no visible key at all gives zeros, and a NaN score
// anywhere gives NaN, as the one-pass kernel does.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/vec.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D4 = 16;  // head dim in vec4s, rounded up (the records' width)

layout(std430, binding = 0) readonly buffer Pb { float part[]; };
layout(std430, binding = 1) writeonly buffer Ob { float o[]; };
#include "push/flash_attention_combine.h"

STORE4(store_o, o)

#define NEG_INF uintBitsToFloat(0xff800000u)
#define QNAN uintBitsToFloat(0x7fc00000u)

void main() {
  const uint idx = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (idx >= p.total) return;
  const uint rh = idx / D4, c4 = idx % D4;
  const uint width = D4 * 4 + 4, first = rh * p.splits * width;
  float mmax = NEG_INF;
  bool nan_seen = false;
  for (uint s = 0; s < p.splits; ++s) {
    mmax = max(mmax, part[first + s * width]);
    nan_seen = nan_seen || part[first + s * width + 2] != 0.0;
  }
  float l = 0.0;
  vec4 sum = vec4(0.0);
  for (uint s = 0; s < p.splits; ++s) {
    const uint r = first + s * width;
    const float m = part[r];
    if (m == NEG_INF) continue;
    const float w = exp(m - mmax);
    l += part[r + 1] * w;
    sum += vec4(part[r + 4 + c4 * 4], part[r + 5 + c4 * 4], part[r + 6 + c4 * 4], part[r + 7 + c4 * 4]) * w;
  }
  const float inv = nan_seen ? QNAN : l > 0.0 ? 1.0 / l : 0.0;
  const uint h = rh % p.heads, row = rh / p.heads;
  store_o((row * p.heads + h) * p.head_dim, c4 * 4, p.head_dim, sum * inv);
}
