#version 450
// O[b,i,h·D + c] = Σ_j P[b,h,i,j]·V[b,j,g,c], heads written concatenated;
// g = h / heads_per_kv (grouped-query attention: V heads are shared in place).
// A workgroup takes WG query rows of one (batch, head): each invocation holds
// its output row in registers (vec4s, the head dim padded to D4·4) and runs
// over tiles of BK value rows staged in shared memory, which every lane reads
// at the same address (a broadcast). The key loop is not unrolled (compile
// time); the head-dim loops are, so the accumulator stays in registers.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/vec.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D4 = 16;  // head dim in vec4s, rounded up
layout(constant_id = 2) const uint BK = 32;  // value rows per tile

const uint WG = gl_WorkGroupSize.x;

layout(std430, binding = 0) readonly buffer Pb { float pr[]; };
layout(std430, binding = 1) readonly buffer Vb { WTYPE v[]; };
layout(std430, binding = 2) writeonly buffer Ob { float o[]; };
#include "push/attention_values.h"

LOAD4_OF(load_v, v, W_F16)
STORE4(store_o, o)

shared vec4 vs[BK * D4];

void main() {
  uint g = linear_group_id();
  if (g >= p.total) return;
  const uint qb = g % p.q_blocks, bh = g / p.q_blocks;
  const uint b = bh / p.heads, h = bh % p.heads, D = p.head_dim;
  const uint t = gl_LocalInvocationID.x, i = qb * WG + t;
  const bool live = i < p.q_len;
  const uint prow = (bh * p.q_len + min(i, p.q_len - 1)) * p.kv_len;
  const uint vbase = b * p.v_bs + p.v_off + (h / p.heads_per_kv) * D;

  vec4 acc[D4];
  for (uint c4 = 0; c4 < D4; ++c4) acc[c4] = vec4(0.0);

  for (uint j0 = 0; j0 < p.kv_len; j0 += BK) {
    barrier();  // the previous tile has been read
    for (uint e = t; e < BK * D4; e += WG) {
      const uint j = j0 + e / D4, c = (e % D4) * 4;
      vs[e] = j < p.kv_len ? load_v(vbase + j * p.v_rs, c, D) : vec4(0.0);
    }
    barrier();
    if (!live) continue;
    const uint n = min(BK, p.kv_len - j0);
    [[dont_unroll]] for (uint jj = 0; jj < n; ++jj) {
      const float pj = pr[prow + j0 + jj];
      for (uint c4 = 0; c4 < D4; ++c4) acc[c4] += pj * vs[jj * D4 + c4];
    }
  }

  if (!live) return;
  const uint obase = (b * p.q_len + i) * (p.heads * D) + h * D;
  for (uint c4 = 0; c4 < D4; ++c4) store_o(obase, c4 * 4, D, acc[c4]);
}
