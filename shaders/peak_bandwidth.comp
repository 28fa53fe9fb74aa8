#version 450
// Device peak, memory: streams a large buffer with vec4 loads, neighbouring
// lanes reading neighbouring vec4s, and writes one float per invocation.
// TEXEL (-D, variant "texel"): the loads are RGBA32F texel fetches, which a
// CPU driver turns into plain gathers where a storage-buffer load is a loop
// over the lanes (lavapipe: ~1 GB/s through storage buffers on a machine that
// streams 11 GB/s); the peak is the better of the two.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 16;  // vec4 loads per invocation

#if TEXEL
layout(binding = 0) uniform samplerBuffer xt;
#define LOAD(i) texelFetch(xt, int(i))
#else
layout(std430, binding = 0) readonly buffer X { vec4 x[]; };
#define LOAD(i) x[i]
#endif
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#include "push/peak_bandwidth.h"

void main() {
  uint g = linear_group_id();
  if (g >= p.total_groups) return;
  uint base = g * ITEMS * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  vec4 s = vec4(0);
  for (uint k = 0; k < ITEMS; ++k) {
    uint i = base + k * gl_WorkGroupSize.x;
    if (i < p.n_vec4) s += LOAD(i);
  }
  y[g * gl_WorkGroupSize.x + gl_LocalInvocationID.x] = s.x + s.y + s.z + s.w;
}
