#version 450
// out[b, :] = mean of x[b, i, :] over the rows i whose key_padding is 0, or
// zeros when there are none. An invocation owns one vec4 of columns of one
// sequence and walks down its rows: no cross-lane reduction, and lanes read
// neighbouring addresses.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool ALIGNED = false;  // d % 4 == 0

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer M { int mask[]; };
layout(std430, binding = 2) writeonly buffer O { float o[]; };
layout(std430, binding = 2) writeonly buffer O4 { vec4 o4[]; };

layout(push_constant) uniform P {
  uint batch;
  uint len;
  uint d;
  uint d4;             // ceil(d / 4)
  uint groups_per_row; // workgroups per sequence
  uint has_mask;
  uint mask_stride;    // elements between sequences of the mask
} p;

vec4 load(uint row, uint u) {
  if (ALIGNED) return x4[row * p.d4 + u];
  vec4 v = vec4(0);
  for (uint c = 0; c < 4; ++c)
    if (4 * u + c < p.d) v[c] = x[row * p.d + 4 * u + c];
  return v;
}

void main() {
  const uint g = linear_group_id();
  const uint b = g / p.groups_per_row;
  const uint u = (g % p.groups_per_row) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (b >= p.batch || u >= p.d4) return;  // no barriers below
  vec4 s = vec4(0);
  uint count = 0;
  for (uint i = 0; i < p.len; ++i) {
    if (p.has_mask != 0 && mask[b * p.mask_stride + i] != 0) continue;
    s += load(b * p.len + i, u);
    ++count;
  }
  const vec4 mean = count > 0 ? s / float(count) : vec4(0);
  if (ALIGNED) {
    o4[b * p.d4 + u] = mean;
  } else {
    for (uint c = 0; c < 4; ++c)
      if (4 * u + c < p.d) o[b * p.d + 4 * u + c] = mean[c];
  }
}
