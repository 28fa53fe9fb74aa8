#version 450
// y = x / sqrt(max(Σx², eps)) over each row (tf.math.l2_normalize). One
// workgroup per row: each invocation sums a strided slice of squares, one
// reduction, then each scales its slice.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
const uint WG = gl_WorkGroupSize.x;
#define REDUCE_FLOAT 1
#include "lib/reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
#include "push/l2_normalize.h"

void main() {
  const uint row = linear_group_id();
  if (row >= p.rows) return;  // workgroup-uniform
  const uint tid = gl_LocalInvocationID.x;
  const uint base = row * p.d;
  float s = 0.0;
  for (uint c = tid; c < p.d; c += WG) s += x[base + c] * x[base + c];
  s = workgroup_sum(s);
  // A NaN sum makes the row NaN, as torch's clamp_min(norm, eps) does (max() may drop it).
  const float scale = isnan(s) ? s : inversesqrt(max(s, p.eps));
  for (uint c = tid; c < p.d; c += WG) y[base + c] = x[base + c] * scale;
}
