// A vec4 of a row: elements base+k .. base+k+3 of a row of n elements that
// starts at element `base` (k < n). Lanes at or past n read as 0 and are not
// written, so rows whose length is not a multiple of 4 need no special case.
//
// GLSL cannot pass a buffer to a function, so these macros define one
// function per buffer, once, at file scope (their parameters and locals end
// in _ so that they never hide a buffer):
//   LOAD4(load_k, k)                        vec4 load_k(uint base, uint k, uint n)
//   LOAD4_VIEW(load_x, x, x4, ALIGNED)      the same, one vec4 read of x4
//   LOAD4_OF, LOAD4_VIEW_OF                 the same for fp16-capable arrays (one more argument)
//   STORE4(store_o, o)                      void store_o(uint base, uint k, uint n, vec4 v)
//   STORE4_VIEW(store_y, y, y4, ALIGNED)    the same, one vec4 write to y4
// ARR is a scalar array of any storage type (STORAGE(), lib/types.glsl);
// ARR4 its QUAD view (vec4, or uvec2 for fp16) of the same binding. ALIGNED (a
// specialization constant of the kernel) promises base + k and n are
// multiples of 4, so that the vec4 lies inside the row.
#ifndef VKF_VEC_GLSL
#define VKF_VEC_GLSL

#define LOAD4(NAME, ARR) LOAD4_OF(NAME, ARR, 0)
#define LOAD4_VIEW(NAME, ARR, ARR4, ALIGNED) LOAD4_VIEW_OF(NAME, ARR, ARR4, ALIGNED, 0)

// The same for an array of STORAGE(F16), e.g. LOAD4_OF(load_k, k, W_F16):
// elements are read with AT(), which unpacks packed fp16 (lib/types.glsl).
#define LOAD4_OF(NAME, ARR, F16)                                  \
  vec4 NAME(uint base_, uint k_, uint n_) {                       \
    vec4 v_ = vec4(0.0);                                          \
    [[unroll]] for (uint c_ = 0; c_ < 4; ++c_)                    \
      if (k_ + c_ < n_) v_[c_] = AT(F16, ARR, base_ + k_ + c_);   \
    return v_;                                                    \
  }

#define LOAD4_VIEW_OF(NAME, ARR, ARR4, ALIGNED, F16)              \
  vec4 NAME(uint base_, uint k_, uint n_) {                       \
    if (ALIGNED) return as_vec4(ARR4[(base_ + k_) / 4]);          \
    vec4 v_ = vec4(0.0);                                          \
    [[unroll]] for (uint c_ = 0; c_ < 4; ++c_)                    \
      if (k_ + c_ < n_) v_[c_] = AT(F16, ARR, base_ + k_ + c_);   \
    return v_;                                                    \
  }

#define STORE4(NAME, ARR)                                         \
  void NAME(uint base_, uint k_, uint n_, vec4 v_) {              \
    [[unroll]] for (uint c_ = 0; c_ < 4; ++c_)                    \
      if (k_ + c_ < n_) ARR[base_ + k_ + c_] = v_[c_];            \
  }

#define STORE4_VIEW(NAME, ARR, ARR4, ALIGNED)                     \
  void NAME(uint base_, uint k_, uint n_, vec4 v_) {              \
    if (ALIGNED) {                                                \
      ARR4[(base_ + k_) / 4] = v_;                                \
      return;                                                     \
    }                                                             \
    [[unroll]] for (uint c_ = 0; c_ < 4; ++c_)                    \
      if (k_ + c_ < n_) ARR[base_ + k_ + c_] = v_[c_];            \
  }

// v with the lanes at or past n (k + lane >= n) set to 0.
vec4 zero_tail(vec4 v, uint k, uint n) {
  return mix(vec4(0.0), v, lessThan(uvec4(k) + uvec4(0, 1, 2, 3), uvec4(n)));
}

#endif
