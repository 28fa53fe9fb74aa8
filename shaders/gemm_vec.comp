#version 450
// Y = act(X·Wᵀ + b) + R for a few rows of X (decoding: one token). Reading W
// is the cost, so each workgroup reads COLS rows of W once, with lanes on
// neighbouring vec4s along K, applies them to ROWS rows of X, and reduces each
// of the ROWS·COLS dot products across the workgroup.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 1;  // rows of X per workgroup
layout(constant_id = 2) const uint COLS = 4;  // rows of W (columns of Y) per workgroup
layout(constant_id = 3) const bool VEC4 = true;  // K % 4 == 0: every row starts 16-byte aligned
#define ACT_ID 4

// TEXEL (-D): X and W are uniform texel buffers, RGBA texels when VEC4, else
// R (gemm_tiled.comp says why: on lavapipe a fetch is a gather, a storage
// load a loop over the lanes). The sums are the same either way.
#ifndef TEXEL
#define TEXEL 0
#endif
#if TEXEL
layout(binding = 0) uniform samplerBuffer xt;
#if WQ  // block-format W as R32_UINT words (lib/quant.glsl)
layout(binding = 1) uniform usamplerBuffer wt;
#define QWORD(i) texelFetch(wt, int(i)).x
#include "lib/quant.glsl"
#else
layout(binding = 1) uniform samplerBuffer wt;
#endif
#define X4_AT(i) texelFetch(xt, int(i))
#define W4_AT(i) texelFetch(wt, int(i))
#define X_AT(i) texelFetch(xt, int(i)).x
#define W_AT(i) texelFetch(wt, int(i)).x
#else
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer W { WTYPE w[]; };
layout(std430, binding = 1) readonly buffer W4 { WQUAD w4[]; };  // as_vec4() reads a quad
#define X4_AT(i) x4[i]
#define X_AT(i) x[i]
#if WQ  // block-quantized W (lib/quant.glsl), dequantized in registers
#define QBUF w
#include "lib/quant.glsl"
#define W4_AT(i) q_at4(4u * (i))
#define W_AT(i) q_at(i)
#else
#define W4_AT(i) as_vec4(w4[i])
#define W_AT(i) AT(W_F16, w, i)
#endif
#endif
#include "lib/gemm_epilogue.glsl"

const uint OUTS = ROWS * COLS;
shared float partial[OUTS * gl_WorkGroupSize.x];

void main() {
  const uint g = linear_group_id();
  if (g >= p.total) return;
  const uint m0 = (g / p.groups_n) * ROWS, n0 = (g % p.groups_n) * COLS;
  const uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;

  // Rows past the end re-read the last row (no branch in the loop); their sums are dropped.
  uint xrow[ROWS], wrow[COLS];
  [[unroll]] for (uint r = 0; r < ROWS; ++r) xrow[r] = p.x_off + min(m0 + r, p.M - 1) * p.K;
  [[unroll]] for (uint c = 0; c < COLS; ++c) wrow[c] = p.w_off + min(n0 + c, p.N - 1) * p.K;

  float acc[OUTS];
  [[unroll]] for (uint o = 0; o < OUTS; ++o) acc[o] = 0.0;
#if WQ
  // Block formats (K a multiple of 32): each lane takes whole units of
  // Q_GROUP sub-blocks of 32 values (lib/quant.glsl's q_unit_lanes: their
  // words read once, their scales once each), and dots them with X: per half
  // of 16, a·Σx·q + b·Σx, Σx shared by the COLS rows of W.
  for (uint u = lid; u < p.K / (32u * Q_GROUP); u += wg) {
    vec4 xv[ROWS * 8 * Q_GROUP];
    vec2 xs[ROWS * Q_GROUP];
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
      [[unroll]] for (uint g = 0; g < Q_GROUP; ++g) {
        const uint x0 = (r * Q_GROUP + g) * 8;
        [[unroll]] for (uint i = 0; i < 8; ++i) xv[x0 + i] = X4_AT((xrow[r] + 32u * q_unit_sub(u, g)) / 4u + i);
        xs[r * Q_GROUP + g] = vec2(dot(xv[x0] + xv[x0 + 1] + xv[x0 + 2] + xv[x0 + 3], vec4(1.0)),
                                   dot(xv[x0 + 4] + xv[x0 + 5] + xv[x0 + 6] + xv[x0 + 7], vec4(1.0)));
        // W's quants come unshifted, times 2^8b in byte lane b: x takes the 2^-8b.
        [[unroll]] for (uint i = 0; i < 8; ++i) xv[x0 + i] *= Q_LANE_SCALE;
      }
    }
    [[unroll]] for (uint c = 0; c < COLS; ++c) {
      const uint v0 = wrow[c] + 32u * q_unit_sub(u, 0);  // W's first value of the unit
      vec4 q[8 * Q_GROUP], ab[Q_GROUP];
      q_unit_lanes((v0 / QB) * QBYTES, (v0 % QB) / 32u, q, ab);
      [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        [[unroll]] for (uint g = 0; g < Q_GROUP; ++g) {
          const uint x0 = (r * Q_GROUP + g) * 8;
          // Four running sums a half, one fma a value, whatever a driver makes of dot().
          vec4 s0 = xv[x0] * q[8 * g], s1 = xv[x0 + 4] * q[8 * g + 4];
          [[unroll]] for (uint i = 1; i < 4; ++i) {
            s0 = fma(xv[x0 + i], q[8 * g + i], s0);
            s1 = fma(xv[x0 + 4 + i], q[8 * g + 4 + i], s1);
          }
          const vec4 a = ab[g];
          const vec2 sx = xs[r * Q_GROUP + g];
          acc[r * COLS + c] += a.x * dot(s0, vec4(1.0)) + a.y * sx.x + a.z * dot(s1, vec4(1.0)) + a.w * sx.y;
        }
      }
    }
  }
