#version 450
// out[b, :] = pooling of x[b, i, :] over the rows i whose key_padding is 0, or
// zeros when there are none. MODE (sentence-transformers' pooling modes):
// 0 mean, 1 sum / sqrt(count) (mean_sqrt_len_tokens), 2 max, 3 the first row (cls). An invocation owns one vec4 of columns of one
// sequence and walks down its rows: no cross-lane reduction, and lanes read
// neighbouring addresses.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/vec.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool ALIGNED = false;  // d % 4 == 0
layout(constant_id = 2) const uint MODE = 0;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer M { int mask[]; };
layout(std430, binding = 2) writeonly buffer O { float o[]; };
layout(std430, binding = 2) writeonly buffer O4 { vec4 o4[]; };

#include "push/mean_pool.h"

LOAD4_VIEW(load_x, x, x4, ALIGNED)
STORE4_VIEW(store_o, o, o4, ALIGNED)

void main() {
  const uint g = linear_group_id();
  const uint b = g / p.groups_per_row;
  const uint u = (g % p.groups_per_row) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (b >= p.batch || u >= p.d4) return;  // no barriers below
  if (MODE == 3) {  // the first row, whatever the mask says (as sentence-transformers' cls)
    store_o(b * p.d, 4 * u, p.d, load_x(b * p.len * p.d, 4 * u, p.d));
    return;
  }
  vec4 s = vec4(MODE == 2 ? -1.0 / 0.0 : 0.0);
  uint count = 0;
  for (uint i = 0; i < p.len; ++i) {
    if (p.has_mask != 0 && mask[b * p.mask_stride + i] != 0) continue;
    const vec4 v = load_x((b * p.len + i) * p.d, 4 * u, p.d);
    // Max pooling keeps a NaN, as torch.max does (max() may drop it): s + v is NaN there.
    s = MODE == 2 ? mix(max(s, v), s + v, bvec4(uvec4(isnan(s)) | uvec4(isnan(v)))) : s + v;
    ++count;
  }
  vec4 r = vec4(0);
  if (count > 0) r = MODE == 0 ? s / float(count) : MODE == 1 ? s / sqrt(float(count)) : s;
  store_o(b * p.d, 4 * u, p.d, r);
}
