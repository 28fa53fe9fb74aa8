#version 450
// O = softmax(scale·QKᵀ + bias, masked)·V with an online softmax: running max m,
// running sum l and an accumulator rescaled when the max grows; the score
// matrix is never stored. Query head h reads K/V head h / heads_per_kv
// (grouped-query attention), in place. Row i sees keys [kfirst, kvis): kvis =
// i + causal_offset + 1 under the causal mask, kfirst = kvis − window under a
// sliding window; a block's tiles start at its first row's kfirst.
// A workgroup takes BQ = WG/TPR query rows of one (batch, head). TPR
// invocations share a row, each taking every TPR-th key of a tile, and merge
// their (m, l, acc) through shared memory at the end; TPR > 1 keeps lanes busy
// for short queries (Lq = 1 when decoding with a KV cache). K and V tiles of BK
// keys are staged in shared memory as fp32 vec4s, the head dim padded to D4·4
// with zeros; with TPR = 1 every lane reads the same key (a broadcast).
// The key loops are not unrolled (unrolling them made compiles take seconds);
// the head-dim loops are, so the per-invocation arrays stay in registers.
// TEXEL (-D, variant "texel"): K and V are uniform texel buffers, and each
// invocation fetches its keys' rows itself: no tiles in shared memory, no
// barriers. On lavapipe a texel fetch is a straight gather while a load from a
// storage buffer or shared memory is a loop over the lanes. The sums are the
// same, in the same order, as the staged kernel's.
// SPLIT (-D, variant "split", flash-decoding): the keys are cut into p.splits
// ranges of p.split_len, one workgroup each, so a decode step (one query row
// per head) fills a GPU's many cores instead of one workgroup per head. Each
// writes its rows' unnormalized (m, l, NaN seen, acc) to a partial record; the
// combine pass (flash_attention_combine.comp) merges a row's records as the
// TPR > 1 merge below does.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/vec.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D4 = 16;     // head dim in vec4s, rounded up
layout(constant_id = 2) const uint BK = 32;     // keys per tile, a multiple of TPR
layout(constant_id = 3) const uint TPR = 1;     // invocations per query row, divides WG
layout(constant_id = 4) const uint SH4 = 1024;  // shared vec4s: max(2·BK·D4, WG·(D4+1) if TPR > 1)
layout(constant_id = 5) const uint HAS_BIAS = 0;  // 1: add bias[h, i, j] to the scores (T5)
layout(constant_id = 6) const bool VEC4 = false;  // TEXEL: K/V views of RGBA texels (rows start 4-aligned, D % 4 == 0)

const uint WG = gl_WorkGroupSize.x;
const uint BQ = WG / TPR;
const uint KPT = BK / TPR;  // keys per invocation per tile

layout(std430, binding = 0) readonly buffer Qb { float q[]; };
#ifndef TEXEL
#define TEXEL 0
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
#if TEXEL
layout(binding = 1) uniform samplerBuffer kt;  // RGBA (VEC4) or R texels, 32- or 16-bit floats
layout(binding = 2) uniform samplerBuffer vt;
#else
layout(std430, binding = 1) readonly buffer Kb { WTYPE k[]; };
layout(std430, binding = 2) readonly buffer Vb { WTYPE v[]; };
#endif
layout(std430, binding = 3) readonly buffer Mb { int pad[]; };
// SPLIT: the partial records, (D4·4 + 4) floats per (row, head, split): m, l, NaN seen, 0, acc.
layout(std430, binding = 4) writeonly buffer Ob { float o[]; };
layout(std430, binding = 5) readonly buffer Bb { float bias[]; };  // [heads, q_len, bias_rs]
#include "push/flash_attention.h"

LOAD4(load_q, q)
STORE4(store_o, o)
#if TEXEL
vec4 fetch4(samplerBuffer s, uint base, uint c, uint n) {
  if (VEC4) return texelFetch(s, int((base + c) / 4));
  vec4 r = vec4(0.0);
  [[unroll]] for (uint i = 0; i < 4; ++i)
    if (c + i < n) r[i] = texelFetch(s, int(base + c + i)).x;
  return r;
}
#else
LOAD4_OF(load_k, k, W_F16)
LOAD4_OF(load_v, v, W_F16)
#endif

