// Naive CPU references for every kernel, computed in double precision.
// Tests and `vkformer kernel` check the Vulkan kernels against these.
#pragma once

#include <cstdint>
#include <vector>

#include "vkformer/ops.hpp"
#include "vkformer/weight_format.hpp"

namespace vkf::ref {

/// A host-side HeadsView: [batch, length, heads·head_dim] inside wider rows
/// (K and V: kv_heads·head_dim).
struct HostHeads {
  const std::vector<float>* data = nullptr;
  uint32_t col_offset = 0;
  uint32_t row_stride = 0;    ///< must be set (no defaults on the host side)
  uint32_t batch_stride = 0;  ///< must be set
  double at(uint32_t b, uint32_t i, uint32_t col) const {
    return (*data)[size_t(b) * batch_stride + size_t(i) * row_stride + col_offset + col];
  }
};

/// A host-side AttentionMask.
struct HostMask {
  const std::vector<int32_t>* key_padding = nullptr;
  uint32_t key_padding_stride = 0;  ///< must be set when key_padding is
  bool causal = false;
  uint32_t causal_offset = 0;
  uint32_t window = 0;  ///< with causal: keys j ≤ i + causal_offset − window are masked too
  bool masked(uint32_t b, uint32_t i, uint32_t j) const;
};

/// The activation in double precision (GELU with the exact erf).
double activation(double v, Activation act);

/// act(X·Wᵀ + b) + R, [M, N].
std::vector<double> gemm(const std::vector<float>& x, const std::vector<float>& w,
                         const std::vector<float>* bias, const std::vector<float>* residual,
                         int64_t M, int64_t N, int64_t K, Activation act);

/// [B, H, Lq, Lk] scores; query head h reads K head h / s.heads_per_kv().
std::vector<double> attention_scores(const HostHeads& q, const HostHeads& k,
                                     const AttentionShape& s, double scale);

/// Row softmax of [B, H, Lq, Lk] scores; fully masked rows are zero.
std::vector<double> masked_softmax(const std::vector<double>& scores, const AttentionShape& s,
                                   const HostMask& m);

/// [B, Lq, H·D] = P·V with heads concatenated; head h reads V head h / s.heads_per_kv().
std::vector<double> attention_values(const std::vector<double>& probs, const HostHeads& v,
                                     const AttentionShape& s);

/// softmax(scale·QKᵀ + bias, masked)·V, [B, Lq, H·D]; `bias` is an optional
/// [H, Lq, Lk] table, the same for every batch (FlashAttentionArgs::bias).
std::vector<double> attention(const HostHeads& q, const HostHeads& k, const HostHeads& v,
                              const AttentionShape& s, const HostMask& m, double scale,
                              const std::vector<float>* bias = nullptr);

/// LayerNorm(x + residual) over rows of length d.
std::vector<double> layernorm(const std::vector<float>& x, const std::vector<float>* residual,
                              const std::vector<float>& gamma, const std::vector<float>& beta,
                              int64_t rows, int64_t d, double eps);

/// x / √(mean(x²) + eps)·gamma over rows of length d.
std::vector<double> rmsnorm(const std::vector<float>& x, const std::vector<float>& gamma, int64_t rows,
                            int64_t d, double eps);

/// table[ids]·scale + positions[pos_offset + i], [B, L, d].
std::vector<double> embedding(const std::vector<int32_t>& ids, uint32_t batch, uint32_t len,
                              const std::vector<float>& table, uint32_t d,
                              const std::vector<float>* positions, uint32_t pos_offset,
                              double scale);

/// table[ids]·scale + positions[position_ids[b, i]], [B, L, d].
std::vector<double> embedding_at(const std::vector<int32_t>& ids, uint32_t batch, uint32_t len,
                                 const std::vector<float>& table, uint32_t d,
                                 const std::vector<float>& positions,
                                 const std::vector<int32_t>& position_ids, double scale);

/// copy_rows() on host vectors: returns dst after the copy. With an f16 a.dst the
/// copied values are rounded to fp16 (to nearest even).
std::vector<float> copy_rows(const std::vector<float>& src, std::vector<float> dst,
                             const CopyRowsArgs& a, const std::vector<int32_t>* index);

/// rope() on a host [batch, len, width] x: the angle p·inv_freq[i] rounded to fp32
/// (p rounded to fp32 too, as HF's position_ids.float()), its cos and sin in double;
/// position_ids [batch, len] when given (else a.pos_offset + t). Returns all of x,
/// the columns rope() leaves alone included.
std::vector<double> rope(const std::vector<float>& x, uint32_t batch, uint32_t len, uint32_t width,
                         const RopeArgs& a, const std::vector<float>& inv_freq,
                         const std::vector<int32_t>* position_ids);

/// Mean (or `mode`) of x[b, i, :] over the rows whose key_padding is 0 (stride `mask_stride`), [B, d].
std::vector<double> mean_pool(const std::vector<float>& x, const std::vector<int32_t>* key_padding,
                              uint32_t mask_stride, uint32_t batch, uint32_t len, uint32_t d,
                              PoolMode mode = PoolMode::Mean);

/// x / √max(Σx², eps) over rows of length d.
std::vector<double> l2_normalize(const std::vector<float>& x, int64_t rows, int64_t d, double eps);

/// a + b.
std::vector<double> add(const std::vector<float>& a, const std::vector<float>& b);

/// a ⊙ b.
std::vector<double> mul(const std::vector<float>& a, const std::vector<float>& b);

/// [heads, q_len, kv_len]: table[buckets[clamp(j − i − q_offset) + max_rel], h] (position_bias()).
std::vector<double> position_bias(const std::vector<float>& table, const std::vector<int32_t>& buckets,
                                  uint32_t heads, uint32_t q_len, uint32_t kv_len, uint32_t q_offset);

/// Top k of each row, largest first, ties to the lower index.
void topk(const std::vector<float>& x, int64_t rows, int64_t n, uint32_t k,
          std::vector<float>& values, std::vector<int32_t>& indices);

/// max |got − want| / max |want|: the error metric every test states a bound for.
double max_rel_error(const std::vector<float>& got, const std::vector<double>& want);

/// `values` values stored in `format` at `bytes` (whole blocks for a block
/// format; GGUF's layouts, vkformer/weight_format.hpp), as fp32: bit for bit
/// what ggml's dequantize_row_* and gguf.quants.dequantize compute.
/// @throws vkf::Error when `values` is not a whole number of blocks.
std::vector<float> dequantize(WeightFormat format, const uint8_t* bytes, size_t values);

/// `n` values (a multiple of 32) as blocks of Q8_0, Q4_0 or Q4_1, byte for
/// byte what ggml's quantize_row_q8_0_ref / q4_0_ref / q4_1_ref (and
/// gguf.quants.quantize) write.
/// @throws vkf::Error for another format or a partial block.
std::vector<uint8_t> quantize(WeightFormat format, const float* values, size_t n);

}  // namespace vkf::ref
