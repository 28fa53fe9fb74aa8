#version 450
// dst[b, dst_row0 + i, dst_col + c] = src[index ? index[b] : b, src_row0 + i, src_col + c].
// A workgroup covers a tile of RPG·IR rows × LPR·IC units of one batch, where a
// unit is a vec4 when ALIGNED (every offset, stride and the width are multiples
// of 4), else one float. Lanes take neighbouring units of a row; when rows are
// narrower than the workgroup (LPR < WG) each group spreads over RPG rows.
// Each lane works out its (row, unit) once: no division per element.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint IR = 1;          // rows per lane
layout(constant_id = 2) const uint IC = 1;          // units per lane within a row
layout(constant_id = 3) const bool ALIGNED = false;

layout(std430, binding = 0) readonly buffer S { float s[]; };
layout(std430, binding = 0) readonly buffer S4 { vec4 s4[]; };
layout(std430, binding = 1) readonly buffer Index { int index[]; };
layout(std430, binding = 2) writeonly buffer D { float d[]; };
layout(std430, binding = 2) writeonly buffer D4 { vec4 d4[]; };

#include "push/copy_rows.h"

void main() {
  const uint g = linear_group_id();
  if (g >= p.total) return;
  const uint lane = gl_LocalInvocationID.x;
  const uint r = lane / p.lpr, cl = lane % p.lpr;
  if (r >= p.rpg) return;  // lanes beyond RPG·LPR have no row (no barriers follow)
  const uint b = g / p.gpb, t = g % p.gpb;
  const uint row_tile = t / p.segs, seg = t % p.segs;
  // Clamped so that an index the host cannot see never reads outside src.
  const uint sb = p.has_index != 0 ? uint(clamp(index[b], 0, int(p.src_batches) - 1)) : b;
  const uint src_b = sb * p.src_batch + p.src_off, dst_b = b * p.dst_batch + p.dst_off;
  const uint i0 = row_tile * p.rpg * IR + r, c0 = seg * p.lpr * IC + cl;
  for (uint kr = 0; kr < IR; ++kr) {
    const uint i = i0 + kr * p.rpg;
    if (i >= p.rows) break;
    const uint src_i = src_b + i * p.src_row, dst_i = dst_b + i * p.dst_row;
    for (uint kc = 0; kc < IC; ++kc) {
      const uint c = c0 + kc * p.lpr;
      if (c >= p.units) break;
      if (ALIGNED) d4[dst_i / 4 + c] = s4[src_i / 4 + c];
      else d[dst_i + c] = s[src_i + c];
    }
  }
}
