#version 450
// In place: each row of S[b,h,i,:] becomes softmax over its unmasked keys.
// One workgroup per row. Masked keys count as -inf; a row with every key
// masked becomes all zeros (never exp(-inf - -inf) = NaN).
// USE_SUBGROUP: reductions with subgroup arithmetic, else a shared-memory tree
// (the C++ side makes the workgroup size a power of two for it).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#if USE_SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 1;  // rows per workgroup, one after another
// VEC4 > 0: kv_len is a multiple of 4 and a row fits in VEC4 vec4s per lane:
// one vec4 read and one write per element group, the row kept in registers.
layout(constant_id = 2) const uint VEC4 = 0;
const uint WG = gl_WorkGroupSize.x;

layout(std430, binding = 0) buffer Sb { float s[]; };
layout(std430, binding = 0) buffer Sb4 { vec4 s4[]; };
layout(std430, binding = 1) readonly buffer Mb { int pad[]; };
layout(std430, binding = 1) readonly buffer Mb4 { ivec4 pad4[]; };
layout(push_constant) uniform P {
  uint rows, heads, q_len, kv_len;
  uint pad_stride, has_pad, causal, causal_offset;
} p;

#define NEG_INF uintBitsToFloat(0xff800000u)

// Enough slots for one partial per subgroup (a subgroup has at least one lane).
shared float red[WG];

float reduce(float v, bool is_max) {
#if USE_SUBGROUP
  v = is_max ? subgroupMax(v) : subgroupAdd(v);
  // One subgroup (uniform): the subgroup result is the workgroup's, and
  // skipping the barriers matters on CPU devices, which switch per barrier.
  if (gl_NumSubgroups == 1) return v;
  if (subgroupElect()) red[gl_SubgroupID] = v;
  barrier();
  v = red[0];
  for (uint k = 1; k < gl_NumSubgroups; ++k) v = is_max ? max(v, red[k]) : v + red[k];
#else
  const uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint st = WG / 2; st > 0; st >>= 1) {
    if (t < st) red[t] = is_max ? max(red[t], red[t + st]) : red[t] + red[t + st];
    barrier();
  }
  v = red[0];
#endif
  barrier();  // everyone has read red[] before the next reduction writes it
  return v;
}

// Rows are short next to a workgroup's fixed cost on CPU devices: a
// workgroup takes ROWS of them in turn.
void softmax_row(const uint row) {
  const uint i = row % p.q_len, b = row / (p.heads * p.q_len);
  const uint base = row * p.kv_len, pbase = b * p.pad_stride;
  // Causal: keys past i + causal_offset are masked.
  const uint end = p.causal != 0 ? min(p.kv_len, i + p.causal_offset + 1) : p.kv_len;
  const uint t = gl_LocalInvocationID.x;

  float m = NEG_INF;
  for (uint j = t; j < end; j += WG)
    if (p.has_pad == 0 || pad[pbase + j] == 0) m = max(m, s[base + j]);
  m = reduce(m, true);

  if (m == NEG_INF) {  // uniform: every key of the row is masked
    for (uint j = t; j < p.kv_len; j += WG) s[base + j] = 0.0;
    return;
  }
  float sum = 0.0;
  for (uint j = t; j < p.kv_len; j += WG) {
    const bool keep = j < end && (p.has_pad == 0 || pad[pbase + j] == 0);
    const float e = keep ? exp(s[base + j] - m) : 0.0;
    s[base + j] = e;
    sum += e;
  }
  const float inv = 1.0 / reduce(sum, false);
  for (uint j = t; j < end; j += WG) s[base + j] *= inv;
}

void softmax_row_vec4(const uint row) {
  const uint i = row % p.q_len, b = row / (p.heads * p.q_len);
  const uint base4 = row * (p.kv_len / 4), pbase = b * p.pad_stride, n4 = p.kv_len / 4;
  const uint end = p.causal != 0 ? min(p.kv_len, i + p.causal_offset + 1) : p.kv_len;
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
      if (j4 * 4 + e >= end || pm[e] != 0) v[e] = NEG_INF;
    x[k] = v;
    m = max(m, max(max(v.x, v.y), max(v.z, v.w)));
  }
  m = reduce(m, true);
  float sum = 0.0;
  for (uint k = 0; k < VEC4; ++k) {
    // exp(-inf - m) = 0 for masked keys once m is finite; a fully masked row has m = -inf.
    x[k] = m == NEG_INF ? vec4(0.0) : exp(x[k] - m);
    sum += x[k].x + x[k].y + x[k].z + x[k].w;
  }
  sum = reduce(sum, false);
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
