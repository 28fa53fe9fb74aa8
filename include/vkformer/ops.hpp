// The kernels, one function each. Every function records into a Recorder and
// returns what it dispatched: the variant it picked, its specialization
// constants, and its FLOP and byte counts (for the benchmark).
//
// Conventions:
//   - activations are fp32; weights, tables and K/V may be fp32 or fp16
//     (storage only: every kernel accumulates in fp32);
//   - shapes are row-major, outermost first, like PyTorch with batch_first;
//   - `variant` empty means "pick from the device's capabilities".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkformer/recorder.hpp"
#include "vkformer/tensor.hpp"

namespace vkf {

/// What an op dispatched.
struct OpInfo {
  std::string op;
  std::string variant;
  /// Specialization constants, then "SGS" (the subgroup size the pipeline
  /// requires) when a tuned configuration set one.
  std::vector<std::pair<std::string, uint32_t>> spec;
  double flops = 0;  ///< useful floating-point operations
  double bytes = 0;  ///< minimum bytes read + written
  /// The shape class it looked up in the tuning database ("" for an op that is
  /// not tuned), and whether a tuned configuration chose the variant or knobs.
  std::string shape_class;
  bool tuned = false;
};

enum class Activation { None, ReLU, GeluErf, GeluTanh, SiLU, Tanh };

/// Y = act(X·Wᵀ + b) + R, with W stored as PyTorch's nn.Linear weight.
struct GemmArgs {
  const Tensor* x = nullptr;         ///< [..., K] f32, leading dims are M
  const Tensor* w = nullptr;         ///< [N, K] f32 or f16
  const Tensor* bias = nullptr;      ///< optional [N], dtype of w
  const Tensor* residual = nullptr;  ///< optional [..., N] f32, added after act
  Tensor* y = nullptr;               ///< [..., N] f32; must not alias x or residual
  Activation act = Activation::None;
  /// "" (auto), "gemv" (reduction picked from the device), "gemv_subgroup",
  /// "gemv_shared", "tiled", "tiled_small" (shared-memory tiles) or "blocked"
  /// (register blocks read straight from the buffers, what CPU devices want).
  std::string variant;
  /// The product goes to Y's columns [y_col, y_col + N) when Y (and the residual)
  /// are wider than N, the rest of Y left as it is: one part of a stacked
  /// projection whose parts are stored in different formats. The bias then has
  /// Y's width and is read from y_col.
  uint32_t y_col = 0;
};
/// @throws vkf::Error on a shape or dtype mismatch, naming the argument.
OpInfo gemm(Recorder& rec, const GemmArgs& a);
/// The GEMM variants, for benchmarks and tests.
std::vector<std::string> gemm_variants();

/// A [batch, length, heads·head_dim] view into a tensor whose rows may be
/// wider, e.g. the K part of a packed [batch, length, 3·d] QKV projection
/// (K and V views: kv_heads·head_dim columns, AttentionShape::kv_heads).
struct HeadsView {
  const Tensor* t = nullptr;
  uint32_t col_offset = 0;    ///< first column of the view within a row
  uint32_t row_stride = 0;    ///< elements between rows; 0: the tensor's last dim
  uint32_t batch_stride = 0;  ///< elements between batches; 0: row_stride·dim(-2)
};

/// The sizes of one attention call. Q and the output have `heads` heads, K and
/// V have kv_heads, read in place (never repeated in memory).
struct AttentionShape {
  uint32_t batch = 1, heads = 1, head_dim = 64;
  uint32_t q_len = 1;   ///< query rows
  uint32_t kv_len = 1;  ///< keys (for a KV cache: keys filled so far)
  /// Heads of K and V; 0: heads. Each K/V head serves heads/kv_heads consecutive
  /// query heads (grouped-query attention; 1: multi-query), as HF's repeat_kv.
  uint32_t kv_heads = 0;
  /// The heads K and V have: kv_heads, or heads when it is 0.
  uint32_t kv_head_count() const { return kv_heads ? kv_heads : heads; }
  /// Query heads per K/V head: query head h reads K/V head h / heads_per_kv().
  uint32_t heads_per_kv() const { return heads / kv_head_count(); }
};

/// Which scores become -inf before the softmax. A row with every key masked
/// gives all-zero probabilities (and a zero attention output), never NaN.
struct AttentionMask {
  const Tensor* key_padding = nullptr;  ///< optional [batch, ≥kv_len] i32; nonzero = masked key
  uint32_t key_padding_stride = 0;      ///< elements between batches; 0: kv_len
  bool causal = false;                  ///< query i sees keys j ≤ i + causal_offset
  uint32_t causal_offset = 0;           ///< keys before the first query (KV-cache decoding)
  /// Sliding window (Mistral's sliding_window, HF's semantics); 0: none. Needs
  /// causal: query i, at position i + causal_offset, sees keys j with
  /// (i + causal_offset) − window < j ≤ i + causal_offset, the last `window` keys.
  uint32_t window = 0;
};

/// S[b,h,i,j] = scale · Σ_c Q[b,i,h,c]·K[b,j,g,c], read straight from the views;
/// g = h / shape.heads_per_kv() (g = h without kv_heads).
struct AttentionScoresArgs {
  HeadsView q, k;
  AttentionShape shape;
  float scale = 1.0f;       ///< usually 1/√head_dim
  Tensor* scores = nullptr; ///< [batch, heads, q_len, kv_len] f32
  std::string variant;      ///< "tiled" or "" (the same)
};
OpInfo attention_scores(Recorder& rec, const AttentionScoresArgs& a);

/// In place: each row of S becomes softmax over its unmasked keys (fp32 sums).
struct SoftmaxArgs {
  Tensor* scores = nullptr;  ///< [batch, heads, q_len, kv_len] f32
  AttentionShape shape;      ///< head_dim unused
  AttentionMask mask;
  std::string variant;       ///< "subgroup", "shared" or "" (auto)
};
OpInfo masked_softmax(Recorder& rec, const SoftmaxArgs& a);

/// O[b,i,h·D + c] = Σ_j P[b,h,i,j]·V[b,j,g,c], g = h / shape.heads_per_kv():
/// heads written concatenated.
struct AttentionValuesArgs {
  const Tensor* probs = nullptr;  ///< [batch, heads, q_len, kv_len] f32
  HeadsView v;
  AttentionShape shape;
  Tensor* out = nullptr;          ///< [batch, q_len, heads·head_dim] f32
  std::string variant;            ///< "tiled" or "" (the same)
};
OpInfo attention_values(Recorder& rec, const AttentionValuesArgs& a);

/// softmax(scale·QKᵀ + mask)·V in one pass with an online softmax; the score
/// matrix is never stored. Same masks, K/V heads and output layout as the unfused path.
struct FlashAttentionArgs {
  HeadsView q, k, v;
  AttentionShape shape;
  AttentionMask mask;
  float scale = 1.0f;
  Tensor* out = nullptr;  ///< [batch, q_len, heads·head_dim] f32; head_dim ≤ 256
  /// "" (the tuning database, else the rule: texel on a CPU device when K and V
  /// can be texel buffers; on a GPU split for a decode step with few heads and
  /// many keys; else online), "online" (K/V tiles staged in shared memory),
  /// "texel" (K/V read through uniform texel buffers), "split" (flash-decoding:
  /// at most 16 query rows; the keys cut into ranges, one workgroup each, merged
  /// by a second dispatch), or "untuned" (the rule without the database). The
  /// online and texel kernels sum in the same order.
  std::string variant;
  /// Optional [heads, q_len, ≥ kv_len] f32 added to the scaled scores before the
  /// mask, the same for every batch: T5's relative-position bias (position_bias()).
  /// Its rows may be longer than kv_len (one buffer for every decode step).
  const Tensor* bias = nullptr;
};
OpInfo flash_attention(Recorder& rec, const FlashAttentionArgs& a);

/// y = LayerNorm(x + residual)·gamma + beta over the last dimension.
struct LayerNormArgs {
  const Tensor* x = nullptr;         ///< [..., d] f32
  const Tensor* residual = nullptr;  ///< optional, shape of x
  const Tensor* gamma = nullptr;     ///< [d] f32 or f16
  const Tensor* beta = nullptr;      ///< [d], dtype of gamma
  Tensor* y = nullptr;               ///< shape of x, f32; may not alias x
  float eps = 1e-5f;
  std::string variant;               ///< "subgroup", "shared" or ""
};
OpInfo layernorm(Recorder& rec, const LayerNormArgs& a);

/// y = x / √(mean(x²) + eps)·gamma over the last dimension: RMSNorm as T5
/// computes it (no mean subtracted, no beta; the mean square in fp32).
struct RmsNormArgs {
  const Tensor* x = nullptr;      ///< [..., d] f32
  const Tensor* gamma = nullptr;  ///< [d] f32 or f16
  Tensor* y = nullptr;            ///< shape of x, f32; may not alias x
  float eps = 1e-6f;
  std::string variant;            ///< "subgroup", "shared" or "" (auto)
};
OpInfo rmsnorm(Recorder& rec, const RmsNormArgs& a);

/// out[b,i,:] = table[ids[b,i]]·scale + pos[pos_offset + i].
struct EmbeddingArgs {
  const Tensor* ids = nullptr;        ///< [batch, len] i32
  const Tensor* table = nullptr;      ///< [vocab, d] f32 or f16
  const Tensor* positions = nullptr;  ///< optional [max_positions, d] (learned or sinusoidal_table()),
                                      ///< f32 or f16 independently of the table
  uint32_t pos_offset = 0;            ///< position of column 0 (KV-cache decoding)
  const Tensor* position_ids = nullptr;  ///< optional [batch, len] i32: explicit positions
                                         ///< (then pos_offset is unused); clamped on the device
  float scale = 1.0f;                 ///< √d_model when the model scales embeddings
  Tensor* out = nullptr;              ///< [batch, len, d] f32
  std::string variant;                ///< "default" or "" (the same)
};
/// Ids outside [0, vocab) are clamped on the device; callers validate ids first.
OpInfo embedding(Recorder& rec, const EmbeddingArgs& a);

/// The paper's positional encoding: PE(p, 2i) = sin(p / 10000^(2i/d)),
/// PE(p, 2i+1) = cos(p / 10000^(2i/d)), computed in double on the host.
std::vector<float> sinusoidal_table(uint32_t max_positions, uint32_t d);

/// Marian's positional encoding (HF's MarianSinusoidalPositionalEmbedding): with
/// h = ⌈d/2⌉ and f_i = 1/10000^(2i/d), PE(p, i) = sin(p·f_i) for i < h and
/// PE(p, h + i) = cos(p·f_i); computed in double, rounded to fp32 as HF does.
std::vector<float> halves_sinusoidal_table(uint32_t max_positions, uint32_t d);

/// The tensor2tensor timing signal with stored frequencies f (Universal
/// Sentence Encoder): row p is [sin(p·f₀) … sin(p·f_{n−1}) | cos(p·f₀) … cos(p·f_{n−1})],
/// width 2n, sines and cosines concatenated, not interleaved. p·f is rounded
/// to fp32 first, as TensorFlow computes it; sin and cos in double.
std::vector<float> concat_sinusoidal_table(uint32_t max_positions, const std::vector<float>& freqs);

/// In place: rotary position embedding (HF's rotate_half form) on `heads` heads of x,
/// the heads starting at column col0, each head_dim wide. For token t of batch b at
/// position p and i < rotary_dim/2, with a = p·inv_freq[i] (an fp32 product, as HF):
///   x[i]             ← x[i]·cos(a)·scaling − x[i+rotary_dim/2]·sin(a)·scaling
///   x[i+rotary_dim/2] ← x[i+rotary_dim/2]·cos(a)·scaling + x[i]·sin(a)·scaling
/// Columns rotary_dim..head_dim-1 of a head are left as they are. With `interleaved`
/// the pairs are (x[2i], x[2i+1]) instead (GPT-J's layout, llama.cpp's for GGUF "llama"
/// files, whose converter reorders Q and K rows for it): the same rotations, other columns.
/// cos and sin are the kernel's own (shaders/lib/trig.glsl: exact range reduction,
/// within 1 ulp of the fp32 angle's true cos and sin at any position), not GLSL's.
struct RopeArgs {
  Tensor* x = nullptr;                  ///< [batch, len, width] f32, rotated in place
  uint32_t col0 = 0;                    ///< first column of the first rotated head
  uint32_t heads = 0;                   ///< heads rotated, contiguous from col0
  uint32_t head_dim = 0;
  uint32_t rotary_dim = 0;              ///< even, ≤ head_dim; 0: head_dim
  const Tensor* inv_freq = nullptr;     ///< [rotary_dim/2] f32
  const Tensor* position_ids = nullptr; ///< optional [batch, len] i32; else pos_offset + t
  uint32_t pos_offset = 0;
  float scaling = 1.0f;                 ///< HF's attention_scaling (multiplies cos and sin)
  bool interleaved = false;             ///< rotate (x[2i], x[2i+1]) instead of (x[i], x[i+half])
  std::string variant;                  ///< "default" or ""
};
/// @throws vkf::Error naming the argument when a head falls outside x's rows, a
/// tensor has the wrong shape or dtype, or x overlaps inv_freq or position_ids.
OpInfo rope(Recorder& rec, const RopeArgs& a);
/// HF's default inv_freq: 1 / theta^(2i/dim) for i < dim/2, computed in fp32 as torch does
/// (base ** (arange(0, dim, 2).float() / dim), then 1.0 / that).
/// The power is rounded correctly (torch's vectorized pow is within 1 ulp of it).
std::vector<float> rope_inv_freq(float theta, uint32_t dim);

/// How mean_pool() pools a sequence's rows (sentence-transformers' pooling modes).
enum class PoolMode {
  Mean,         ///< Σ / count (TF's Σ/max(count, 1))
  MeanSqrtLen,  ///< Σ / √count
  Max,          ///< elementwise max
  First,        ///< row 0, mask ignored (CLS pooling)
};

/// out[b, :] = the mean (or another PoolMode) of x[b, i, :] over the rows i
/// whose key_padding is 0, or zeros when no row is: a sentence embedding's pooling.
struct MeanPoolArgs {
  const Tensor* x = nullptr;            ///< [batch, len, d] f32
  const Tensor* key_padding = nullptr;  ///< optional [batch, ≥len] i32; nonzero = left out
  uint32_t key_padding_stride = 0;      ///< elements between sequences; 0: len
  Tensor* out = nullptr;                ///< [batch, d] f32
  std::string variant;                  ///< "default" or "" (the same)
  PoolMode mode = PoolMode::Mean;
};
OpInfo mean_pool(Recorder& rec, const MeanPoolArgs& a);

/// y = x / √max(Σx², eps) along the last dimension (tf.math.l2_normalize).
struct L2NormalizeArgs {
  const Tensor* x = nullptr;  ///< [..., d] f32
  Tensor* y = nullptr;        ///< shape of x, f32; must not alias x
  float eps = 1e-12f;
  std::string variant;        ///< "subgroup", "shared" or "" (auto)
};
OpInfo l2_normalize(Recorder& rec, const L2NormalizeArgs& a);

/// y = a + b, elementwise, same shapes, f32.
struct AddArgs {
  const Tensor* a = nullptr;
  const Tensor* b = nullptr;
  Tensor* y = nullptr;
  std::string variant;  ///< "default" or "" (the same)
};
OpInfo add(Recorder& rec, const AddArgs& a);

/// y = a ⊙ b, elementwise, same shapes, f32 (the operands of add()).
using MulArgs = AddArgs;
OpInfo mul(Recorder& rec, const MulArgs& a);

/// T5's relative-position bias, for FlashAttentionArgs::bias:
/// out[h, i, j] = table[buckets[r + max_rel], h] with r = j − (i + q_offset)
/// clamped to [−max_rel, max_rel]; bucket ids are clamped to the table.
struct PositionBiasArgs {
  const Tensor* table = nullptr;    ///< [num_buckets, heads] f32 or f16 (relative_attention_bias.weight)
  const Tensor* buckets = nullptr;  ///< [2·max_rel + 1] i32: the bucket of each relative position
  uint32_t q_len = 1, kv_len = 1;
  uint32_t q_offset = 0;            ///< position of query row 0 (decode steps: the keys before it)
  Tensor* out = nullptr;            ///< [heads, q_len, ≥ kv_len] f32; columns past kv_len are left alone
  std::string variant;              ///< "default" or "" (the same)
};
OpInfo position_bias(Recorder& rec, const PositionBiasArgs& a);

/// Copies a block of rows between two [batch, rows, cols] layouts, optionally
/// gathering source batches by index: dst[b, dst_row0 + i, dst_col + c] =
/// src[index ? index[b] : b, src_row0 + i, src_col + c] for i < rows, c < width.
/// Appending to a KV cache and reordering beams are both this. src and dst are
/// each f32 or f16 (fp16 on a device that can store it, natively or packed):
/// f32 → f16 rounds as the device converts (to nearest, or towards zero), f16 →
/// f16 and f32 → f32 copy the bits, f16 → f32 widens exactly.
struct CopyRowsArgs {
  const Tensor* src = nullptr;     ///< f32 or f16
  uint32_t src_col = 0, src_row0 = 0;
  uint32_t src_row_stride = 0;     ///< elements; 0: src's last dim
  uint32_t src_batch_stride = 0;   ///< elements; 0: src_row_stride·src.dim(-2)
  Tensor* dst = nullptr;           ///< f32 or f16; must not overlap src
  uint32_t dst_col = 0, dst_row0 = 0;
  uint32_t dst_row_stride = 0, dst_batch_stride = 0;  ///< as for src
  uint32_t batch = 1, rows = 1, width = 0;
  const Tensor* index = nullptr;   ///< optional [batch] i32: source batch of each dst batch
  std::string variant;
};
/// @throws vkf::Error when a row, column or index would fall outside a tensor.
OpInfo copy_rows(Recorder& rec, const CopyRowsArgs& a);

/// The k largest values of each row and their indices, largest first; ties go
/// to the lower index (-0 ties with +0); NaN ranks above +inf, as in torch.topk.
/// k = 1 is argmax.
struct TopKArgs {
  const Tensor* x = nullptr;   ///< [rows, n] f32
  uint32_t k = 1;              ///< 1 ≤ k ≤ topk_max_k()
  Tensor* values = nullptr;    ///< [rows, k] f32
  Tensor* indices = nullptr;   ///< [rows, k] i32
  std::string variant;         ///< "subgroup", "shared" or "" (auto)
};
OpInfo topk(Recorder& rec, const TopKArgs& a);
/// The largest k topk() supports.
uint32_t topk_max_k();

}  // namespace vkf
