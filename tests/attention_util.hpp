// Inputs for the attention tests: Q, K and V in the layouts models use (separate
// tensors, a packed QKV projection, a packed KV memory, a KV cache longer than
// the keys filled so far), a mask, and the host views the references read.
// With kv_heads, K and V are kv_heads·head_dim wide and Q heads·head_dim.
#pragma once

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "op_test.hpp"

namespace vkf::test {

enum class Layout { Separate, PackedQKV, PackedKV, Cache };
enum class MaskKind { None, Padding, Causal, Both };

struct AttnCase {
  uint32_t batch, heads, head_dim, q_len, kv_len;
  Layout layout = Layout::Separate;
  MaskKind mask = MaskKind::None;
  uint32_t causal_offset = 0;
  DType kv = DType::F32;
  bool bias = false;  ///< an additive [heads, q_len, kv_len] bias (T5), flash_attention only
  uint32_t kv_heads = 0;  ///< heads of K and V (AttentionShape::kv_heads); 0: heads
  uint32_t window = 0;    ///< a sliding window (AttentionMask::window), with a causal mask; 0: none
};

/// The case with K/V heads shared by heads/kv_heads query heads each (grouped-query attention).
inline AttnCase grouped(AttnCase c, uint32_t kv_heads) {
  c.kv_heads = kv_heads;
  return c;
}

/// The case with Mistral's sliding window of `window` keys on its causal mask.
inline AttnCase windowed(AttnCase c, uint32_t window) {
  c.window = window;
  return c;
}

/// A gtest-safe name: b2_h3_d64_q17_k33_qkv_both_off0_f16 (_kv1 with kv_heads 1, _w4 with window 4).
inline std::string case_name(const AttnCase& c) {
  static const char* layouts[] = {"sep", "qkv", "kv", "cache"};
  static const char* masks[] = {"none", "pad", "causal", "both"};
  std::ostringstream s;
  s << "b" << c.batch << "_h" << c.heads << "_d" << c.head_dim << "_q" << c.q_len << "_k" << c.kv_len << "_"
    << layouts[int(c.layout)] << "_" << masks[int(c.mask)] << "_off" << c.causal_offset << "_"
    << dtype_name(c.kv) << (c.bias ? "_bias" : "") << (c.kv_heads ? "_kv" + std::to_string(c.kv_heads) : "")
    << (c.window ? "_w" + std::to_string(c.window) : "");
  return s.str();
}

/// The padding mask: about a third of the keys masked; with three batches the
/// last masks every key, and with a causal mask batch 0 masks key 0, so row 0
/// (which sees only key 0 when causal_offset is 0) is fully masked.
inline std::vector<int32_t> padding_mask(const AttnCase& c, uint32_t stride, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<int32_t> pad(size_t(c.batch) * stride, 1);
  for (uint32_t b = 0; b < c.batch; ++b)
    for (uint32_t j = 0; j < c.kv_len; ++j)
      pad[size_t(b) * stride + j] = (c.batch == 3 && b == 2) ? 1 : (gen() % 3 == 0);
  if (c.mask == MaskKind::Both) pad[0] = 1;
  return pad;
}

/// Device tensors, views and host copies for one case. Not movable: the host
/// views point into the vectors.
struct AttnInputs {
  AttentionShape shape;
  float scale;
  std::vector<float> q, k, v;  // what the tensors hold (fp16-rounded where stored as fp16)
  Tensor tq, tk, tv;           // tk/tv may be tq (packed QKV) or one tensor (packed KV)
  HeadsView hq, hk, hv;
  ref::HostHeads rq, rk, rv;
  std::vector<int32_t> pad;
  Tensor tpad;
  AttentionMask mask;
  ref::HostMask hmask;
  std::vector<float> bias;  // [heads, q_len, kv_len] when the case has one
  Tensor tbias;

