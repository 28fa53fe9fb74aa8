#version 450
// Y = act(X·Wᵀ + b) + R with register blocking. A workgroup computes a BM×BN
// tile of Y, each invocation a TM×TN block of it, four K steps at a time.
//
// STAGED (variants "tiled", "tiled_small"): the BM×BK and BN×BK tiles of X and
// W go through shared memory; X [M, K] and W [N, K] are both K-contiguous, so
// lanes load neighbouring vec4s of a row, and the tiles stay K-contiguous so
// the inner loop reads vec4s along K for both operands. What GPUs want.
// Not STAGED (variant "blocked"): each invocation reads its rows of X and W
// straight from the buffers, no shared memory and no barriers. On a CPU device
// (lanes are SIMD lanes, caches do the staging) that is ~2.5x faster.
// TEXEL (-D, variant "texel"): X and W are read through uniform texel buffers
// (samplerBuffer: RGBA texels when VEC4, else R texels read one at a time).
// On lavapipe a storage-buffer load is a loop over the lanes with a bounds
// check and a branch in each, while a texel fetch is a straight gather: the
// loads, which took ~60 % of the blocked kernel's time, get cheaper.
// BCAST (-D, with TEXEL; variant "broadcast"): the lanes of a subgroup share
// their rows of X (BN/TN is a multiple of the subgroup size SG), so each lane
// fetches one of every SG rows and subgroupShuffle hands it to the others: a
// register shuffle instead of TM gathers per K step on a CPU device.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/vec.glsl"

layout(local_size_x_id = 0) in;  // must be (BM/TM)·(BN/TN)
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;  // multiple of 4 (STAGED only)
layout(constant_id = 4) const uint TM = 8;
layout(constant_id = 5) const uint TN = 8;
layout(constant_id = 6) const bool VEC4 = true;  // K % 4 == 0: every row starts 16-byte aligned
layout(constant_id = 7) const bool STAGED = true;
layout(constant_id = 8) const uint SG = 8;  // subgroup size (BCAST only)
layout(constant_id = 9) const uint KU = 1;  // vec4 K steps per loop iteration (BCAST only)
// STAGED only: the next step's tiles are read into registers while this step's
// are multiplied out of shared memory, so the reads' latency hides behind the
// arithmetic (at RA + RB more vec4 registers an invocation, 2 for 64×64 tiles).
layout(constant_id = 10) const bool PREFETCH = false;
#define ACT_ID 11

#ifndef TEXEL
#define TEXEL 0
#endif
#if BCAST
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#if TEXEL
layout(binding = 0) uniform samplerBuffer xt;  // R32G32B32A32_SFLOAT (VEC4) or R32_SFLOAT
#if WQ
layout(binding = 1) uniform usamplerBuffer wt;  // block-format W: R32_UINT words (lib/quant.glsl)
#else
layout(binding = 1) uniform samplerBuffer wt;  // the same, R16G16B16A16_SFLOAT or R16_SFLOAT for fp16 W
#endif
#else
// The vec4 and scalar views alias the same bindings.
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer W { WTYPE w[]; };
layout(std430, binding = 1) readonly buffer W4 { WQUAD w4[]; };  // as_vec4() reads a quad
#endif
#include "lib/gemm_epilogue.glsl"

const uint WG = (BM / TM) * (BN / TN);
const uint KQ = BK / 4;  // vec4s per tile row
shared vec4 As[STAGED ? BM * KQ : 1];
shared vec4 Bs[STAGED ? BN * KQ : 1];

// Four elements of the row that starts at element `base` (row·K), from column k; zeros past K.
#if TEXEL
#define LOAD4_TEXEL(NAME, T)                                                  \
  vec4 NAME(uint base_, uint k_, uint n_) {                                   \
    if (VEC4) return texelFetch(T, int((base_ + k_) / 4));                    \
    vec4 v_ = vec4(0.0);                                                      \
    [[unroll]] for (uint c_ = 0; c_ < 4; ++c_)                                \
      if (k_ + c_ < n_) v_[c_] = texelFetch(T, int(base_ + k_ + c_)).x;       \
    return v_;                                                                \
  }
LOAD4_TEXEL(load_x, xt)
#if WQ
#define QWORD(i) texelFetch(wt, int(i)).x
#else
LOAD4_TEXEL(load_w, wt)
#endif
#else
LOAD4_VIEW(load_x, x, x4, VEC4)
#if WQ
#define QBUF w
#endif
#endif
#if WQ  // block-quantized W (lib/quant.glsl), dequantized in registers
#include "lib/quant.glsl"
vec4 load_w(uint base, uint k, uint n) {
  if (VEC4) return q_at4(base + k);
  vec4 v = vec4(0.0);
  [[unroll]] for (uint c = 0; c < 4; ++c)
    if (k + c < n) v[c] = q_at(base + k + c);
  return v;
}
#elif !TEXEL
LOAD4_VIEW_OF(load_w, w, w4, VEC4, W_F16)
#endif

