// Activations for fused epilogues, selected by an integer (a specialization
// constant, so the unused ones compile away). Codes follow vkf::Activation.
#ifndef VKF_ACTIVATION_GLSL
#define VKF_ACTIVATION_GLSL

#define ACT_NONE 0u
#define ACT_RELU 1u
#define ACT_GELU_ERF 2u
#define ACT_GELU_TANH 3u
#define ACT_SILU 4u
#define ACT_TANH 5u

// erfc(z) for z >= 0 with relative error < 1.2e-7 (Numerical Recipes' Chebyshev
// fit), so both GELU tails are accurate; exp() underflows to 0 for large z, no NaN.
float erfc_nonneg(float z) {
  float t = 1.0 / (1.0 + 0.5 * z);
  float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
               t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
               t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-z * z + poly);
}

// 0.5·x·(1 + erf(x/√2)), written with erfc so the negative tail keeps its digits.
float gelu_erf(float x) {
  float e = erfc_nonneg(abs(x) * 0.70710678118654752);
  return x >= 0.0 ? x * (1.0 - 0.5 * e) : 0.5 * x * e;
}

// 0.5·x·(1 + tanh(u)) = x·sigmoid(2u) = x / (1 + exp(-2u)): exp overflows to
// +inf for large negative u, giving x/inf = 0, never inf/inf.
float gelu_tanh(float x) {
  float u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return x / (1.0 + exp(-2.0 * u));
}

float silu(float x) { return x / (1.0 + exp(-x)); }

// The builtin tanh may be computed as sinh/cosh, which overflows to inf/inf
// for |x| > ~44 on some drivers. (1 − e)/(1 + e) with e = exp(−2|x|) never
// overflows; below |x| = 0.25, where 1 − e would lose relative digits, the
// Taylor series to x¹¹ (next term < 6e-11) is used instead.
float tanh_stable(float x) {
  float a = abs(x);
  if (a < 0.25) {
    float x2 = x * x;
    return x * (1.0 + x2 * (-0.33333333333 + x2 * (0.13333333333 + x2 * (-0.05396825397 +
               x2 * (0.02186948854 + x2 * -0.00886323552)))));
  }
  float e = exp(-2.0 * a);
  return sign(x) * ((1.0 - e) / (1.0 + e));
}

float activate(float v, uint act) {
  if (act == ACT_RELU) return isnan(v) ? v : max(v, 0.0);  // NaN stays NaN, as torch.relu
  if (act == ACT_GELU_ERF) return gelu_erf(v);
  if (act == ACT_GELU_TANH) return gelu_tanh(v);
  if (act == ACT_SILU) return silu(v);
  if (act == ACT_TANH) return tanh_stable(v);
  return v;
}

#endif
