#version 450
// y = LayerNorm(x + residual)·gamma + beta. A workgroup normalises ROWS rows
// one after the other (gamma and beta stay in its registers). Each row is read once into registers (ITEMS vec4 per invocation) and the
// statistics are two passes over those registers: mean, then the sum of
// squared deviations (E[x²]−E[x]² would cancel on rows with a large mean).
// Values are held relative to the row's first element (x and residual each
// shifted by their own), which is exact for elements near it, so a row like
// 1000 + 0.01·noise keeps the precision of its noise rather than of 1000.
// Rows longer than WG·ITEMS vec4 stream from memory in each pass instead.
// Two reductions per row, so two barriers with subgroups.
#extension GL_GOOGLE_include_directive : require
#if defined(USE_SUBGROUP) && USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 1;      // vec4 units per invocation held in registers
layout(constant_id = 2) const bool ALIGNED = false; // d % 4 == 0: rows are vec4-aligned
layout(constant_id = 3) const uint ROWS = 1;        // rows per workgroup
const uint WG = gl_WorkGroupSize.x;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer R { float res[]; };
layout(std430, binding = 1) readonly buffer R4 { vec4 res4[]; };
layout(std430, binding = 2) readonly buffer G { WTYPE gamma[]; };
layout(std430, binding = 2) readonly buffer G4 { WTYPE4 gamma4[]; };
layout(std430, binding = 3) readonly buffer B { WTYPE beta[]; };
layout(std430, binding = 3) readonly buffer B4 { WTYPE4 beta4[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(std430, binding = 4) writeonly buffer Y4 { vec4 y4[]; };

layout(push_constant) uniform P {
  uint rows;
  uint d;
  uint d4;  // vec4 units per row, ceil(d / 4)
  float eps;
  uint has_residual;
} p;

float pivot_x, pivot_r;  // the row's first x and residual

// Columns 4u..4u+3 of row `base`, (x − pivot_x) + (residual − pivot_r), zero past the row's end.
vec4 load_row(uint base, uint u) {
  if (ALIGNED) {
    vec4 v = x4[base / 4 + u] - pivot_x;
    if (p.has_residual != 0) v += res4[base / 4 + u] - pivot_r;
    return v;
  }
  vec4 v = vec4(0);
  for (uint c = 0; c < 4; ++c) {
    uint col = 4 * u + c;
    if (col < p.d)
      v[c] = (x[base + col] - pivot_x) + (p.has_residual != 0 ? res[base + col] - pivot_r : 0.0);
  }
  return v;
}

// Deviations from the mean, zero past the row's end.
vec4 centered(vec4 v, uint u, float mean) {
  vec4 dv = v - mean;
  if (!ALIGNED) {
    for (uint c = 0; c < 4; ++c)
      if (4 * u + c >= p.d) dv[c] = 0.0;
  }
  return dv;
}

vec4 load_weight(uint u, bool is_beta) {
  if (ALIGNED) return is_beta ? vec4(beta4[u]) : vec4(gamma4[u]);
  vec4 w = vec4(0);
  for (uint c = 0; c < 4; ++c) {
    uint col = 4 * u + c;
    if (col < p.d) w[c] = is_beta ? float(beta[col]) : float(gamma[col]);
  }
  return w;
}

void store_row(uint base, uint u, vec4 yv) {
  if (ALIGNED) {
    y4[base / 4 + u] = yv;
    return;
  }
  for (uint c = 0; c < 4; ++c)
    if (4 * u + c < p.d) y[base + 4 * u + c] = yv[c];
}

#if defined(USE_SUBGROUP) && USE_SUBGROUP
shared float red0[WG];  // one slot per subgroup (at most WG of them)
shared float red1[WG];
// Every invocation sums the per-subgroup partials in the same order, so all
// of them get the same bits without a second barrier.
#define REDUCE(arr, s)                                              \
  {                                                                 \
    s = subgroupAdd(s);                                             \
    if (subgroupElect()) arr[gl_SubgroupID] = s;                    \
    barrier();                                                      \
    s = 0.0;                                                        \
    for (uint i = 0; i < gl_NumSubgroups; ++i) s += arr[i];         \
  }
#else
shared float red0[WG];
shared float red1[WG];
// Tree over the next power of two; separate arrays per reduction so the
// second one never overwrites what the first is still being read from.
#define REDUCE(arr, s)                                              \
  {                                                                 \
    arr[tid] = s;                                                   \
    barrier();                                                      \
    uint half_ = 1;                                                 \
    while (2 * half_ < WG) half_ *= 2;                              \
    for (; half_ > 0; half_ /= 2) {                                 \
      if (tid < half_ && tid + half_ < WG) arr[tid] += arr[tid + half_]; \
      barrier();                                                    \
    }                                                               \
    s = arr[0];                                                     \
  }
#endif

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
      g[k] = u < p.d4 ? load_weight(u, false) : vec4(0);
      b[k] = u < p.d4 ? load_weight(u, true) : vec4(0);
    }
  }

  // Each reduction has its own shared array, and a row's second barrier
  // orders the next row's writes after every read of this row's partials.
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
    REDUCE(red0, s)
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
    REDUCE(red1, q)
    const float rstd = inversesqrt(q / float(p.d) + p.eps);

    if (cached) {
      for (uint k = 0; k < ITEMS; ++k) {
        uint u = tid + k * WG;
        if (u < p.d4) store_row(base, u, (v[k] - mean) * rstd * g[k] + b[k]);
      }
    } else {
      for (uint u = tid; u < p.d4; u += WG)
        store_row(base, u, (load_row(base, u) - mean) * rstd * load_weight(u, false) + load_weight(u, true));
    }
  }
}