float acc[TM][TN];

// STAGED: the vec4s of step k0's tiles of X (BM × BK) and W (BN × BK) this
// invocation loads, zeros past M, N and K.
const uint RA = (BM * KQ + WG - 1) / WG, RB = (BN * KQ + WG - 1) / WG;
void read_tiles(uint k0, uint m0, uint n0, out vec4 ra[RA], out vec4 rb[RB]) {
  const uint lid = gl_LocalInvocationID.x;
  [[unroll]] for (uint r = 0; r < RA; ++r) {
    const uint e = r * WG + lid, m = m0 + e / KQ, k = k0 + 4 * (e % KQ);
    ra[r] = e < BM * KQ && m < p.M && k < p.K ? load_x(p.x_off + m * p.K, k, p.K) : vec4(0);
  }
  [[unroll]] for (uint r = 0; r < RB; ++r) {
    const uint e = r * WG + lid, n = n0 + e / KQ, k = k0 + 4 * (e % KQ);
    rb[r] = e < BN * KQ && n < p.N && k < p.K ? load_w(p.w_off + n * p.K, k, p.K) : vec4(0);
  }
}

void accumulate(vec4 a[TM], vec4 b[TN]) {
  [[unroll]] for (uint i = 0; i < TM; ++i)
    [[unroll]] for (uint j = 0; j < TN; ++j)
      acc[i][j] = fma(a[i].w, b[j].w, fma(a[i].z, b[j].z, fma(a[i].y, b[j].y, fma(a[i].x, b[j].x, acc[i][j]))));
}

#if BCAST
const uint CHUNKS = (TM + SG - 1) / SG;  // rows of X each lane fetches for the subgroup

// One vec4 step along K: each lane fetches its CHUNKS rows of X, the subgroup
// shares them by shuffles, and each lane fetches its TN rows of W.
void broadcast_step(uint k, uint xmine[CHUNKS], uint wrow[TN]) {
  vec4 xv[CHUNKS], a[TM], b[TN];
  [[unroll]] for (uint c = 0; c < CHUNKS; ++c) xv[c] = load_x(xmine[c], k, p.K);
  [[unroll]] for (uint i = 0; i < TM; ++i) a[i] = subgroupShuffle(xv[i / SG], i % SG);
  [[unroll]] for (uint j = 0; j < TN; ++j) b[j] = load_w(wrow[j], k, p.K);
  accumulate(a, b);
}
#endif

