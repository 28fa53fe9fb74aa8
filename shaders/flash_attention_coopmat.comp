#version 450
// O = softmax(scale·QKᵀ + bias, masked)·V on tensor cores (VK_NV_cooperative_matrix),
// variant "coopmat" of flash_attention: a prompt's attention (prefill). The
// masks, grouped-query heads, bias and NaN rules are flash_attention.comp's.
//
// A workgroup takes BQ = 16·NSG query rows of one (batch, head), 16 rows a
// subgroup, and walks the keys in tiles of BK staged in shared memory twice:
//   pass 1: S = Q·Kᵀ per tile on the tensor cores; the lanes then keep each
//           row's max m and sum l = Σ exp(s − m) (rescaled as m grows);
//   pass 2: S again, P = exp(S − m) / l by the lanes, then O += P·V on the
//           tensor cores.
// A tensor-core accumulator's rows cannot be rescaled one by one, which an
// online softmax does to O as the max grows; knowing m and l before P·V
// leaves O a plain sum, at the price of computing Q·Kᵀ twice.
//
// fp32 values go in as two fp16 parts (lib/coopmat.glsl), so the products
// keep fp32's accuracy, as gemm_coopmat.comp's do:
//   S:  Q·scale split (split(), 2⁻⁸): fp16 K exact: S = acc1·2⁸ + acc2·2⁻³;
//       fp32 K split too: S = acc1·2¹⁶ + acc2·2⁵ (Qlo·Klo left out).
//   O:  P ∈ [0, 1] split at 2¹⁵ (split_unit(), normal fp16 down to P = 2⁻²⁹):
//       fp16 V exact: O = acc1·2⁻¹⁵ + acc2·2⁻²⁶; fp32 V split: O = acc1·2⁻⁷ + acc2·2⁻¹⁸.
// EMULATE_COOPMAT (variant coopmat_emulated): the matrices' operations done by
// the lanes (lib/coopmat.glsl), to check this kernel on any device.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;               // NSG subgroups of SG invocations
layout(constant_id = 1) const uint DH = 64;   // head dim rounded up to 16
layout(constant_id = 2) const uint BK = 32;   // keys per tile, a multiple of 16
layout(constant_id = 3) const uint NSG = 2;   // subgroups, 16 query rows each
layout(constant_id = 4) const uint SG = 32;   // the subgroup size the plan requires
layout(constant_id = 5) const uint HAS_BIAS = 0;  // 1: add bias[h, i, j] to the scores (T5)

layout(std430, binding = 0) readonly buffer Qb { float q[]; };
layout(std430, binding = 1) readonly buffer Kb { WTYPE k[]; };
layout(std430, binding = 2) readonly buffer Vb { WTYPE v[]; };
layout(std430, binding = 3) readonly buffer Mb { int pad[]; };
layout(std430, binding = 4) writeonly buffer Ob { float o[]; };
layout(std430, binding = 5) readonly buffer Bb { float bias[]; };  // [heads, q_len, bias_rs]
#include "push/flash_attention.h"

#define CM_SUBGROUPS NSG
#include "lib/coopmat.glsl"

#define NEG_INF uintBitsToFloat(0xff800000u)
#define QNAN uintBitsToFloat(0x7fc00000u)

const uint BQ = 16 * NSG;
const uint D16 = DH / 16;
// Rows padded by 8 halves: a matrix load's rows start in different banks.
const uint LD = DH + 8, PLD = BK + 8;
shared float16_t Qh[BQ * LD], Ql[BQ * LD];  // Q·scale's parts [row][dim]
shared float16_t Kh[BK * LD], Vh[BK * LD];  // K and V tiles [key][dim] (fp16, or fp32's hi parts)
#if !W_F16
shared float16_t Kl[BK * LD], Vl[BK * LD];  // fp32's lo parts
#endif
shared float Ss[NSG * 16 * BK];              // a subgroup's scores [row][key]; its output block at the end
shared float16_t Ph[NSG * 16 * PLD], Pl[NSG * 16 * PLD];  // its P parts [row][key]
shared float row_m[BQ], row_l[BQ];
shared uint row_nan[BQ];  // a NaN score among the row's visible keys

#if W_F16
const float S1 = 256.0, S2 = 1.0 / 8.0, O1 = 1.0 / 32768.0, O2 = 1.0 / 67108864.0;
#else
const float S1 = 65536.0, S2 = 32.0, O1 = 1.0 / 128.0, O2 = 1.0 / 262144.0;
#endif

