#version 450
// y = LayerNorm(x + residual)·gamma + beta. A workgroup normalises ROWS rows
// one after the other (gamma and beta stay in its registers). Each row is read once into registers (ITEMS vec4 per invocation) and the
// statistics are two passes over those registers: mean, then the sum of
// squared deviations (E[x²]−E[x]² would cancel on rows with a large mean).
// Values are held relative to the row's first element (x and residual each
// shifted by their own), which is exact for elements near it, so a row like
// 1000 + 0.01·noise keeps the precision of its noise rather than of 1000.
// Rows longer than WG·ITEMS vec4 stream from memory in each pass instead.
// Two workgroup sums per row (lib/reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/vec.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 1;      // vec4 units per invocation held in registers
layout(constant_id = 2) const bool ALIGNED = false; // d % 4 == 0: rows are vec4-aligned
layout(constant_id = 3) const uint ROWS = 1;        // rows per workgroup
const uint WG = gl_WorkGroupSize.x;
#define REDUCE_FLOAT 1
#include "lib/reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer R { float res[]; };
layout(std430, binding = 1) readonly buffer R4 { vec4 res4[]; };
layout(std430, binding = 2) readonly buffer G { WTYPE gamma[]; };
layout(std430, binding = 2) readonly buffer G4 { WQUAD gamma4[]; };
layout(std430, binding = 3) readonly buffer B { WTYPE beta[]; };
layout(std430, binding = 3) readonly buffer B4 { WQUAD beta4[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) writeonly buffer Y4 { vec4 y4[]; };
#include "push/layernorm.h"

LOAD4_VIEW(load_x, x, x4, ALIGNED)
LOAD4_VIEW(load_res, res, res4, ALIGNED)
LOAD4_VIEW_OF(load_gamma, gamma, gamma4, ALIGNED, W_F16)
LOAD4_VIEW_OF(load_beta, beta, beta4, ALIGNED, W_F16)
STORE4_VIEW(store_y, y, y4, ALIGNED)

float pivot_x, pivot_r;  // the row's first x and residual

// Columns 4u..4u+3 of row `base`, (x − pivot_x) + (residual − pivot_r), zero past the row's end.
vec4 load_row(uint base, uint u) {
  vec4 v = load_x(base, 4 * u, p.d) - pivot_x;
  if (p.has_residual != 0) v += load_res(base, 4 * u, p.d) - pivot_r;
  return ALIGNED ? v : zero_tail(v, 4 * u, p.d);
}

// Deviations from the mean, zero past the row's end.
vec4 centered(vec4 v, uint u, float mean) { return ALIGNED ? v - mean : zero_tail(v - mean, 4 * u, p.d); }

void main() {
  const uint first = linear_group_id() * ROWS;
  if (first >= p.rows) return;  // workgroup-uniform
  const uint tid = gl_LocalInvocationID.x;
  const bool cached = p.d4 <= WG * ITEMS;

  // gamma and beta stay in registers for the workgroup's ROWS rows.
  vec4 v[ITEMS], g[ITEMS], b[ITEMS];
  if (cached) {
    for (uint k = 0; k < ITEMS; ++k) {
      uint u = tid + k * WG;
      g[k] = u < p.d4 ? load_gamma(0, 4 * u, p.d) : vec4(0);
      b[k] = u < p.d4 ? load_beta(0, 4 * u, p.d) : vec4(0);
    }
  }

  for (uint row = first; row < min(first + ROWS, p.rows); ++row) {
    const uint base = row * p.d;
    pivot_x = x[base];
    pivot_r = p.has_residual != 0 ? res[base] : 0.0;

    float s = 0.0;
    if (cached) {
      for (uint k = 0; k < ITEMS; ++k) {
        uint u = tid + k * WG;
        v[k] = u < p.d4 ? load_row(base, u) : vec4(0);
        s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
      }
    } else {
      for (uint u = tid; u < p.d4; u += WG) {
        vec4 t = load_row(base, u);
        s += (t.x + t.y) + (t.z + t.w);
      }
    }
    s = workgroup_sum(s);
    const float mean = s / float(p.d);

    float q = 0.0;
    if (cached) {
      for (uint k = 0; k < ITEMS; ++k) {
        uint u = tid + k * WG;
        if (u < p.d4) {
          vec4 dv = centered(v[k], u, mean);
          q += dot(dv, dv);
        }
      }
    } else {
      for (uint u = tid; u < p.d4; u += WG) {
        vec4 dv = centered(load_row(base, u), u, mean);
        q += dot(dv, dv);
      }
    }
    q = workgroup_sum(q);
    const float rstd = inversesqrt(q / float(p.d) + p.eps);

    if (cached) {
      for (uint k = 0; k < ITEMS; ++k) {
        uint u = tid + k * WG;
        if (u < p.d4) store_y(base, 4 * u, p.d, (v[k] - mean) * rstd * g[k] + b[k]);
      }
    } else {
      for (uint u = tid; u < p.d4; u += WG)
        store_y(base, 4 * u, p.d, (load_row(base, u) - mean) * rstd * load_gamma(0, 4 * u, p.d) + load_beta(0, 4 * u, p.d));
    }
  }
}
