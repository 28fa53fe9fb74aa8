#version 450
// T5's relative-position bias: out[h, i, j] = table[bucket, h] with bucket =
// buckets[clamp(j − (i + q_offset), −max_rel, max_rel) + max_rel], the host's
// bucket of each relative position (the bucketing's logarithm stays on the
// host, where it is computed as PyTorch does). Each workgroup covers ITEMS·WG
// elements, lanes writing neighbouring elements.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 4;

layout(std430, binding = 0) readonly buffer T { WTYPE table[]; };  // [num_buckets, heads]
layout(std430, binding = 1) readonly buffer Bk { int buckets[]; };  // [2·max_rel + 1]
layout(std430, binding = 2) writeonly buffer O { float o[]; };      // [heads, q_len, out_rs]
#include "push/position_bias.h"

void main() {
  const uint base = linear_group_id() * ITEMS * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  const int mr = int(p.max_rel);
  for (uint k = 0; k < ITEMS; ++k) {
    const uint e = base + k * gl_WorkGroupSize.x;
    if (e >= p.n) return;
    const uint j = e % p.kv_len, i = (e / p.kv_len) % p.q_len, h = e / (p.kv_len * p.q_len);
    const uint qi = i + p.q_offset;  // the op checks that it fits 32 bits
    const int rel = qi > j ? -int(min(qi - j, uint(mr))) : int(min(j - qi, uint(mr)));
    const int b = clamp(buckets[rel + mr], 0, int(p.num_buckets) - 1);  // the ids are checked on the host
    o[(h * p.q_len + i) * p.out_rs + j] = AT(W_F16, table, uint(b) * p.heads + h);
  }
}
