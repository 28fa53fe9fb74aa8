// Argument checks shared by the attention ops: head views into wider rows,
// the attention shape and the mask, resolved to the strides shaders take.
#pragma once

#include <cmath>
#include <string>

#include "ops/op_util.hpp"

namespace vkf {

/// A HeadsView with its defaults filled in.
struct ViewStrides {
  uint32_t off = 0, row = 0, batch = 0;
};

inline void check_shape(const AttentionShape& s, const char* op) {
  VKF_REQUIRE(s.batch >= 1 && s.heads >= 1 && s.head_dim >= 1 && s.q_len >= 1 && s.kv_len >= 1, op,
              "shape needs batch, heads, head_dim, q_len and kv_len ≥ 1 (got " + std::to_string(s.batch) +
                  ", " + std::to_string(s.heads) + ", " + std::to_string(s.head_dim) + ", " +
                  std::to_string(s.q_len) + ", " + std::to_string(s.kv_len) + ")");
  VKF_REQUIRE(s.heads % s.kv_head_count() == 0, op,
              "heads " + std::to_string(s.heads) + " is not a multiple of kv_heads " + std::to_string(s.kv_heads));
}

/// Which heads a view holds: Q (and the output) has heads, K and V have kv_heads.
enum class ViewHeads { Query, KeyValue };

/// Checks that `len` rows of heads·head_dim columns (kv_heads·head_dim for K
/// and V) per batch fit in the view's tensor.
inline ViewStrides check_view(const HeadsView& v, const AttentionShape& s, ViewHeads which, uint32_t len,
                              const char* op, const char* name) {
  const std::string n(name);
  VKF_REQUIRE(v.t && !v.t->empty(), op, n + " is missing");
  const Tensor& t = *v.t;
  VKF_REQUIRE(v.batch_stride || t.shape().size() >= 2, op,
              n + " " + t.describe() + " needs a batch_stride or at least 2 dimensions");
  const uint64_t row = v.row_stride ? v.row_stride : uint64_t(t.dim(-1));
  const uint64_t batch = v.batch_stride ? v.batch_stride : row * uint64_t(t.dim(-2));
  const bool kv = which == ViewHeads::KeyValue;
  const uint64_t width = uint64_t(kv ? s.kv_head_count() : s.heads) * s.head_dim;
  VKF_REQUIRE(v.col_offset + width <= row, op,
              n + ": columns [" + std::to_string(v.col_offset) + ", " + std::to_string(v.col_offset + width) +
                  ") (col_offset + " + (kv && s.kv_heads ? "kv_heads" : "heads") + "·head_dim) do not fit in rows of " +
              std::to_string(row) + " elements");
  const uint64_t last = uint64_t(s.batch - 1) * batch + uint64_t(len - 1) * row + v.col_offset + width - 1;
  VKF_REQUIRE(last < uint64_t(t.numel()), op,
              n + " " + t.describe() + " is too small for " + std::to_string(s.batch) + " batches of " +
                  std::to_string(len) + " rows (row stride " + std::to_string(row) + ", batch stride " +
                  std::to_string(batch) + ", col_offset " + std::to_string(v.col_offset) + ")");
  VKF_REQUIRE(batch < (1ull << 32) && uint64_t(t.numel()) < (1ull << 32), op,
              n + " " + t.describe() + " has more than 2^32 elements");
  return {v.col_offset, uint32_t(row), uint32_t(batch)};
}

/// Checks a [batch, heads, q_len, kv_len] f32 score tensor.
inline void check_scores(const Tensor* t, const AttentionShape& s, const char* op, const char* name) {
  require_tensor(t, op, name, DType::F32);
  const std::vector<int64_t> want{s.batch, s.heads, s.q_len, s.kv_len};
  VKF_REQUIRE(t->shape() == want, op,
              std::string(name) + " " + t->describe() + " must be [" + std::to_string(s.batch) + ", " +
                  std::to_string(s.heads) + ", " + std::to_string(s.q_len) + ", " + std::to_string(s.kv_len) +
                  "] (batch, heads, q_len, kv_len)");
  VKF_REQUIRE(uint64_t(t->numel()) < (1ull << 32), op, std::string(name) + " has more than 2^32 elements");
}

/// Checks a [batch, q_len, heads·head_dim] f32 output.
inline void check_out(const Tensor* t, const AttentionShape& s, const char* op) {
  require_tensor(t, op, "out", DType::F32);
  const std::vector<int64_t> want{s.batch, s.q_len, int64_t(s.heads) * s.head_dim};
  VKF_REQUIRE(t->shape() == want, op,
              "out " + t->describe() + " must be [" + std::to_string(s.batch) + ", " + std::to_string(s.q_len) +
                  ", " + std::to_string(uint64_t(s.heads) * s.head_dim) + "] (batch, q_len, heads·head_dim)");
  VKF_REQUIRE(uint64_t(t->numel()) < (1ull << 32), op, "out has more than 2^32 elements");
}

/// The mask's key-padding stride (0 when there is no padding mask).
inline uint32_t check_mask(const AttentionMask& m, const AttentionShape& s, const char* op) {
  VKF_REQUIRE(!m.causal || uint64_t(m.causal_offset) + s.q_len < (1ull << 32), op,
              "mask.causal_offset " + std::to_string(m.causal_offset) + " + q_len passes 2^32");
  VKF_REQUIRE(!m.window || m.causal, op,
              "mask.window " + std::to_string(m.window) +
                  " needs mask.causal (a sliding window counts back from each query's position)");
  if (!m.key_padding) return 0;
  require_tensor(m.key_padding, op, "mask.key_padding", DType::I32);
  const uint64_t stride = m.key_padding_stride ? m.key_padding_stride : s.kv_len;
  VKF_REQUIRE(stride >= s.kv_len, op,
              "mask.key_padding_stride " + std::to_string(stride) + " is less than kv_len " +
                  std::to_string(s.kv_len));
  VKF_REQUIRE(uint64_t(s.batch - 1) * stride + s.kv_len <= uint64_t(m.key_padding->numel()), op,
              "mask.key_padding " + m.key_padding->describe() + " is too small for " + std::to_string(s.batch) +
                  " batches of " + std::to_string(s.kv_len) + " keys with stride " + std::to_string(stride));
  return uint32_t(stride);
}

inline uint32_t pow2_floor(uint32_t v) {
  uint32_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}
inline uint32_t pow2_ceil(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p *= 2;
  return p;
}

/// Shared memory a staged tile may take: half the device's, so a second
/// workgroup (or a driver's own use) still fits beside it.
inline uint32_t stage_budget(const Capabilities& c) { return c.max_shared_memory / 2; }

/// A power-of-two workgroup of up to 64 invocations, one per item, at least a subgroup.
inline uint32_t lanes(const Capabilities& c, uint32_t items) {
  const uint32_t want = std::max(std::max(1u, c.subgroup_size), std::min(64u, pow2_ceil(items)));
  return pow2_floor(workgroup_size(c, want));
}

}  // namespace vkf
