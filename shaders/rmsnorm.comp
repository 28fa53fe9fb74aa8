#version 450
// y = x / sqrt(mean(x²) + eps) · gamma over each row: RMSNorm as T5 computes
// it (no mean subtracted, no beta; the mean square in fp32). A workgroup
// normalises ROWS rows one after another, gamma kept in its registers. A row
// is read once into registers (ITEMS vec4 per invocation) when it fits, else
// streamed from memory twice. One workgroup sum per row (lib/reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/vec.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 1;       // vec4 units per invocation held in registers
layout(constant_id = 2) const bool ALIGNED = false; // d % 4 == 0: rows are vec4-aligned
layout(constant_id = 3) const uint ROWS = 1;        // rows per workgroup
const uint WG = gl_WorkGroupSize.x;
#define REDUCE_FLOAT 1
#include "lib/reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer G { WTYPE gamma[]; };
layout(std430, binding = 1) readonly buffer G4 { WQUAD gamma4[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { vec4 y4[]; };
#include "push/rmsnorm.h"

LOAD4_VIEW(load_x, x, x4, ALIGNED)
LOAD4_VIEW_OF(load_gamma, gamma, gamma4, ALIGNED, W_F16)
STORE4_VIEW(store_y, y, y4, ALIGNED)

// Columns 4u..4u+3 of row `base`, zero past the row's end.
vec4 load_row(uint base, uint u) {
  const vec4 v = load_x(base, 4 * u, p.d);
  return ALIGNED ? v : zero_tail(v, 4 * u, p.d);
}

void main() {
  const uint first = linear_group_id() * ROWS;
  if (first >= p.rows) return;  // workgroup-uniform
  const uint tid = gl_LocalInvocationID.x;
  const bool cached = p.d4 <= WG * ITEMS;

  vec4 v[ITEMS], g[ITEMS];
  if (cached)
    for (uint k = 0; k < ITEMS; ++k) {
      const uint u = tid + k * WG;
      g[k] = u < p.d4 ? load_gamma(0, 4 * u, p.d) : vec4(0);
    }

  for (uint row = first; row < min(first + ROWS, p.rows); ++row) {
    const uint base = row * p.d;
    float q = 0.0;
    if (cached) {
      for (uint k = 0; k < ITEMS; ++k) {
        const uint u = tid + k * WG;
        v[k] = u < p.d4 ? load_row(base, u) : vec4(0);
        q += dot(v[k], v[k]);
      }
    } else {
      for (uint u = tid; u < p.d4; u += WG) {
        const vec4 t = load_row(base, u);
        q += dot(t, t);
      }
    }
    q = workgroup_sum(q);
    const float rrms = inversesqrt(q / float(p.d) + p.eps);

    if (cached) {
      for (uint k = 0; k < ITEMS; ++k) {
        const uint u = tid + k * WG;
        if (u < p.d4) store_y(base, 4 * u, p.d, v[k] * rrms * g[k]);
      }
    } else {
      for (uint u = tid; u < p.d4; u += WG)
        store_y(base, 4 * u, p.d, load_row(base, u) * rrms * load_gamma(0, 4 * u, p.d));
    }
  }
}
