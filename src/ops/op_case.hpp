// Helpers for the case factories of the op descriptors (registry.hpp): seeded
// inputs, what fp16 storage holds, attention masks on the device and the host,
// and the holder that keeps a case's data alive.
#pragma once

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ops/registry.hpp"
#include "vkformer/reference.hpp"

namespace vkf::cases {

/// n values uniform in [lo, hi), seeded.
inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

/// What a tensor of `t` holds after uploading v: the reference uses these values.
inline std::vector<float> as_stored(const std::vector<float>& v, DType t) {
  return t == DType::F16 ? round_to_half(v) : v;
}

inline std::string dtype_str(DType t) { return dtype_name(t); }

/// A case's data: host vectors and device tensors at stable addresses (the
/// closures hold pointers into them).
struct Data {
  std::vector<std::unique_ptr<std::vector<float>>> host;
  std::vector<std::unique_ptr<Tensor>> dev;
  std::vector<int32_t> ids;
  const std::vector<float>& h(std::vector<float> v) {
    host.push_back(std::make_unique<std::vector<float>>(std::move(v)));
    return *host.back();
  }
  Tensor& t(Tensor v) {
    dev.push_back(std::make_unique<Tensor>(std::move(v)));
    return *dev.back();
  }
};

/// Seeded random blocks of block type `t` holding n values (a multiple of the
/// block): random quantized values under scales that keep them within about
/// ±2 (Q4_1 and Q4_K with their minimums too), every nibble value used.
inline std::vector<uint8_t> random_blocks(DType t, size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<uint8_t> b(dtype_bytes(t, n));
  for (auto& x : b) x = uint8_t(g());
  std::uniform_real_distribution<float> u(0.5f, 1.f);
  auto put = [&](size_t at, float f) {
    const uint16_t h = float_to_half(f);
    b[at] = uint8_t(h), b[at + 1] = uint8_t(h >> 8);
  };
  const size_t bb = dtype_block_bytes(t);
  for (size_t at = 0; at < b.size(); at += bb) switch (t) {
      case DType::Q8_0: put(at, 0.01f * u(g)); break;
      case DType::Q4_0: put(at, 0.2f * u(g)); break;
      case DType::Q4_1: put(at, 0.1f * u(g)), put(at + 2, -0.8f * u(g)); break;
      case DType::Q4_K: put(at, 0.003f * u(g)), put(at + 2, 0.01f * u(g)); break;
      case DType::Q6_K: put(at + 208, 0.0005f * u(g)); break;
      default: break;
    }
  return b;
}

/// A weight-like tensor of `t` and the values it holds, which the reference
/// uses: v as stored for a plain type; for a block type, random blocks
/// (random_blocks(), seeded) instead of v, uploaded byte for byte.
inline std::pair<const std::vector<float>*, Tensor*> weight_tensor(Context& ctx, Data& D, std::vector<int64_t> shape,
                                                                   const std::vector<float>& v, DType t,
                                                                   uint32_t seed) {
  if (!is_block_dtype(t)) {
    const auto* h = &D.h(as_stored(v, t));
    return {h, &D.t(ctx.tensor(std::move(shape), *h, t))};
  }
  const std::vector<uint8_t> blocks = random_blocks(t, v.size(), seed);
  const auto* h = &D.h(ref::dequantize(weight_format_of(t), blocks.data(), v.size()));
  Tensor& w = D.t(ctx.tensor(std::move(shape), t));
  ctx.write_bytes(w, blocks.data(), blocks.size());
  return {h, &w};
}

/// An attention mask from OpShape::mask: with padding, sequence b has its last
/// 3·b keys masked (never all of them); causal hides keys after i + offset.
struct Mask {
  std::vector<int32_t> host;
  Tensor dev;
  AttentionMask dm;
  ref::HostMask hm;
  bool padding = false;
};
/// @throws vkf::Error for an unknown mask name.
std::shared_ptr<Mask> make_mask(Context& ctx, const OpShape& s);

/// Attention inputs: Q [B, Lq, d] and a packed [B, Lk, 2d'] KV, as cross-attention
/// has them (K in columns [0, d'), V in [d', 2d')), in s.dtype for K and V;
/// d = heads·head_dim, d' = kv_heads·head_dim (d without kv_heads).
struct Heads {
  HeadsView q, k, v;
  ref::HostHeads hq, hk, hv;
  AttentionShape shape;
};
Heads attention_inputs(Context& ctx, const OpShape& s, Data& d);

/// "B=1 H=12 D=64 Lq=128 Lk=128 mask=padding kv f32" (" KVH=4" after H with kv_heads).
std::string attention_shape_text(const OpShape& s);
/// "12h 128x128": the attention ops' chart label ("12h 4kv 128x128" with kv_heads).
std::string attention_label(const OpShape& s);
/// m rows of n: the row-wise ops' shapes.
inline OpShape rows_shape(int64_t m, int64_t n) {
  OpShape s;
  s.m = m, s.n = n;
  return s;
}

/// The benchmark's attention shape: 12 heads × 64, 128 queries and keys, padding mask.
OpShape attention_bench_shape(DType dt = DType::F32);

/// How a case records an op whose args carry a `variant`: a copy of `args` with the variant set.
template <class Args>
std::function<OpInfo(Recorder&, const std::string&)> recording(OpInfo (*op)(Recorder&, const Args&), Args args) {
  return [op, args](Recorder& rec, const std::string& v) {
    Args a = args;
    a.variant = v;
    return op(rec, a);
  };
}

/// How a case checks: `out` read back against what `want()` computes (once, then kept).
inline std::function<double()> against(Context& ctx, const Tensor& out, std::function<std::vector<double>()> want) {
  auto kept = std::make_shared<std::vector<double>>();
  return [ctx = &ctx, out = &out, want = std::move(want), kept]() {
    if (kept->empty()) *kept = want();
    return ref::max_rel_error(ctx->read(*out), *kept);
  };
}

/// A case: its data kept alive with it, its shape for tables, how to record and check it.
inline OpCase make(std::shared_ptr<void> data, std::string shape,
                   std::function<OpInfo(Recorder&, const std::string&)> record, std::function<double()> error,
                   double bound = 1e-5) {
  return {std::move(shape), std::move(record), std::move(error), bound, std::move(data)};
}

}  // namespace vkf::cases
