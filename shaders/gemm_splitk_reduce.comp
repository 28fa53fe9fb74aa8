#version 450
// Split-K's second pass: Y = act(Σₛ P[s] + b) + R, the sum over the chunks of K
// in order s = 0, 1, ... (fp32), where gemm_tiled.comp (staged) or
// gemm_coopmat.comp left chunk s's product in rows [s·M, (s+1)·M) of P
// [ksplit·M, N]. One invocation an output; the push constants are the
// product's own (gemm.cpp), total = M·N.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
#define ACT_ID 1

layout(std430, binding = 0) readonly buffer P { float part[]; };
// W's binding, unread: the epilogue's bindings keep their numbers, and the
// bias's type is W's (lib/gemm_epilogue.glsl).
layout(std430, binding = 1) readonly buffer W { WTYPE w[]; };
#include "lib/gemm_epilogue.glsl"

void main() {
  const uint i = linear_group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.total) return;
  const uint m = i / p.N, n = i % p.N;
  float v = 0.0;
  for (uint s = 0; s < p.ksplit; ++s) v += part[(s * p.M + m) * p.N + n];
  store_output(v + bias_at(n), m, n);
}