void main() {
  const uint g = linear_group_id();
  if (g >= p.total) return;
  // ks: this workgroup's chunk of K (split-K, staged only; else 0 of 1).
  const uint tiles = p.total / p.ksplit, t = g % tiles, ks = g / tiles;
  const uint m0 = (t / p.groups_n) * BM, n0 = (t % p.groups_n) * BN;
  const uint lid = gl_LocalInvocationID.x;
  // Invocation (tm, tn) owns rows tm + i·(BM/TM) and columns tn + j·(BN/TN):
  // neighbouring lanes write neighbouring columns of Y.
  uint tn = lid % (BN / TN), tm = lid / (BN / TN);
#if BCAST
  // Lanes that share rows must be one subgroup: with subgroups of SG lanes
  // the blocks follow the subgroup ids, whatever the driver's numbering; any
  // other subgroup size takes the plain loads below.
  const bool shared_rows = gl_SubgroupSize == SG && gl_NumSubgroups * SG == WG;
  if (shared_rows) {
    const uint nb = (BN / TN) / SG;  // subgroups across the tile
    tn = (gl_SubgroupID % nb) * SG + gl_SubgroupInvocationID;
    tm = gl_SubgroupID / nb;
  }
#endif

  [[unroll]] for (uint i = 0; i < TM; ++i)
    [[unroll]] for (uint j = 0; j < TN; ++j) acc[i][j] = 0.0;

  vec4 a[TM], b[TN];
  if (STAGED) {
    // Each invocation's vec4s of a step's tiles (element e = r·WG + lid), read
    // by read_tiles into ra and rb, then stored into As and Bs.
    vec4 ra[RA], rb[RB];
    // A chunk is whole BK steps, so only the last one meets K's end.
    const uint k_end = min(p.K, (ks + 1) * p.kchunk);
    if (PREFETCH) read_tiles(ks * p.kchunk, m0, n0, ra, rb);
    for (uint k0 = ks * p.kchunk; k0 < k_end; k0 += BK) {
      if (!PREFETCH) read_tiles(k0, m0, n0, ra, rb);
      [[unroll]] for (uint r = 0; r < RA; ++r)
        if (r * WG + lid < BM * KQ) As[r * WG + lid] = ra[r];
      [[unroll]] for (uint r = 0; r < RB; ++r)
        if (r * WG + lid < BN * KQ) Bs[r * WG + lid] = rb[r];
      barrier();
      // The next step's reads are in flight while this one's products run.
      if (PREFETCH && k0 + BK < k_end) read_tiles(k0 + BK, m0, n0, ra, rb);
      [[unroll]] for (uint q = 0; q < KQ; ++q) {
        [[unroll]] for (uint i = 0; i < TM; ++i) a[i] = As[(tm + i * (BM / TM)) * KQ + q];
        [[unroll]] for (uint j = 0; j < TN; ++j) b[j] = Bs[(tn + j * (BN / TN)) * KQ + q];
        accumulate(a, b);
      }
      barrier();
    }
  } else {
    // Rows past the end re-read the last row (no branch in the loop); their results are dropped.
    uint xrow[TM], wrow[TN];
    [[unroll]] for (uint i = 0; i < TM; ++i) xrow[i] = p.x_off + min(m0 + tm + i * (BM / TM), p.M - 1) * p.K;
    [[unroll]] for (uint j = 0; j < TN; ++j) wrow[j] = p.w_off + min(n0 + tn + j * (BN / TN), p.N - 1) * p.K;
#if BCAST
    // Lane l fetches rows l, SG + l, ... of the TM; row i comes from lane i % SG.
    uint xmine[CHUNKS];
    [[unroll]] for (uint c = 0; c < CHUNKS; ++c)
      xmine[c] = p.x_off + min(m0 + tm + min(c * SG + gl_SubgroupInvocationID, TM - 1) * (BM / TM), p.M - 1) * p.K;
    if (shared_rows) {
      // KU steps a loop iteration, then the rest one by one: fewer loop-carried
      // updates, each of which lavapipe turns into a masked blend of every accumulator.
      uint k = 0;
      for (; k + 4 * (KU - 1) < p.K; k += 4 * KU)
        [[unroll]] for (uint u = 0; u < KU; ++u) broadcast_step(k + 4 * u, xmine, wrow);
      for (; k < p.K; k += 4) broadcast_step(k, xmine, wrow);
    } else
#endif
#if WQ
    // Block formats (K a multiple of 32): a sub-block of 32 values at a time,
    // each row of W dequantized once per step with its scale(s) read once
    // (lib/quant.glsl's q_unit32), then applied to the TM rows of X.
    for (uint k = 0; k < p.K; k += 32u) {
      vec4 wf[TN * 8];
      [[unroll]] for (uint j = 0; j < TN; ++j) {
        const uint v0 = wrow[j] + k;
        vec4 q[8], ab;
        q_unit32((v0 / QB) * QBYTES, (v0 % QB) / 32u, q, ab);
        [[unroll]] for (uint i = 0; i < 4; ++i) {
          wf[j * 8 + i] = fma(q[i], vec4(ab.x), vec4(ab.y));
          wf[j * 8 + 4 + i] = fma(q[4 + i], vec4(ab.z), vec4(ab.w));
        }
      }
      [[unroll]] for (uint s = 0; s < 8; ++s) {
        [[unroll]] for (uint i = 0; i < TM; ++i) a[i] = load_x(xrow[i], k + 4u * s, p.K);
        [[unroll]] for (uint j = 0; j < TN; ++j) b[j] = wf[j * 8 + s];
        accumulate(a, b);
      }
    }
#else
    for (uint k = 0; k < p.K; k += 4) {
      [[unroll]] for (uint i = 0; i < TM; ++i) a[i] = load_x(xrow[i], k, p.K);
      [[unroll]] for (uint j = 0; j < TN; ++j) b[j] = load_w(wrow[j], k, p.K);
      accumulate(a, b);
    }
#endif
  }

  // The bias once per column, not once per output.
  float col_bias[TN];
  [[unroll]] for (uint j = 0; j < TN; ++j) col_bias[j] = bias_at(min(n0 + tn + j * (BN / TN), p.N - 1));
  [[unroll]] for (uint i = 0; i < TM; ++i) {
    const uint m = m0 + tm + i * (BM / TM);
    [[unroll]] for (uint j = 0; j < TN; ++j) {
      const uint n = n0 + tn + j * (BN / TN);
      if (m < p.M && n < p.N) store_output(acc[i][j] + col_bias[j], ks * p.M + m, n);
    }
  }
}