#else
  if (VEC4) {
    for (uint k = 4 * lid; k < p.K; k += 4 * wg) {
      vec4 xv[ROWS];
      [[unroll]] for (uint r = 0; r < ROWS; ++r) xv[r] = X4_AT((xrow[r] + k) / 4);
      [[unroll]] for (uint c = 0; c < COLS; ++c) {
        vec4 wv = W4_AT((wrow[c] + k) / 4);
        [[unroll]] for (uint r = 0; r < ROWS; ++r) acc[r * COLS + c] += dot(xv[r], wv);
      }
    }
  } else {
    for (uint k = lid; k < p.K; k += wg) {
      float xv[ROWS];
      [[unroll]] for (uint r = 0; r < ROWS; ++r) xv[r] = X_AT(xrow[r] + k);
      [[unroll]] for (uint c = 0; c < COLS; ++c) {
        float wv = W_AT(wrow[c] + k);
        [[unroll]] for (uint r = 0; r < ROWS; ++r) acc[r * COLS + c] = fma(xv[r], wv, acc[r * COLS + c]);
      }
    }
  }
#endif

  // Sum each output over the workgroup: per subgroup first when we can, then
  // across subgroups (or lanes) through shared memory. Not lib/reduce.glsl:
  // OUTS sums share one barrier, and each is finished by one invocation (the
  // one that writes it) rather than by all of them.
#if USE_SUBGROUP
  [[unroll]] for (uint o = 0; o < OUTS; ++o) acc[o] = subgroupAdd(acc[o]);
  const uint parts = gl_NumSubgroups;
  if (parts > 1) {
    if (subgroupElect())
      [[unroll]] for (uint o = 0; o < OUTS; ++o) partial[o * wg + gl_SubgroupID] = acc[o];
    barrier();
  }
#else
  const uint parts = wg;
  [[unroll]] for (uint o = 0; o < OUTS; ++o) partial[o * wg + lid] = acc[o];
  barrier();
#endif

  // Invocation o finishes output o.
  [[unroll]] for (uint o = 0; o < OUTS; ++o) {
    if (lid != o) continue;
    const uint m = m0 + o / COLS, n = n0 + o % COLS;
    if (m >= p.M || n >= p.N) continue;
    float v = acc[o];
    if (parts > 1) {
      v = 0.0;
      for (uint s = 0; s < parts; ++s) v += partial[o * wg + s];
    }
    store_output(v + bias_at(n), m, n);
  }
}
