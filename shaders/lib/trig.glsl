// cos and sin of an fp32 angle, within 1 ulp of the true values of that angle
// at any magnitude (measured on the CPU: at most 0.86 ulp on every 7th float
// below 2^24, 99.5% rounded correctly; torch's fp32 cos and sin: 0.88 ulp).
// GLSL's sin() and cos() are only promised to 2^-11 absolute on [-π, π], and
// rotary embeddings take them of angles of thousands of radians.
//
// Nothing here needs a fused multiply-add (Vulkan lets fma() round twice):
//  - range reduction is exact, in integers (Payne–Hanek): the 24-bit mantissa
//    times 224 bits of 2/π is the angle in quarter turns; the 64 bits around
//    the binary point give the quadrant q and the fraction f ∈ [-1/2, 1/2],
//    and f times π/2 in 64-bit fixed point the remainder r = rh + rl, rh its
//    first 24 bits, rl the next ones;
//  - cos and sin of r ∈ [-π/4, π/4] are polynomials (Cephes' sinf and cosf
//    coefficients) with every fp32 rounding spelled out (`precise`), r² taken
//    exactly as the sum of two fp32 (rh split into 12-bit halves) and rl
//    added as a first-order correction.
#ifndef VKF_TRIG_GLSL
#define VKF_TRIG_GLSL

// ⌊2/π · 2^224⌋ in 32-bit words, most significant first.
const uint TRIG_2_OVER_PI[7] = uint[7](0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u,
                                       0x3C439041u, 0xFE5163ABu);

// The low word of a 64-bit (hi, lo) shifted right by s, 0 ≤ s < 32.
uint trig_shr(uint lo, uint hi, uint s) { return (lo >> s) | ((hi << (31u - s)) << 1u); }

// (cos(a), sin(a)); NaN for an infinite or NaN a.
vec2 trig_cos_sin(float a) {
  const uint bits = floatBitsToUint(a);
  const uint ex = (bits >> 23) & 0xFFu;
  precise float rh, rl;
  uint q = 0u;
  if (ex < 126u) {  // |a| < 1/2: no reduction
    rh = abs(a);
    rl = 0.0;
  } else {
    // S = m·⌊2/π·2^224⌋ in words w[0] (least significant) .. w[7]; |a| = m·2^(ex−150).
    const uint m = (bits & 0x7FFFFFu) | 0x800000u;
    uint w[8];
    uint carry = 0u;
    [[unroll]] for (int k = 6; k >= 0; --k) {
      uint hi, lo;
      umulExtended(m, TRIG_2_OVER_PI[k], hi, lo);
      const uint s = lo + carry;
      w[6 - k] = s;
      carry = hi + (s < lo ? 1u : 0u);
    }
    w[7] = carry;
    // Bit 375 − ex of S weighs 2 quarter turns: take 64 bits down from it
    // (the bits above are whole turns). ex ≤ 255 keeps it within w[1..7].
    const uint s0 = 312u - ex, j = s0 >> 5, sh = s0 & 31u;
    uint lo = trig_shr(w[j], w[j + 1], sh), hi = trig_shr(w[j + 1], w[j + 2], sh);
    q = hi >> 30;
    hi &= 0x3FFFFFFFu;  // the fraction F·2^-62 of a quarter turn
    const bool up = (hi & 0x20000000u) != 0u;
    if (up) {  // f ≥ 1/2: the next quadrant, and r = −(1 − f)·π/2
      q += 1u;
      hi = (~hi + (lo == 0u ? 1u : 0u)) & 0x3FFFFFFFu;
      lo = 0u - lo;
    }
    // R = ⌊F·K / 2^64⌋ = r·2^60, K = π/2·2^62 rounded (0x6487ED51_10B4611A).
    const uint kh = 0x6487ED51u, kl = 0x10B4611Au;
    uint p0h, p0l, p1h, p1l, p2h, p2l, p3h, p3l;
    umulExtended(lo, kl, p0h, p0l);
    umulExtended(lo, kh, p1h, p1l);
    umulExtended(hi, kl, p2h, p2l);
    umulExtended(hi, kh, p3h, p3l);
    const uint s1 = p0h + p1l, s1b = s1 + p2l;
    const uint c1 = (s1 < p0h ? 1u : 0u) + (s1b < s1 ? 1u : 0u);
    const uint s2 = p1h + p2h, s2b = s2 + p3l, s2c = s2b + c1;
    const uint c2 = (s2 < p1h ? 1u : 0u) + (s2b < s2 ? 1u : 0u) + (s2c < s2b ? 1u : 0u);
    const uint rhi = p3h + c2, rlo = s2c;
    // Normalized so that the top bit is bit 63 of (nh, nl); r = R·2^-60 < 2^-0.3.
    const int msb = max(rhi != 0u ? 32 + findMSB(rhi) : findMSB(rlo), 0);
    const uint shl = uint(63 - msb);  // ≥ 4
    const uint nh = shl >= 32u ? rlo << (shl - 32u) : (rhi << shl) | (rlo >> (32u - shl));
    const uint nl = shl >= 32u ? 0u : rlo << shl;
    const float scale = uintBitsToFloat(uint(msb + 36) << 23);  // 2^(msb − 91)
    rh = float(nh & 0xFFFFFF00u) * scale;                       // exact
    rl = (float(nh & 0xFFu) + float(nl) * 2.3283064365386963e-10) * scale;
    if (up) {
      rh = -rh;
      rl = -rl;
    }
  }
  // r² = zh + zl + 2·rh·rl: rh = r1 + r2 in 12-bit halves, whose products are exact.
  precise float r1 = uintBitsToFloat(floatBitsToUint(rh) & 0xFFFFF000u);
  precise float r2 = rh - r1;
  precise float zh = r1 * r1;
  precise float zl = (r1 * r2) * 2.0 + r2 * r2;
  precise float z = zh + zl;
  precise float ps = (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4)) * z;
  precise float sn = rh + (rh * ps + rl * (1.0 - 0.5 * z));
  // cos = 1 − r²/2 + r⁴·C(r²), with the rounding of 1 − zh/2 carried along.
  precise float hz = 0.5 * zh;
  precise float wv = 1.0 - hz;
  precise float cs = wv + (((1.0 - wv) - hz) +
                           ((z * z) * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5)) -
                            (0.5 * zl + rh * rl)));
  vec2 v = (q & 1u) != 0u ? vec2(-sn, cs) : vec2(cs, sn);  // a quarter turn: (cos, sin) → (−sin, cos)
  if ((q & 2u) != 0u) v = -v;
  if ((bits >> 31) != 0u) v.y = -v.y;
  return ex == 255u ? vec2(uintBitsToFloat(0x7FC00000u)) : v;
}

#endif
