// 16×16 cooperative matrices of one subgroup, fp16 operands and fp32
// accumulators, for the tensor-core kernels (gemm_coopmat.comp,
// flash_attention_coopmat.comp): VK_NV_cooperative_matrix, or with
// EMULATE_COOPMAT (the *_emulated variants) the same operations done by the
// subgroup's lanes through shared memory. The emulation runs on any device
// with fp16 arithmetic, lavapipe included, so a kernel's tiling, indexing,
// masking and epilogue are checked there against the CPU reference; only the
// calls below are left to a device with the extension.
//
// Before including: SG (the subgroup size, dividing 256) and CM_SUBGROUPS
// (subgroups per workgroup), constants.
//   CM16, CM32                                an operand (fp16), an accumulator (fp32)
//   CM_LOAD(m, buf, off, stride, col_major)   element (r, c) of m from buf[off + r·stride + c],
//                                             or buf[off + c·stride + r] (col_major: true or false)
//   CM_STORE(m, buf, off, stride)             m row major into buf (fp32)
//   CM_MAD(c, a, b)                           c = a·b + c: fp16 products, exact in fp32, summed in fp32
//   cm_zero()                                 an accumulator of zeros
//   cm_scaled_sum(a, sa, b, sb)               a·sa + b·sb, elementwise
//
// fp32 values go in as two fp16 parts, split() (the kernels' tops say how
// their products recombine them):
//   hi = fp16(v·2⁻⁸),  lo = fp16((v − hi·2⁸)·2³),
// which carry v to within max(2⁻²²·|v|, 2⁻²⁷), about fp32's own rounding,
// where one fp16 part would be 2⁻¹¹·|v|. (The powers of two are exact; |v| up
// to 65504·2⁸ ≈ 1.7e7, beyond which hi is ±inf and so is the product: never a
// silently clipped number.)
#ifndef VKF_COOPMAT_GLSL
#define VKF_COOPMAT_GLSL
#ifndef EMULATE_COOPMAT
#define EMULATE_COOPMAT 0
#endif

#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require

#if EMULATE_COOPMAT
// Lane l holds elements e = l + i·SG (row e / 16, column e % 16), i < 256 / SG.
// No DenormPreserve here (lavapipe does not offer it): a device that flushed
// fp16 denormals would lose split()'s precision below 2⁻⁶; on lavapipe the
// emulated kernels keep the fp32 bound.
const uint CM_LANE = 256 / SG;
struct CM16 { float v[64]; };  // fp16 values; room for SG ≥ 4
struct CM32 { float v[64]; };
shared float16_t cm_ab[CM_SUBGROUPS * 512];  // a subgroup's A then B, row major

#define CM_LOAD(m, buf, off, stride, col_major)                                                 \
  for (uint i_ = 0; i_ < CM_LANE; ++i_) {                                                        \
    const uint e_ = gl_SubgroupInvocationID + i_ * SG, r_ = e_ / 16, c_ = e_ % 16;               \
    m.v[i_] = float(buf[(off) + ((col_major) ? c_ * (stride) + r_ : r_ * (stride) + c_)]);      \
  }
#define CM_STORE(m, buf, off, stride)                                                            \
  for (uint i_ = 0; i_ < CM_LANE; ++i_) {                                                        \
    const uint e_ = gl_SubgroupInvocationID + i_ * SG;                                           \
    buf[(off) + (e_ / 16) * (stride) + e_ % 16] = m.v[i_];                                       \
  }

// c = a·b + c, in place (no copies of the lanes' arrays).
#define CM_MAD(c, a, b)                                                                          \
  {                                                                                              \
    const uint b_ = gl_SubgroupID * 512;                                                         \
    for (uint i_ = 0; i_ < CM_LANE; ++i_) {                                                      \
      const uint e_ = gl_SubgroupInvocationID + i_ * SG;                                         \
      cm_ab[b_ + e_] = float16_t(a.v[i_]);                                                       \
      cm_ab[b_ + 256 + e_] = float16_t(b.v[i_]);                                                 \
    }                                                                                            \
    subgroupMemoryBarrierShared();                                                               \
    subgroupBarrier();                                                                           \
    for (uint i_ = 0; i_ < CM_LANE; ++i_) {                                                      \
      const uint e_ = gl_SubgroupInvocationID + i_ * SG, r_ = e_ / 16, c_ = e_ % 16;             \
      float s_ = c.v[i_];                                                                        \
      for (uint k_ = 0; k_ < 16; ++k_)                                                           \
        s_ += float(cm_ab[b_ + r_ * 16 + k_]) * float(cm_ab[b_ + 256 + k_ * 16 + c_]);           \
      c.v[i_] = s_;                                                                              \
    }                                                                                            \
    subgroupMemoryBarrierShared();                                                               \
    subgroupBarrier(); /* read before the next product writes */                                 \
  }
CM32 cm_zero() {
  CM32 c;
  for (uint i = 0; i < CM_LANE; ++i) c.v[i] = 0.0;
  return c;
}
CM32 cm_scaled_sum(CM32 a, float sa, CM32 b, float sb) {
  for (uint i = 0; i < CM_LANE; ++i) a.v[i] = a.v[i] * sa + b.v[i] * sb;
  return a;
}

#else
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_spirv_intrinsics : require
// fp16 denormals kept (DenormPreserve for 16-bit floats, SPV_KHR_float_controls):
// split()'s parts of values below 2⁻⁶ are fp16 denormals, which a flush to
// zero would cost their precision. Required of the device with the variants.
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459, 16);

#define CM16 fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define CM32 fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define CM_LOAD(m, buf, off, stride, col_major) coopMatLoadNV(m, buf, off, stride, col_major)
#define CM_STORE(m, buf, off, stride) coopMatStoreNV(m, buf, off, stride, false)
#define CM_MAD(c, a, b) c = coopMatMulAddNV(a, b, c)
#define cm_zero() CM32(0.0)
#define cm_scaled_sum(a, sa, b, sb) ((a) * (sa) + (b) * (sb))
#endif

const float HI_SCALE = 1.0 / 256.0, LO_SCALE = 8.0;

// v's two fp16 parts (see the top).
f16vec2 split(float v) {
  const float16_t hi = float16_t(v * HI_SCALE);
  return f16vec2(hi, float16_t((v - float(hi) * 256.0) * LO_SCALE));
}

#endif
