// The fused epilogue of gemm_tiled.comp and gemm_vec.comp, Y = act(acc + b) + R,
// with the bindings and push constants they share.
//
// The activation is a specialization constant, ACT, so the four unused ones
// compile away: as a push constant it made one pipeline serve every layer of a
// shape, but lavapipe runs both sides of even a uniform branch under a lane
// mask, so every output paid for all five activations, ~10 % of a 128 × 3072 ×
// 768 GEMM's time. Bias and residual stay push-constant flags: they cost ~3 %
// there, and specializing them too would compile four times the pipelines.
// The includer defines ACT_ID, its first free constant_id.
#ifndef VKF_GEMM_EPILOGUE_GLSL
#define VKF_GEMM_EPILOGUE_GLSL
#include "lib/activation.glsl"

#if WQ
// Block-quantized W: the bias is f32 or f16 (flag 4), read as words either way.
layout(std430, binding = 2) readonly buffer Bias { uint bias[]; };
#else
layout(std430, binding = 2) readonly buffer Bias { WTYPE bias[]; };
#endif
layout(std430, binding = 3) readonly buffer R { float res[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
#include "push/gemm.h"

layout(constant_id = ACT_ID) const uint ACT = ACT_NONE;

// The bias of this piece's column n (< p.N). Without one, -0.0: adding it
// changes no value, not even the sign of a zero.
#if WQ
float bias_at(uint n) {
  if ((p.flags & 1u) == 0) return -0.0;
  const uint i = p.n0 + n;
  return (p.flags & 4u) != 0 ? unpackHalf2x16(bias[i >> 1u])[i & 1u] : uintBitsToFloat(bias[i]);
}
#else
float bias_at(uint n) { return (p.flags & 1u) != 0 ? float(AT(W_F16, bias, p.n0 + n)) : -0.0; }
#endif

// Y[m, n] of this piece = act(v) + R[m, n], where v already holds the bias.
void store_output(float v, uint m, uint n) {
  v = activate(v, ACT);
  if ((p.flags & 2u) != 0) v += res[p.r_off + m * p.ldy + n];
  y[p.y_off + m * p.ldy + n] = v;
}

#endif