  AttnInputs(Context& ctx, const AttnCase& c, uint32_t seed) {
    shape = {c.batch, c.heads, c.head_dim, c.q_len, c.kv_len, c.kv_heads};
    scale = float(1.0 / std::sqrt(double(c.head_dim)));
    const uint32_t d = c.heads * c.head_dim, B = c.batch;
    const uint32_t dkv = shape.kv_head_count() * c.head_dim;  // the width of K and of V
    switch (c.layout) {
      case Layout::Separate: {  // default strides
        q = random_vector(size_t(B) * c.q_len * d, seed);
        k = as_stored(random_vector(size_t(B) * c.kv_len * dkv, seed + 1), c.kv);
        v = as_stored(random_vector(size_t(B) * c.kv_len * dkv, seed + 2), c.kv);
        tq = ctx.tensor({B, c.q_len, d}, q);
        tk = ctx.tensor({B, c.kv_len, dkv}, k, c.kv);
        tv = ctx.tensor({B, c.kv_len, dkv}, v, c.kv);
        hq = {&tq};
        hk = {&tk};
        hv = {&tv};
        rq = {&q, 0, d, c.q_len * d};
        rk = {&k, 0, dkv, c.kv_len * dkv};
        rv = {&v, 0, dkv, c.kv_len * dkv};
        break;
      }
      case Layout::PackedQKV: {  // one [B, L, d + 2·dkv] f32 projection, default strides
        const uint32_t w = d + 2 * dkv;
        q = random_vector(size_t(B) * c.q_len * w, seed);
        tq = ctx.tensor({B, c.q_len, w}, q);
        tk = tv = tq;
        k = v = q;
        hq = {&tq, 0};
        hk = {&tq, d};
        hv = {&tq, d + dkv};
        rq = {&q, 0, w, c.q_len * w};
        rk = {&q, d, w, c.kv_len * w};
        rv = {&q, d + dkv, w, c.kv_len * w};
        break;
      }
      case Layout::PackedKV: {  // cross-attention memory [B, Lk, 2·dkv], explicit strides
        q = random_vector(size_t(B) * c.q_len * d, seed);
        k = as_stored(random_vector(size_t(B) * c.kv_len * 2 * dkv, seed + 1), c.kv);
        v = k;
        tq = ctx.tensor({B, c.q_len, d}, q);
        tk = ctx.tensor({B, c.kv_len, 2 * dkv}, k, c.kv);
        tv = tk;
        hq = {&tq};
        hk = {&tk, 0, 2 * dkv, c.kv_len * 2 * dkv};
        hv = {&tk, dkv, 2 * dkv, c.kv_len * 2 * dkv};
        rq = {&q, 0, d, c.q_len * d};
        rk = {&k, 0, 2 * dkv, c.kv_len * 2 * dkv};
        rv = {&k, dkv, 2 * dkv, c.kv_len * 2 * dkv};
        break;
      }
      case Layout::Cache: {  // [B, max_len, dkv] caches; rows past kv_len hold NaN and must not be read
        const uint32_t max_len = c.kv_len + 7;
        q = random_vector(size_t(B) * c.q_len * d, seed);
        k = as_stored(random_vector(size_t(B) * max_len * dkv, seed + 1), c.kv);
        v = as_stored(random_vector(size_t(B) * max_len * dkv, seed + 2), c.kv);
        for (uint32_t b = 0; b < B; ++b)
          for (size_t e = size_t(c.kv_len) * dkv; e < size_t(max_len) * dkv; ++e)
            k[b * size_t(max_len) * dkv + e] = v[b * size_t(max_len) * dkv + e] =
                std::numeric_limits<float>::quiet_NaN();
        tq = ctx.tensor({B, c.q_len, d}, q);
        tk = ctx.tensor({B, max_len, dkv}, k, c.kv);
        tv = ctx.tensor({B, max_len, dkv}, v, c.kv);
        hq = {&tq};
        hk = {&tk};
        hv = {&tv};
        rq = {&q, 0, d, c.q_len * d};
        rk = {&k, 0, dkv, max_len * dkv};
        rv = {&v, 0, dkv, max_len * dkv};
        break;
      }
    }
    if (c.mask == MaskKind::Padding || c.mask == MaskKind::Both) {
      const uint32_t stride = c.kv_len + 4;  // a multiple of 4 when kv_len is: the vec4 mask path
      pad = padding_mask(c, stride, seed + 3);
      tpad = ctx.tensor_i32({B, stride}, pad);
      mask.key_padding = &tpad;
      mask.key_padding_stride = stride;
      hmask.key_padding = &pad;
      hmask.key_padding_stride = stride;
    }
    mask.causal = hmask.causal = c.mask == MaskKind::Causal || c.mask == MaskKind::Both;
    mask.causal_offset = hmask.causal_offset = c.causal_offset;
    mask.window = hmask.window = c.window;
    if (c.bias) {  // T5's biases are a few units wide: scaled so they move the softmax
      // On the device in rows 3 longer, NaN past kv_len: the kernel must not read them.
      bias = random_vector(size_t(c.heads) * c.q_len * c.kv_len, seed + 4);
      for (float& x : bias) x *= 4.0f;
      const uint32_t w = c.kv_len + 3;
      std::vector<float> wide(size_t(c.heads) * c.q_len * w, std::numeric_limits<float>::quiet_NaN());
      for (size_t r = 0; r < size_t(c.heads) * c.q_len; ++r)
        std::copy_n(bias.begin() + r * c.kv_len, c.kv_len, wide.begin() + r * w);
      tbias = ctx.tensor({c.heads, c.q_len, w}, wide);
    }
  }
  AttnInputs(const AttnInputs&) = delete;
  AttnInputs& operator=(const AttnInputs&) = delete;

