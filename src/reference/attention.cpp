// Double-precision references for the attention ops, written as the
// definitions read: no tiling, no online softmax. Query head h reads K/V head
// h / heads_per_kv(), as if HF's repeat_kv had copied them.
#include <cmath>
#include <limits>

#include "vkformer/reference.hpp"

namespace vkf::ref {

bool HostMask::masked(uint32_t b, uint32_t i, uint32_t j) const {
  if (causal && j > i + causal_offset) return true;
  if (causal && window && uint64_t(j) + window <= uint64_t(i) + causal_offset) return true;  // left the window
  return key_padding && (*key_padding)[size_t(b) * key_padding_stride + j] != 0;
}

std::vector<double> attention_scores(const HostHeads& q, const HostHeads& k, const AttentionShape& s,
                                     double scale) {
  std::vector<double> out(size_t(s.batch) * s.heads * s.q_len * s.kv_len);
  size_t o = 0;
  for (uint32_t b = 0; b < s.batch; ++b)
    for (uint32_t h = 0; h < s.heads; ++h) {
      const uint32_t kcol = h / s.heads_per_kv() * s.head_dim;  // this head's K columns
      for (uint32_t i = 0; i < s.q_len; ++i)
        for (uint32_t j = 0; j < s.kv_len; ++j) {
          double acc = 0;
          for (uint32_t c = 0; c < s.head_dim; ++c) acc += q.at(b, i, h * s.head_dim + c) * k.at(b, j, kcol + c);
          out[o++] = scale * acc;
        }
    }
  return out;
}

std::vector<double> masked_softmax(const std::vector<double>& scores, const AttentionShape& s,
                                   const HostMask& m) {
  std::vector<double> out(scores.size(), 0.0);
  const size_t n = s.kv_len;
  for (uint32_t b = 0; b < s.batch; ++b)
    for (uint32_t h = 0; h < s.heads; ++h)
      for (uint32_t i = 0; i < s.q_len; ++i) {
        const size_t row = ((size_t(b) * s.heads + h) * s.q_len + i) * n;
        double mx = -std::numeric_limits<double>::infinity();
        for (uint32_t j = 0; j < n; ++j)
          if (!m.masked(b, i, j)) mx = std::max(mx, scores[row + j]);
        if (std::isinf(mx)) continue;  // every key masked: zeros
        double sum = 0;
        for (uint32_t j = 0; j < n; ++j)
          if (!m.masked(b, i, j)) sum += out[row + j] = std::exp(scores[row + j] - mx);
        for (uint32_t j = 0; j < n; ++j) out[row + j] /= sum;
      }
  return out;
}

std::vector<double> attention_values(const std::vector<double>& probs, const HostHeads& v,
                                     const AttentionShape& s) {
  const size_t width = size_t(s.heads) * s.head_dim;
  std::vector<double> out(size_t(s.batch) * s.q_len * width, 0.0);
  for (uint32_t b = 0; b < s.batch; ++b)
    for (uint32_t h = 0; h < s.heads; ++h) {
      const uint32_t vcol = h / s.heads_per_kv() * s.head_dim;  // this head's V columns
      for (uint32_t i = 0; i < s.q_len; ++i) {
        const double* p = &probs[((size_t(b) * s.heads + h) * s.q_len + i) * s.kv_len];
        double* o = &out[(size_t(b) * s.q_len + i) * width + size_t(h) * s.head_dim];
        for (uint32_t j = 0; j < s.kv_len; ++j)
          for (uint32_t c = 0; c < s.head_dim; ++c) o[c] += p[j] * v.at(b, j, vcol + c);
      }
    }
  return out;
}

std::vector<double> attention(const HostHeads& q, const HostHeads& k, const HostHeads& v,
                              const AttentionShape& s, const HostMask& m, double scale,
                              const std::vector<float>* bias) {
  std::vector<double> scores = attention_scores(q, k, s, scale);
  const size_t per_batch = size_t(s.heads) * s.q_len * s.kv_len;
  if (bias)
    for (size_t e = 0; e < scores.size(); ++e) scores[e] += (*bias)[e % per_batch];
  return attention_values(masked_softmax(scores, s, m), v, s);
}

}  // namespace vkf::ref
