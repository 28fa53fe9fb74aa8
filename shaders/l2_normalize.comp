#version 450
// y = x / sqrt(max(Σx², eps)) over each row (tf.math.l2_normalize). One
// workgroup per row: each invocation sums a strided slice of squares, one
// reduction, then each scales its slice.
#extension GL_GOOGLE_include_directive : require
#if defined(USE_SUBGROUP) && USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
const uint WG = gl_WorkGroupSize.x;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform P {
  uint rows;
  uint d;
  float eps;
} p;

shared float red[WG];

void main() {
  const uint row = linear_group_id();
  if (row >= p.rows) return;  // workgroup-uniform
  const uint tid = gl_LocalInvocationID.x;
  const uint base = row * p.d;
  float s = 0.0;
  for (uint c = tid; c < p.d; c += WG) s += x[base + c] * x[base + c];
#if defined(USE_SUBGROUP) && USE_SUBGROUP
  // Every invocation sums the per-subgroup partials in the same order.
  s = subgroupAdd(s);
  if (subgroupElect()) red[gl_SubgroupID] = s;
  barrier();
  s = 0.0;
  for (uint i = 0; i < gl_NumSubgroups; ++i) s += red[i];
#else
  red[tid] = s;
  barrier();
  uint half_ = 1;
  while (2 * half_ < WG) half_ *= 2;
  for (; half_ > 0; half_ /= 2) {
    if (tid < half_ && tid + half_ < WG) red[tid] += red[tid + half_];
    barrier();
  }
  s = red[0];
#endif
  const float scale = inversesqrt(max(s, p.eps));
  for (uint c = tid; c < p.d; c += WG) y[base + c] = x[base + c] * scale;
}
