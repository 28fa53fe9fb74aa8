#version 450
// Device peak, compute: each invocation runs CHAINS independent vec4 FMA
// chains for p.iters steps (4·CHAINS FMAs a step), so the FMA units, not
// latency or memory, set the time. x ← x·a + b converges, so no inf or NaN.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint CHAINS = 4;  // at most 8

layout(std430, binding = 0) writeonly buffer Y { float y[]; };
#include "push/peak_fma.h"

void main() {
  uint g = linear_group_id();
  if (g >= p.total_groups) return;
  uint i = g * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  vec4 x[8];
  for (uint c = 0; c < CHAINS; ++c) x[c] = vec4(float(i & 255u) * 1e-3 + float(c)) + vec4(0, 1, 2, 3);
  const vec4 a = vec4(p.a), b = vec4(p.b);
  // Four steps a loop iteration: lavapipe blends every loop-carried value under
  // the lane mask once an iteration, which would otherwise cost one op per FMA.
  uint t = 0;
  for (; t + 4 <= p.iters; t += 4)
    [[unroll]] for (uint u = 0; u < 4; ++u)
      [[unroll]] for (uint c = 0; c < CHAINS; ++c) x[c] = fma(x[c], a, b);
  for (; t < p.iters; ++t)
    [[unroll]] for (uint c = 0; c < CHAINS; ++c) x[c] = fma(x[c], a, b);
  vec4 s = vec4(0);
  for (uint c = 0; c < CHAINS; ++c) s += x[c];
  y[i] = s.x + s.y + s.z + s.w;  // keeps the chains alive
}
