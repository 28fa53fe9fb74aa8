#version 450
// Y = act(X·Wᵀ + b) + R with shared-memory tiles and register blocking.
// A workgroup computes a BM×BN tile of Y; each invocation a TM×TN block of it.
// X [M, K] and W [N, K] are both K-contiguous, so each BM×BK (BN×BK) tile is
// loaded row by row with lanes reading neighbouring vec4s, and kept K-contiguous
// in shared memory: the inner loop then reads vec4s along K for both operands.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "activation.glsl"

layout(local_size_x_id = 0) in;  // must be (BM/TM)·(BN/TN)
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;  // multiple of 4
layout(constant_id = 4) const uint TM = 8;
layout(constant_id = 5) const uint TN = 8;
layout(constant_id = 6) const bool VEC4 = true;  // K % 4 == 0: every row starts 16-byte aligned

// The vec4 and scalar views alias the same bindings.
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer W { WTYPE w[]; };
layout(std430, binding = 1) readonly buffer W4 { WTYPE4 w4[]; };
layout(std430, binding = 2) readonly buffer Bias { WTYPE bias[]; };
layout(std430, binding = 3) readonly buffer R { float res[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint M, N, K, tiles_n, total;
  uint act;    // ACT_* (activation.glsl)
  uint flags;  // 1: add bias, 2: add residual
} p;

const uint WG = (BM / TM) * (BN / TN);
const uint KQ = BK / 4;  // vec4s per tile row
shared vec4 As[BM * KQ];
shared vec4 Bs[BN * KQ];

vec4 load_x(uint row, uint k) {
  if (row >= p.M || k >= p.K) return vec4(0);
  uint i = row * p.K + k;
  if (VEC4) return x4[i / 4];
  vec4 v = vec4(0);
  [[unroll]] for (uint c = 0; c < 4; ++c)
    if (k + c < p.K) v[c] = x[i + c];
  return v;
}

vec4 load_w(uint row, uint k) {
  if (row >= p.N || k >= p.K) return vec4(0);
  uint i = row * p.K + k;
  if (VEC4) return vec4(w4[i / 4]);
  vec4 v = vec4(0);
  [[unroll]] for (uint c = 0; c < 4; ++c)
    if (k + c < p.K) v[c] = float(w[i + c]);
  return v;
}

void main() {
  const uint g = linear_group_id();
  if (g >= p.total) return;
  const uint m0 = (g / p.tiles_n) * BM, n0 = (g % p.tiles_n) * BN;
  const uint lid = gl_LocalInvocationID.x;
  // Invocation (tm, tn) owns rows tm + i·(BM/TM) and columns tn + j·(BN/TN):
  // neighbouring lanes write neighbouring columns of Y.
  const uint tn = lid % (BN / TN), tm = lid / (BN / TN);

  float acc[TM][TN];
  [[unroll]] for (uint i = 0; i < TM; ++i)
    [[unroll]] for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0; k0 < p.K; k0 += BK) {
    [[unroll]] for (uint r = 0; r < (BM * KQ + WG - 1) / WG; ++r) {
      const uint e = r * WG + lid;
      if (e < BM * KQ) As[e] = load_x(m0 + e / KQ, k0 + 4 * (e % KQ));
    }
    [[unroll]] for (uint r = 0; r < (BN * KQ + WG - 1) / WG; ++r) {
      const uint e = r * WG + lid;
      if (e < BN * KQ) Bs[e] = load_w(n0 + e / KQ, k0 + 4 * (e % KQ));
    }
    barrier();
    [[unroll]] for (uint q = 0; q < KQ; ++q) {
      vec4 a[TM], b[TN];
      [[unroll]] for (uint i = 0; i < TM; ++i) a[i] = As[(tm + i * (BM / TM)) * KQ + q];
      [[unroll]] for (uint j = 0; j < TN; ++j) b[j] = Bs[(tn + j * (BN / TN)) * KQ + q];
      [[unroll]] for (uint i = 0; i < TM; ++i)
        [[unroll]] for (uint j = 0; j < TN; ++j)
          acc[i][j] = fma(a[i].w, b[j].w, fma(a[i].z, b[j].z, fma(a[i].y, b[j].y, fma(a[i].x, b[j].x, acc[i][j]))));
    }
    barrier();
  }

  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + tm + i * (BM / TM);
    [[unroll]] for (uint j = 0; j < TN; ++j) {
      const uint n = n0 + tn + j * (BN / TN);
      if (m >= p.M || n >= p.N) continue;
      float v = acc[i][j];
      if ((p.flags & 1u) != 0) v += float(bias[n]);
      v = activate(v, p.act);
      if ((p.flags & 2u) != 0) v += res[m * p.N + n];
      y[m * p.N + n] = v;
    }
  }
}
