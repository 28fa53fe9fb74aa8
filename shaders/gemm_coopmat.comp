#version 450
// Y = act(X·Wᵀ + b) + R on tensor cores (VK_NV_cooperative_matrix), variant
// "coopmat": fp32 X [M, K], W [N, K] in fp16, fp32 or a GGUF block format
// (WQ, dequantized to fp32 as it is staged), fp32 accumulation.
//
// A workgroup computes a BM×BN tile of Y with WM×WN subgroups, each a
// (BM/WM)×(BN/WN) block of 16×16 cooperative matrices. BK columns of K go
// through shared memory per step, as fp16 (the B operand, Wᵀ, is W's tile
// read column-major).
//
// fp32 values go in as two fp16 parts (split(), lib/coopmat.glsl), which keep
// them to about fp32's own rounding; products of fp16 values are exact in the
// fp32 accumulators.
//   fp16 W (exact as it is): acc1 += Xhi·W, acc2 += Xlo·W;
//                            Y = acc1·2⁸ + acc2·2⁻³ (two products a step).
//   fp32 or block W (split as X is):  acc1 += Xhi·Whi, acc2 += Xhi·Wlo + Xlo·Whi;
//                            Y = acc1·2¹⁶ + acc2·2⁵ (three products a step;
//   Xlo·Wlo, 2⁻²² of x·w, is left out).
// EMULATE_COOPMAT (variant coopmat_emulated): the matrices' operations done by
// the lanes (lib/coopmat.glsl), to check this kernel on any device.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;  // WM·WN subgroups of SG invocations
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 32;  // a multiple of 16
layout(constant_id = 4) const uint WM = 2;   // subgroups along M
layout(constant_id = 5) const uint WN = 2;   // subgroups along N
layout(constant_id = 6) const uint SG = 32;  // the subgroup size the plan requires
// The next step's tiles read into registers while this step's products run
// (the reads' latency hidden behind the tensor cores, at RX + RW more
// registers an invocation; knob PF).
layout(constant_id = 7) const bool PREFETCH = false;
#define ACT_ID 8

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { WTYPE w[]; };
#include "lib/gemm_epilogue.glsl"
#if WQ
#define QBUF w
#include "lib/quant.glsl"
#endif

const uint WG = WM * WN * SG;
#define CM_SUBGROUPS (WM * WN)
#include "lib/coopmat.glsl"
const uint CM = BM / (16 * WM);  // 16-row matrices per subgroup
const uint CN = BN / (16 * WN);  // 16-column matrices per subgroup
// Rows of the shared tiles padded by 8 halves (16 bytes): a matrix load's rows
// start in different banks, and every row start stays 16-byte aligned.
const uint LDS = BK + 8;
shared float16_t Xhi[BM * LDS];
shared float16_t Xlo[BM * LDS];
shared float16_t Ws[BN * LDS];  // W, or W's hi part (fp32 and block W)
#if !W_F16
shared float16_t Wlo[BN * LDS];
#endif
// One 16×16 fp32 block per subgroup, for the epilogue.
shared float Cs[WM * WN * 256];

#if W_F16
const float ACC1_SCALE = 256.0, ACC2_SCALE = 1.0 / 8.0;
#else
const float ACC1_SCALE = 65536.0, ACC2_SCALE = 32.0;
#endif

// This invocation's values of step k0's tiles (element e = r·WG + lid; zeros
// past M, N and K): X's BM × BK, and W's BN × BK (block W: vec4s of it).
const uint RX = (BM * BK + WG - 1) / WG;
#if WQ
const uint RW = (BN * BK / 4 + WG - 1) / WG;
#define WREG vec4
#else
const uint RW = (BN * BK + WG - 1) / WG;
#define WREG float
#endif
void read_tiles(uint k0, uint m0, uint n0, out float rx[RX], out WREG rw[RW]) {
  const uint lid = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0; i < RX; ++i) {
    const uint e = i * WG + lid, m = m0 + e / BK, k = k0 + e % BK;
    rx[i] = e < BM * BK && m < p.M && k < p.K ? x[p.x_off + m * p.K + k] : 0.0;
  }
  [[unroll]] for (uint i = 0; i < RW; ++i) {
#if WQ
    // Blocks dequantized four values at a time (K is whole blocks, so k < K here).
    const uint e = i * WG + lid, n = n0 + e / (BK / 4), k = k0 + 4 * (e % (BK / 4));
    rw[i] = e < BN * BK / 4 && n < p.N && k < p.K ? q_at4(p.w_off + n * p.K + k) : vec4(0.0);
#else
    const uint e = i * WG + lid, n = n0 + e / BK, k = k0 + e % BK;
    rw[i] = e < BN * BK && n < p.N && k < p.K ? float(AT(W_F16, w, p.w_off + n * p.K + k)) : 0.0;
#endif
  }
}

