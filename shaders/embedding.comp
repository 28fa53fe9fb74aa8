#version 450
// out[b,i,:] = table[ids[b,i]]·scale + positions[pos(b,i)], where pos(b,i) is
// position_ids[b,i] (clamped into [0, max_positions)) when given, else pos_offset + i.
// Workgroup g covers WG·ITEMS vec4 units of one output row; the table and the
// positions are stored as T_F16 / P_F16 say, independently.
#extension GL_GOOGLE_include_directive : require
#if (defined(T_F16) && T_F16) || (defined(P_F16) && P_F16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "common.glsl"

#if defined(T_F16) && T_F16
#define TTYPE float16_t
#define TTYPE4 f16vec4
#else
#define TTYPE float
#define TTYPE4 vec4
#endif
#if defined(P_F16) && P_F16
#define PTYPE float16_t
#define PTYPE4 f16vec4
#else
#define PTYPE float
#define PTYPE4 vec4
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 1;       // vec4 units per invocation
layout(constant_id = 2) const bool ALIGNED = false; // d % 4 == 0
const uint WG = gl_WorkGroupSize.x;

layout(std430, binding = 0) readonly buffer Ids { int ids[]; };
layout(std430, binding = 1) readonly buffer T { TTYPE table[]; };
layout(std430, binding = 1) readonly buffer T4 { TTYPE4 table4[]; };
layout(std430, binding = 2) readonly buffer Pos { PTYPE pos[]; };
layout(std430, binding = 2) readonly buffer Pos4 { PTYPE4 pos4[]; };
layout(std430, binding = 3) writeonly buffer O { float o[]; };
layout(std430, binding = 3) writeonly buffer O4 { vec4 o4[]; };
layout(std430, binding = 4) readonly buffer PosIds { int pos_ids[]; };

layout(push_constant) uniform P {
  uint rows;  // batch · len
  uint len;
  uint d;
  uint d4;    // ceil(d / 4)
  uint vocab;
  uint pos_offset;
  uint has_pos;
  uint groups_per_row;
  float scale;
  uint has_pos_ids;
  uint max_pos;  // rows of positions
  // The table rows this dispatch binds (all of them unless the table is larger
  // than one binding): [v0, v1), starting at element t_off of the binding.
  uint v0, v1, t_off;
} p;

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
    if (ALIGNED) {
      vec4 v = vec4(table4[t_base / 4 + u]) * p.scale;
      if (p.has_pos != 0) v += vec4(pos4[p_base / 4 + u]);
      o4[o_base / 4 + u] = v;
    } else {
      for (uint c = 0; c < 4; ++c) {
        const uint col = 4 * u + c;
        if (col >= p.d) break;
        float v = float(table[t_base + col]) * p.scale;
        if (p.has_pos != 0) v += float(pos[p_base + col]);
        o[o_base + col] = v;
      }
    }
  }
}
