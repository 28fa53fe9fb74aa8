#version 450
// In place: each row of S[b,h,i,:] becomes softmax over its unmasked keys.
// One workgroup per row. Masked keys count as -inf; a row with every key
// masked becomes all zeros (never exp(-inf - -inf) = NaN). Row i sees keys
// [start, end): end = i + causal_offset + 1 under the causal mask, start =
// end − window under a sliding window (0 when either would pass the row).
// USE_SUBGROUP: reductions with subgroup arithmetic, else a shared-memory tree.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 1;  // rows per workgroup, one after another
// VEC4 > 0: kv_len is a multiple of 4 and a row fits in VEC4 vec4s per lane:
// one vec4 read and one write per element group, the row kept in registers.
layout(constant_id = 2) const uint VEC4 = 0;
const uint WG = gl_WorkGroupSize.x;
#define REDUCE_FLOAT 1
#include "lib/reduce.glsl"

layout(std430, binding = 0) buffer Sb { float s[]; };
layout(std430, binding = 0) buffer Sb4 { vec4 s4[]; };
layout(std430, binding = 1) readonly buffer Mb { int pad[]; };
layout(std430, binding = 1) readonly buffer Mb4 { ivec4 pad4[]; };
#include "push/masked_softmax.h"

#define NEG_INF uintBitsToFloat(0xff800000u)
#define POS_INF uintBitsToFloat(0x7f800000u)
#define QNAN uintBitsToFloat(0x7fc00000u)
// A NaN score makes its row NaN, as PyTorch's softmax does: max() may drop a NaN
// (and a subgroup max does on some drivers), so a lane that sees one reduces
// +inf instead. A row whose max is +inf (a NaN or a +inf score) is all NaN, as
// in PyTorch (inf - inf); a NaN at a masked key is never read.
void nan_row(const uint base) {
  for (uint j = gl_LocalInvocationID.x; j < p.kv_len; j += WG) s[base + j] = QNAN;
}

// The first key row i sees: its sliding window's (p.window is 0 or comes with causal).
uint first_key(const uint i) {
  const uint last = i + p.causal_offset;
  return p.window != 0 && last >= p.window ? last + 1 - p.window : 0;
}

// Rows are short next to a workgroup's fixed cost on CPU devices: a
// workgroup takes ROWS of them in turn.
void softmax_row(const uint row) {
  const uint i = row % p.q_len, b = row / (p.heads * p.q_len);
  const uint base = row * p.kv_len, pbase = b * p.pad_stride;
  // Causal: keys past i + causal_offset are masked.
  const uint end = p.causal != 0 ? min(p.kv_len, i + p.causal_offset + 1) : p.kv_len;
  const uint start = first_key(i);
  const uint t = gl_LocalInvocationID.x;

  float m = NEG_INF;
  for (uint j = start + t; j < end; j += WG)
    if (p.has_pad == 0 || pad[pbase + j] == 0) {
      const float v = s[base + j];
      m = isnan(v) ? POS_INF : max(m, v);
    }
  m = workgroup_max(m);
  if (m == POS_INF) {  // uniform
    nan_row(base);
    return;
  }

  if (m == NEG_INF) {  // uniform: every key of the row is masked
    for (uint j = t; j < p.kv_len; j += WG) s[base + j] = 0.0;
    return;
  }
  float sum = 0.0;
  for (uint j = t; j < p.kv_len; j += WG) {
    const bool keep = j >= start && j < end && (p.has_pad == 0 || pad[pbase + j] == 0);
    const float e = keep ? exp(s[base + j] - m) : 0.0;
    s[base + j] = e;
    sum += e;
  }
  const float inv = 1.0 / workgroup_sum(sum);
  for (uint j = start + t; j < end; j += WG) s[base + j] *= inv;
}

void softmax_row_vec4(const uint row) {
  const uint i = row % p.q_len, b = row / (p.heads * p.q_len);
  const uint base4 = row * (p.kv_len / 4), pbase = b * p.pad_stride, n4 = p.kv_len / 4;
  const uint end = p.causal != 0 ? min(p.kv_len, i + p.causal_offset + 1) : p.kv_len;
  const uint start = first_key(i);
  const uint t = gl_LocalInvocationID.x;
  vec4 x[VEC4 > 0 ? VEC4 : 1];
  float m = NEG_INF;
  for (uint k = 0; k < VEC4; ++k) {
    const uint j4 = t + k * WG;
    vec4 v = j4 < n4 ? s4[base4 + j4] : vec4(NEG_INF);
    // The mask rows are 4-aligned when pad_stride is (uniform branch).
    const ivec4 pm = p.has_pad == 0 || j4 >= n4 ? ivec4(0)
                     : p.pad_stride % 4 == 0 ? pad4[pbase / 4 + j4]
                     : ivec4(pad[pbase + j4 * 4], pad[pbase + j4 * 4 + 1], pad[pbase + j4 * 4 + 2],
                             pad[pbase + j4 * 4 + 3]);
    for (uint e = 0; e < 4; ++e)
      if (j4 * 4 + e >= end || j4 * 4 + e < start || pm[e] != 0) v[e] = NEG_INF;
    x[k] = v;
    m = any(isnan(v)) ? POS_INF : max(m, max(max(v.x, v.y), max(v.z, v.w)));
  }
  m = workgroup_max(m);
  if (m == POS_INF) {  // uniform
    for (uint k = 0; k < VEC4; ++k) {
      const uint j4 = t + k * WG;
      if (j4 < n4) s4[base4 + j4] = vec4(QNAN);
    }
    return;
  }
  float sum = 0.0;
  for (uint k = 0; k < VEC4; ++k) {
    // exp(-inf - m) = 0 for masked keys once m is finite; a fully masked row has m = -inf.
    x[k] = m == NEG_INF ? vec4(0.0) : exp(x[k] - m);
    sum += x[k].x + x[k].y + x[k].z + x[k].w;
  }
  sum = workgroup_sum(sum);
  const float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  for (uint k = 0; k < VEC4; ++k) {
    const uint j4 = t + k * WG;
    if (j4 < n4) s4[base4 + j4] = x[k] * inv;
  }
}

void main() {
  const uint first = linear_group_id() * ROWS;
  for (uint r = 0; r < ROWS; ++r) {
    if (first + r >= p.rows) return;  // uniform across the workgroup
    if (VEC4 > 0) softmax_row_vec4(first + r);
    else softmax_row(first + r);
  }
}
