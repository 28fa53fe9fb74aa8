#version 450
// S[b,h,i,j] = scale · Σ_c Q[b,i,h,c]·K[b,j,g,c], read straight from head views;
// g = h / heads_per_kv (grouped-query attention: K heads are shared in place).
// A workgroup takes WG keys × TQ query rows of one (batch, head): each
// invocation holds one key row in registers (vec4s, the head dim padded with
// zeros to D4·4) and runs down the TQ query rows staged in shared memory, so
// every lane reads the same query element (a broadcast) and neighbouring lanes
// write neighbouring scores. The query loop is not unrolled (compile time); the
// head-dim loops are, so the key row stays in registers.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/vec.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D4 = 16;  // head dim in vec4s, rounded up
layout(constant_id = 2) const uint TQ = 32;  // query rows per workgroup

const uint WG = gl_WorkGroupSize.x;

layout(std430, binding = 0) readonly buffer Qb { float q[]; };
layout(std430, binding = 1) readonly buffer Kb { WTYPE k[]; };
layout(std430, binding = 2) writeonly buffer Sb { float s[]; };
#include "push/attention_scores.h"

LOAD4(load_q, q)
LOAD4_OF(load_k, k, W_F16)

shared vec4 qs[TQ * D4];

void main() {
  uint g = linear_group_id();
  if (g >= p.total) return;
  const uint kb = g % p.k_blocks;
  g /= p.k_blocks;
  const uint qb = g % p.q_blocks, bh = g / p.q_blocks;
  const uint b = bh / p.heads, h = bh % p.heads, D = p.head_dim;
  const uint t = gl_LocalInvocationID.x, j = kb * WG + t, i0 = qb * TQ;
  const bool live = j < p.kv_len;

  vec4 kr[D4];
  const uint kbase = b * p.k_bs + min(j, p.kv_len - 1) * p.k_rs + p.k_off + (h / p.heads_per_kv) * D;
  for (uint c4 = 0; c4 < D4; ++c4) kr[c4] = load_k(kbase, c4 * 4, D);

  const uint qbase = b * p.q_bs + p.q_off + h * D;
  for (uint e = t; e < TQ * D4; e += WG) {
    const uint i = i0 + e / D4, c = (e % D4) * 4;
    qs[e] = i < p.q_len ? load_q(qbase + i * p.q_rs, c, D) : vec4(0.0);
  }
  barrier();
  if (!live) return;

  const uint rows = min(TQ, p.q_len - i0);
  [[dont_unroll]] for (uint r = 0; r < rows; ++r) {
    vec4 d = vec4(0.0);
    for (uint c4 = 0; c4 < D4; ++c4) d += kr[c4] * qs[r * D4 + c4];
    s[(bh * p.q_len + i0 + r) * p.kv_len + j] = p.scale * (d.x + d.y + d.z + d.w);
  }
}