// p ∈ [0, 1] as two fp16 parts: hi = fp16(p·2¹⁵), lo = fp16((p·2¹⁵ − hi)·2¹¹).
f16vec2 split_unit(float p) {
  const float16_t hi = float16_t(p * 32768.0);
  return f16vec2(hi, float16_t((p * 32768.0 - float(hi)) * 2048.0));
}

// Stages keys [j0, j0 + BK) of K (and V) as fp16 parts, zeros past khi and D.
void stage_tile(uint j0, uint khi, uint kbase, uint vbase, bool with_v) {
  for (uint e = gl_LocalInvocationID.x; e < BK * DH; e += gl_WorkGroupSize.x) {
    const uint n = e / DH, c = e % DH, j = j0 + n;
    const bool in_kv = j < khi && c < p.head_dim;
    const float kv = in_kv ? AT(W_F16, k, kbase + j * p.k_rs + c) : 0.0;
#if W_F16
    Kh[n * LD + c] = float16_t(kv);
#else
    const f16vec2 kp = split(kv);
    Kh[n * LD + c] = kp.x;
    Kl[n * LD + c] = kp.y;
#endif
    if (with_v) {
      const float vv = in_kv ? AT(W_F16, v, vbase + j * p.v_rs + c) : 0.0;
#if W_F16
      Vh[n * LD + c] = float16_t(vv);
#else
      const f16vec2 vp = split(vv);
      Vh[n * LD + c] = vp.x;
      Vl[n * LD + c] = vp.y;
#endif
    }
  }
}

// This subgroup's scores for the staged tile: Ss[row][key] = (Q·scale)·Kᵀ.
void scores(uint sg) {
  [[unroll]] for (uint t = 0; t < BK / 16; ++t) {
    CM32 acc1 = cm_zero(), acc2 = cm_zero();
    [[unroll]] for (uint d = 0; d < D16; ++d) {
      CM16 qh, ql, kh;
      CM_LOAD(qh, Qh, sg * 16 * LD + d * 16, LD, false);
      CM_LOAD(ql, Ql, sg * 16 * LD + d * 16, LD, false);
      CM_LOAD(kh, Kh, t * 16 * LD + d * 16, LD, true);  // Kᵀ: K's tile read column-major
      CM_MAD(acc1, qh, kh);
      CM_MAD(acc2, ql, kh);
#if !W_F16
      CM16 kl;
      CM_LOAD(kl, Kl, t * 16 * LD + d * 16, LD, true);
      CM_MAD(acc2, qh, kl);
#endif
    }
    const CM32 s = cm_scaled_sum(acc1, S1, acc2, S2);
    CM_STORE(s, Ss, sg * 16 * BK + t * 16, BK);
  }
  subgroupMemoryBarrierShared();
  subgroupBarrier();
}

