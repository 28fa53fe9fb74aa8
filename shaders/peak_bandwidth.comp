#version 450
// Device peak, memory: streams a large buffer with vec4 loads, neighbouring
// lanes reading neighbouring vec4s, and writes one float per invocation.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 16;  // vec4 loads per invocation

layout(std430, binding = 0) readonly buffer X { vec4 x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#include "push/peak_bandwidth.h"

void main() {
  uint g = linear_group_id();
  if (g >= p.total_groups) return;
  uint base = g * ITEMS * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  vec4 s = vec4(0);
  for (uint k = 0; k < ITEMS; ++k) {
    uint i = base + k * gl_WorkGroupSize.x;
    if (i < p.n_vec4) s += x[i];
  }
  y[g * gl_WorkGroupSize.x + gl_LocalInvocationID.x] = s.x + s.y + s.z + s.w;
}