// Stores what read_tiles read into the shared tiles, split into fp16 parts.
void store_tiles(float rx[RX], WREG rw[RW]) {
  const uint lid = gl_LocalInvocationID.x;
  [[unroll]] for (uint i = 0; i < RX; ++i) {
    const uint e = i * WG + lid, r = e / BK, c = e % BK;
    if (e < BM * BK) {
      const f16vec2 v = split(rx[i]);
      Xhi[r * LDS + c] = v.x;
      Xlo[r * LDS + c] = v.y;
    }
  }
  [[unroll]] for (uint i = 0; i < RW; ++i) {
#if WQ
    const uint e = i * WG + lid, r = e / (BK / 4), c = 4 * (e % (BK / 4));
    if (e < BN * BK / 4)
      [[unroll]] for (uint j = 0; j < 4; ++j) {
        const f16vec2 parts = split(rw[i][j]);
        Ws[r * LDS + c + j] = parts.x;
        Wlo[r * LDS + c + j] = parts.y;
      }
#else
    const uint e = i * WG + lid, r = e / BK, c = e % BK;
    if (e < BN * BK) {
#if W_F16
      Ws[r * LDS + c] = float16_t(rw[i]);
#else
      const f16vec2 parts = split(rw[i]);
      Ws[r * LDS + c] = parts.x;
      Wlo[r * LDS + c] = parts.y;
#endif
    }
#endif
  }
}

void main() {
  const uint g = linear_group_id();
  if (g >= p.total) return;  // uniform across the workgroup
  // ks: this workgroup's chunk of K (split-K; else 0 of 1).
  const uint tiles = p.total / p.ksplit, t = g % tiles, ks = g / tiles;
  const uint m0 = (t / p.groups_n) * BM, n0 = (t % p.groups_n) * BN;
  const uint lid = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint sm = (sg / WN) * CM * 16, sn = (sg % WN) * CN * 16;  // this subgroup's block in the tile

  CM32 acc1[CM * CN], acc2[CM * CN];
  [[unroll]] for (uint i = 0; i < CM * CN; ++i) {
    acc1[i] = cm_zero();
    acc2[i] = cm_zero();
  }

  float rx[RX];
  WREG rw[RW];
  // A chunk is whole BK steps, so only the last one meets K's end.
  const uint k_end = min(p.K, (ks + 1) * p.kchunk);
  if (PREFETCH) read_tiles(ks * p.kchunk, m0, n0, rx, rw);
  for (uint k0 = ks * p.kchunk; k0 < k_end; k0 += BK) {
    if (!PREFETCH) read_tiles(k0, m0, n0, rx, rw);
    store_tiles(rx, rw);
    barrier();
    // The next step's reads are in flight while this one's products run.
    if (PREFETCH && k0 + BK < k_end) read_tiles(k0 + BK, m0, n0, rx, rw);
    [[unroll]] for (uint kk = 0; kk < BK; kk += 16) {
      CM16 b[CN];
      [[unroll]] for (uint j = 0; j < CN; ++j) CM_LOAD(b[j], Ws, (sn + j * 16) * LDS + kk, LDS, true);
#if !W_F16
      CM16 blo[CN];
      [[unroll]] for (uint j = 0; j < CN; ++j) CM_LOAD(blo[j], Wlo, (sn + j * 16) * LDS + kk, LDS, true);
#endif
      [[unroll]] for (uint i = 0; i < CM; ++i) {
        CM16 ahi, alo;
        CM_LOAD(ahi, Xhi, (sm + i * 16) * LDS + kk, LDS, false);
        CM_LOAD(alo, Xlo, (sm + i * 16) * LDS + kk, LDS, false);
        [[unroll]] for (uint j = 0; j < CN; ++j) {
          CM_MAD(acc1[i * CN + j], ahi, b[j]);
          CM_MAD(acc2[i * CN + j], alo, b[j]);
#if !W_F16
          CM_MAD(acc2[i * CN + j], ahi, blo[j]);
#endif
        }
      }
    }
    barrier();
  }

  // Each 16×16 block through this subgroup's corner of Cs, then the epilogue
  // per element, in bounds only.
  [[unroll]] for (uint i = 0; i < CM; ++i)
    [[unroll]] for (uint j = 0; j < CN; ++j) {
      const CM32 c = cm_scaled_sum(acc1[i * CN + j], ACC1_SCALE, acc2[i * CN + j], ACC2_SCALE);
      CM_STORE(c, Cs, sg * 256, 16);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = lane; e < 256; e += SG) {
        const uint m = m0 + sm + i * 16 + e / 16, n = n0 + sn + j * 16 + e % 16;
        if (m < p.M && n < p.N) store_output(Cs[sg * 256 + e] + bias_at(n), ks * p.M + m, n);
      }
      subgroupBarrier();
    }
}