void main() {
  const uint g = linear_group_id();
  if (g >= p.total) return;  // uniform across the workgroup
  const uint qb = g % p.q_blocks, bh = g / p.q_blocks;
  const uint b = bh / p.heads, h = bh % p.heads, D = p.head_dim;
  const uint lid = gl_LocalInvocationID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint kvh = h / p.heads_per_kv;  // grouped-query attention: K/V heads are shared
  const uint kbase = b * p.k_bs + p.k_off + kvh * D;
  const uint vbase = b * p.v_bs + p.v_off + kvh * D;
  const uint pbase = b * p.pad_stride;
  const uint i_first = qb * BQ, i_last = min(p.q_len, i_first + BQ) - 1;

  // Q·scale as fp16 parts, zeros past q_len and D; the rows' statistics.
  for (uint e = lid; e < BQ * DH; e += gl_WorkGroupSize.x) {
    const uint r = e / DH, c = e % DH, i = i_first + r;
    const float qv = i < p.q_len && c < D ? q[b * p.q_bs + i * p.q_rs + p.q_off + h * D + c] * p.scale : 0.0;
    const f16vec2 qp = split(qv);
    Qh[r * LD + c] = qp.x;
    Ql[r * LD + c] = qp.y;
  }
  for (uint r = lid; r < BQ; r += gl_WorkGroupSize.x) {
    row_m[r] = NEG_INF;
    row_l[r] = 0.0;
    row_nan[r] = 0;
  }
  barrier();  // a block with no keys to see reads the statistics at the end

  // The keys some row of this block sees (flash_attention.comp's rules).
  const uint kend = p.causal != 0 ? min(p.kv_len, i_last + p.causal_offset + 1) : p.kv_len;
  const uint kbegin = p.window != 0 && i_first + p.causal_offset >= p.window ? i_first + p.causal_offset + 1 - p.window : 0;

  CM32 o1[D16], o2[D16];  // O's 16×16 blocks, two products' sums (see the top)
  [[unroll]] for (uint d = 0; d < D16; ++d) {
    o1[d] = cm_zero();
    o2[d] = cm_zero();
  }
  for (uint pass = 0; pass < 2; ++pass) {
    for (uint j0 = kbegin; j0 < kend; j0 += BK) {
      barrier();  // the previous tile has been read (and, first, Q and the statistics written)
      stage_tile(j0, kend, kbase, vbase, pass == 1);
      barrier();
      scores(sg);
      // The lanes' part: each element's mask and bias, then (pass 1) each row's
      // max and sum, or (pass 2) P as fp16 parts.
      const uint sbase = sg * 16 * BK, pbase_s = sg * 16 * PLD;
      for (uint e = lane; e < (pass == 0 ? 16 : 16 * BK); e += SG) {
        const uint r = pass == 0 ? e : e / BK, row = sg * 16 + r, i = i_first + row;
        const uint kvis = p.causal != 0 ? min(kend, i + p.causal_offset + 1) : kend;
        const uint kfirst = p.window != 0 && i + p.causal_offset >= p.window ? i + p.causal_offset + 1 - p.window : 0;
        const uint bbase = (h * p.q_len + min(i, p.q_len - 1)) * p.bias_rs;
        const uint n_lo = pass == 0 ? 0 : e % BK, n_hi = pass == 0 ? BK : n_lo + 1;
        float m = row_m[row], l = row_l[row];
        bool nan_seen = row_nan[row] != 0;
        for (uint n = n_lo; n < n_hi; ++n) {
          const uint j = j0 + n;
          const bool ok = i < p.q_len && j >= kfirst && j < kvis && (p.has_pad == 0 || pad[pbase + j] == 0);
          const float s = ok ? Ss[sbase + r * BK + n] + (HAS_BIAS != 0 ? bias[bbase + j] : 0.0) : NEG_INF;
          if (pass == 0) {
            nan_seen = nan_seen || isnan(s);
            if (s > m) {  // a new max rescales the sum (exp(−inf) = 0 the first time)
              l *= m == NEG_INF ? 0.0 : exp(m - s);
              m = s;
            }
            if (s != NEG_INF) l += exp(s - m);
          } else {
            const float pr = s == NEG_INF || l == 0.0 ? 0.0 : exp(s - m) / l;
            const f16vec2 pp = split_unit(pr);
            Ph[pbase_s + r * PLD + n] = pp.x;
            Pl[pbase_s + r * PLD + n] = pp.y;
          }
        }
        if (pass == 0) {
          row_m[row] = m;
          row_l[row] = l;
          row_nan[row] = nan_seen ? 1 : 0;
        }
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      if (pass == 1)
        [[unroll]] for (uint t = 0; t < BK / 16; ++t) {
          CM16 ph, pl;
          CM_LOAD(ph, Ph, pbase_s + t * 16, PLD, false);
          CM_LOAD(pl, Pl, pbase_s + t * 16, PLD, false);
          [[unroll]] for (uint d = 0; d < D16; ++d) {
            CM16 vh;
            CM_LOAD(vh, Vh, t * 16 * LD + d * 16, LD, false);
            CM_MAD(o1[d], ph, vh);
            CM_MAD(o2[d], pl, vh);
#if !W_F16
            CM16 vl;
            CM_LOAD(vl, Vl, t * 16 * LD + d * 16, LD, false);
            CM_MAD(o2[d], ph, vl);
#endif
          }
        }
    }
    if (pass == 0) continue;

    // Each 16×16 block of O through this subgroup's scores, then out, in bounds
    // only. A NaN score makes the row NaN, as PyTorch's softmax does; a row
    // with every key masked is zeros (P was 0).
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint d = 0; d < D16; ++d) {
      const CM32 od = cm_scaled_sum(o1[d], O1, o2[d], O2);
      CM_STORE(od, Ss, sg * 16 * BK, BK);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = lane; e < 256; e += SG) {
        const uint r = e / 16, c = d * 16 + e % 16, i = i_first + sg * 16 + r;
        if (i < p.q_len && c < D)
          o[(b * p.q_len + i) * (p.heads * D) + h * D + c] = row_nan[sg * 16 + r] != 0 ? QNAN : Ss[sg * 16 * BK + r * BK + e % 16];
      }
      subgroupBarrier();
    }
  }
}
