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
const uint WG = gl_WorkGroupSize.x;

layout(std430, binding = 0) buffer Sb { float s[]; };
layout(std430, binding = 1) readonly buffer Mb { int pad[]; };
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

void main() {
  const uint row = linear_group_id();
  if (row >= p.rows) return;
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
