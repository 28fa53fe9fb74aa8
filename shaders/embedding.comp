#version 450
// out[b,i,:] = table[ids[b,i]]·scale + positions[pos(b,i)], where pos(b,i) is
// position_ids[b,i] (clamped into [0, max_positions)) when given, else pos_offset + i.
// Workgroup g covers WG·ITEMS vec4 units of one output row; the table and the
// positions are stored as T_F16 / P_F16 say, independently.
#extension GL_GOOGLE_include_directive : require
#ifndef T_F16
#define T_F16 0  // 1: the table is fp16
#endif
#ifndef P_F16
#define P_F16 0  // 1: the positions are fp16
#endif
#define ANY_F16 (T_F16 || P_F16)
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/vec.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 1;       // vec4 units per invocation
layout(constant_id = 2) const bool ALIGNED = false; // d % 4 == 0
const uint WG = gl_WorkGroupSize.x;

layout(std430, binding = 0) readonly buffer Ids { int ids[]; };
#if WQ  // a block-quantized table (lib/quant.glsl): each row dequantized in registers
layout(std430, binding = 1) readonly buffer T { uint table[]; };
#define QBUF table
#include "lib/quant.glsl"
#else
layout(std430, binding = 1) readonly buffer T { STORAGE(T_F16) table[]; };
layout(std430, binding = 1) readonly buffer T4 { QUAD(T_F16) table4[]; };
#endif
layout(std430, binding = 2) readonly buffer Pos { STORAGE(P_F16) pos[]; };
layout(std430, binding = 2) readonly buffer Pos4 { QUAD(P_F16) pos4[]; };
layout(std430, binding = 3) writeonly buffer O { float o[]; };
layout(std430, binding = 3) writeonly buffer O4 { vec4 o4[]; };
layout(std430, binding = 4) readonly buffer PosIds { int pos_ids[]; };

#include "push/embedding.h"

#if WQ
// Rows are whole blocks, so every vec4 of a row is one q_at4 (d % 4 == 0).
vec4 load_table(uint base, uint k, uint n) { return q_at4(base + k); }
#else
LOAD4_VIEW_OF(load_table, table, table4, ALIGNED, T_F16)
#endif
LOAD4_VIEW_OF(load_pos, pos, pos4, ALIGNED, P_F16)
STORE4_VIEW(store_o, o, o4, ALIGNED)

void main() {
  const uint g = linear_group_id();
  const uint row = g / p.groups_per_row;
  if (row >= p.rows) return;
  // Clamped so that a bad id can never read outside the table.
  const uint id = uint(clamp(ids[row], 0, int(p.vocab) - 1));
  if (id < p.v0 || id >= p.v1) return;  // another dispatch's block of the table
  const uint t_base = p.t_off + (id - p.v0) * p.d, o_base = row * p.d;
  // Explicit positions are clamped like ids: the host cannot see them.
  const uint position = p.has_pos_ids != 0 ? uint(clamp(pos_ids[row], 0, int(p.max_pos) - 1))
                                           : p.pos_offset + row % p.len;
  const uint p_base = position * p.d;
  const uint u0 = (g % p.groups_per_row) * WG * ITEMS + gl_LocalInvocationID.x;
  for (uint k = 0; k < ITEMS; ++k) {
    const uint u = u0 + k * WG;
    if (u >= p.d4) break;
    vec4 v = load_table(t_base, 4 * u, p.d) * p.scale;
    if (p.has_pos != 0) v += load_pos(p_base, 4 * u, p.d);
    store_o(o_base, 4 * u, p.d, v);
  }
}