#define NEG_INF uintBitsToFloat(0xff800000u)
#define QNAN uintBitsToFloat(0x7fc00000u)

// K tile [BK][D4] then V tile [BK][D4]; after the last tile, the partial
// accumulators [WG][D4], then (m, l) of each invocation [WG].
shared vec4 sh[SH4];

void main() {
  uint g = linear_group_id();
  if (g >= p.total) return;
  const uint split = g % p.splits;  // 1 split unless SPLIT
  g /= p.splits;
  const uint qb = g % p.q_blocks, bh = g / p.q_blocks;
  const uint b = bh / p.heads, h = bh % p.heads, D = p.head_dim;
  const uint t = gl_LocalInvocationID.x, row = t / TPR, lane = t % TPR;
  const uint i = qb * BQ + row;
  const bool live = i < p.q_len;
  const uint kvh = h / p.heads_per_kv;  // grouped-query attention: K/V heads are shared
  const uint kbase = b * p.k_bs + p.k_off + kvh * D;
  const uint vbase = b * p.v_bs + p.v_off + kvh * D;
  const uint pbase = b * p.pad_stride;
  const uint bbase = (h * p.q_len + min(i, p.q_len - 1)) * p.bias_rs;

  vec4 qr[D4], acc[D4];
  const uint qbase = b * p.q_bs + min(i, p.q_len - 1) * p.q_rs + p.q_off + h * D;
  for (uint c4 = 0; c4 < D4; ++c4) {
    qr[c4] = live ? load_q(qbase, c4 * 4, D) * p.scale : vec4(0.0);
    acc[c4] = vec4(0.0);
  }
  float m = NEG_INF, l = 0.0;
  bool nan_seen = false;  // a NaN score among the visible keys

  // Keys no row of this block sees under the causal mask or its sliding
  // window are never loaded (p.window is 0 or comes with causal).
  const uint i_last = min(p.q_len, (qb + 1) * BQ) - 1, i_first = qb * BQ;
  const uint kend = p.causal != 0 ? min(p.kv_len, i_last + p.causal_offset + 1) : p.kv_len;
  const uint kvis = p.causal != 0 ? min(kend, i + p.causal_offset + 1) : kend;
  const uint kbegin = p.window != 0 && i_first + p.causal_offset >= p.window ? i_first + p.causal_offset + 1 - p.window : 0;
  const uint kfirst = p.window != 0 && i + p.causal_offset >= p.window ? i + p.causal_offset + 1 - p.window : 0;
  // This workgroup's keys: its split's range (all of them without SPLIT).
  const uint klo = max(kbegin, split * p.split_len), khi = min(kend, split * p.split_len + p.split_len);
  const uint kstop = min(kvis, khi);

  for (uint j0 = klo; j0 < khi; j0 += BK) {
#if TEXEL
    if (!live) continue;
#else
    barrier();  // the previous tile has been read
    for (uint e = t; e < BK * D4; e += WG) {
      const uint j = j0 + e / D4, c = (e % D4) * 4;
      const bool in_tile = j < khi;
      sh[e] = in_tile ? load_k(kbase + j * p.k_rs, c, D) : vec4(0.0);
      sh[BK * D4 + e] = in_tile ? load_v(vbase + j * p.v_rs, c, D) : vec4(0.0);
    }
    barrier();
    if (!live) continue;
#endif

    float sc[KPT];
    float tmax = NEG_INF;
    [[dont_unroll]] for (uint n = 0; n < KPT; ++n) {
      const uint jj = lane + n * TPR, j = j0 + jj;
      const bool ok = j >= kfirst && j < kstop && (p.has_pad == 0 || pad[pbase + j] == 0);
      vec4 d = vec4(0.0);
#if TEXEL
      // A key past the end is masked (ok is false); read row 0 in its place.
      const uint kr = kbase + (j < khi ? j : 0) * p.k_rs;
      for (uint c4 = 0; c4 < D4; ++c4) d += qr[c4] * fetch4(kt, kr, c4 * 4, D);
#else
      for (uint c4 = 0; c4 < D4; ++c4) d += qr[c4] * sh[jj * D4 + c4];
#endif
      const float add = HAS_BIAS != 0 && ok ? bias[bbase + j] : 0.0;
      sc[n] = ok ? d.x + d.y + d.z + d.w + add : NEG_INF;
      nan_seen = nan_seen || isnan(sc[n]);
      tmax = max(tmax, sc[n]);
    }
    if (tmax == NEG_INF) continue;  // nothing visible in this tile
    const float mnew = max(m, tmax);
    if (mnew > m) {
      const float corr = m == NEG_INF ? 0.0 : exp(m - mnew);
      l *= corr;
      for (uint c4 = 0; c4 < D4; ++c4) acc[c4] *= corr;
      m = mnew;
    }
    [[dont_unroll]] for (uint n = 0; n < KPT; ++n) {
      // exp(-inf) = 0: masked keys add nothing.
      const float pj = sc[n] == NEG_INF ? 0.0 : exp(sc[n] - m);
      const uint jj = lane + n * TPR;
      l += pj;
#if TEXEL
      // Past the end the staged tile holds zeros: add pj·0 as it does.
      const bool in_kv = j0 + jj < khi;
      const uint vr = vbase + (in_kv ? j0 + jj : 0) * p.v_rs;
      for (uint c4 = 0; c4 < D4; ++c4) acc[c4] += pj * (in_kv ? fetch4(vt, vr, c4 * 4, D) : vec4(0.0));
#else
      for (uint c4 = 0; c4 < D4; ++c4) acc[c4] += pj * sh[(BK + jj) * D4 + c4];
#endif
    }
  }

  const uint obase = (b * p.q_len + i) * (p.heads * D) + h * D;
#if SPLIT
  const uint rec = (((b * p.q_len + i) * p.heads + h) * p.splits + split) * (D4 * 4 + 4);
#endif
  if (TPR == 1) {
    if (!live) return;
#if SPLIT
    o[rec] = m;
    o[rec + 1] = l;
    o[rec + 2] = nan_seen ? 1.0 : 0.0;
    o[rec + 3] = 0.0;
    for (uint c4 = 0; c4 < D4; ++c4) store_o(rec + 4, c4 * 4, D4 * 4, acc[c4]);
    return;
#endif
    // l = 0: every key masked. A NaN score makes the row NaN, as PyTorch's softmax
    // does (max() may drop it, and the tile it is in may be skipped).
    const float inv = nan_seen ? QNAN : l > 0.0 ? 1.0 / l : 0.0;
    for (uint c4 = 0; c4 < D4; ++c4) store_o(obase, c4 * 4, D, acc[c4] * inv);
    return;
  }

  barrier();  // the tiles are no longer read
  for (uint c4 = 0; c4 < D4; ++c4) sh[t * D4 + c4] = acc[c4];
  sh[WG * D4 + t] = vec4(m, l, nan_seen ? 1.0 : 0.0, 0.0);
  barrier();
  if (!live) return;
  const uint first = row * TPR;
  float mrow = NEG_INF;
  for (uint r = 0; r < TPR; ++r) mrow = max(mrow, sh[WG * D4 + first + r].x);
  float lrow = 0.0;
  for (uint r = 0; r < TPR; ++r) {
    const vec4 ml = sh[WG * D4 + first + r];
    if (ml.x != NEG_INF) lrow += ml.y * exp(ml.x - mrow);
  }
  bool row_nan = false;
  for (uint r = 0; r < TPR; ++r) row_nan = row_nan || sh[WG * D4 + first + r].z != 0.0;
  const float inv = row_nan ? QNAN : lrow > 0.0 ? 1.0 / lrow : 0.0;
#if SPLIT
  if (lane == 0) {
    o[rec] = mrow;
    o[rec + 1] = lrow;
    o[rec + 2] = row_nan ? 1.0 : 0.0;
    o[rec + 3] = 0.0;
  }
#endif
  for (uint c4 = lane; c4 < D4; c4 += TPR) {
    vec4 sum = vec4(0.0);
    for (uint r = 0; r < TPR; ++r) {
      const float mr = sh[WG * D4 + first + r].x;
      if (mr != NEG_INF) sum += sh[(first + r) * D4 + c4] * exp(mr - mrow);
    }
#if SPLIT
    store_o(rec + 4, c4 * 4, D4 * 4, sum);  // unnormalized: the combine pass divides
#else
    store_o(obase, c4 * 4, D, sum * inv);
#endif
  }
}