  /// Rows (b, h, i) whose every key is masked.
  std::vector<size_t> fully_masked_rows() const {
    std::vector<size_t> rows;
    for (uint32_t b = 0; b < shape.batch; ++b)
      for (uint32_t h = 0; h < shape.heads; ++h)
        for (uint32_t i = 0; i < shape.q_len; ++i) {
          bool all = true;
          for (uint32_t j = 0; j < shape.kv_len && all; ++j) all = hmask.masked(b, i, j);
          if (all) rows.push_back((size_t(b) * shape.heads + h) * shape.q_len + i);
        }
    return rows;
  }
};

/// Every output element of a fully masked row (b, h, i) of a [B, Lq, H·D] output is exactly 0.
inline void expect_zero_rows(const std::vector<float>& out, const AttnInputs& in) {
  const auto& s = in.shape;
  for (size_t r : in.fully_masked_rows()) {
    const size_t i = r % s.q_len, h = r / s.q_len % s.heads, b = r / (size_t(s.q_len) * s.heads);
    const float* o = &out[(b * s.q_len + i) * s.heads * s.head_dim + h * s.head_dim];
    for (uint32_t c = 0; c < s.head_dim; ++c) ASSERT_EQ(o[c], 0.0f) << "fully masked row " << r;
  }
}

/// The case as a row of the generic op test (op_test.hpp), whose registered
/// case (src/ops/op_case.hpp) reads Q and a packed KV memory, pads the last 3·b
/// keys of sequence b and offsets a causal mask by kv_len − q_len when positive.
inline std::string op_shape(const AttnCase& c) {
  static const char* masks[] = {"none", "padding", "causal", "both"};
  std::ostringstream s;
  s << "batch=" << c.batch << ",heads=" << c.heads << ",head_dim=" << c.head_dim << ",q_len=" << c.q_len
    << ",kv_len=" << c.kv_len << ",mask=" << masks[int(c.mask)] << ",dtype=" << dtype_name(c.kv);
  if (c.kv_heads) s << ",kv_heads=" << c.kv_heads;
  if (c.window) s << ",window=" << c.window;
  return s.str();
}
inline std::vector<std::string> op_shapes(const std::vector<AttnCase>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases) out.push_back(op_shape(c));
  return out;
}

/// The cases the registered case cannot stand for, which an op's own test runs
/// on AttnInputs: another layout (when the op reads Q, K or V), a row whose
/// every key is masked (or may be: padding in a sliding window), or a causal
/// offset other than kv_len − q_len.
inline std::vector<AttnCase> own_input_cases(const std::vector<AttnCase>& cases, bool layout_matters = true) {
  std::vector<AttnCase> out;
  for (const auto& c : cases) {
    const bool pad = c.mask == MaskKind::Padding || c.mask == MaskKind::Both;
    const bool causal = c.mask == MaskKind::Causal || c.mask == MaskKind::Both;
    const bool fully_masked =
        (pad && c.batch == 3) || (c.mask == MaskKind::Both && c.causal_offset == 0) || (pad && c.window);
    const bool other_offset = causal && c.causal_offset != (c.kv_len > c.q_len ? c.kv_len - c.q_len : 0);
    if ((layout_matters && c.layout != Layout::PackedKV) || fully_masked || other_offset) out.push_back(c);
  }
  return out;
}

// For the scores and values kernels: every head dim (and 24, 40, and 30: not a
// multiple of 4) with f32 and f16 K,
// lengths that are not tile multiples, one-row queries, cross attention
// (Lq ≠ Lk), packed projections and a KV cache longer than the keys filled so far;
// grouped-query (kv_heads 2, 3) and multi-query (kv_heads 1) K/V in each layout.
inline std::vector<AttnCase> view_cases() {
  const std::vector<AttnCase> base = {
      {1, 1, 32, 1, 1, Layout::Separate},   {1, 1, 24, 5, 5, Layout::Separate},
      {2, 3, 64, 17, 33, Layout::Separate}, {3, 2, 80, 33, 17, Layout::Cache},
      {1, 3, 128, 64, 64, Layout::PackedQKV}, {2, 2, 40, 5, 70, Layout::PackedKV},
      {3, 1, 64, 70, 70, Layout::PackedQKV}, {1, 2, 128, 1, 65, Layout::Cache},
      {2, 1, 32, 33, 1, Layout::Separate},  {1, 3, 80, 17, 17, Layout::PackedQKV},
      {3, 3, 30, 1, 33, Layout::PackedKV},  {2, 2, 128, 33, 5, Layout::Separate},
      grouped({2, 6, 64, 17, 33, Layout::Separate}, 2), grouped({1, 4, 32, 1, 65, Layout::Cache}, 1),
      grouped({2, 4, 40, 33, 33, Layout::PackedQKV}, 2), grouped({3, 6, 30, 5, 70, Layout::PackedKV}, 3),
  };
  std::vector<AttnCase> out;
  for (AttnCase c : base)
    for (DType dt : weight_dtypes()) {
      if (c.layout == Layout::PackedQKV && dt == DType::F16) continue;  // Q is f32
      c.kv = dt;
      out.push_back(c);
    }
  return out;
}

}  // namespace vkf::test
