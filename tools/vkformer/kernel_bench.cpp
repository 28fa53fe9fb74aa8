#include "kernel_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>

#include "vkformer/ops.hpp"
#include "vkformer/recorder.hpp"
#include "vkformer/reference.hpp"

namespace vkf::tools {
namespace {

std::vector<float> rnd(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

DType parse_dtype(const std::string& s) {
  if (s == "f32" || s == "fp32") return DType::F32;
  if (s == "f16" || s == "fp16") return DType::F16;
  throw Error("--dtype must be f32 or f16, got \"" + s + "\"");
}

Activation parse_act(const std::string& s) {
  if (s == "none") return Activation::None;
  if (s == "relu") return Activation::ReLU;
  if (s == "gelu") return Activation::GeluErf;
  if (s == "gelu_tanh") return Activation::GeluTanh;
  if (s == "silu") return Activation::SiLU;
  if (s == "tanh") return Activation::Tanh;
  throw Error("--act must be none, relu, gelu, gelu_tanh, silu or tanh, got \"" + s + "\"");
}

std::vector<float> stored(const std::vector<float>& v, DType t) {
  return t == DType::F16 ? round_to_half(v) : v;
}

/// One kernel set up on the device: how to record it, and how far its output
/// is from the CPU reference after a run.
struct Case {
  std::string shape;
  std::vector<std::string> variants;
  std::function<OpInfo(Recorder&, const std::string&)> record;
  std::function<double()> error;
};

struct Mask {
  std::vector<int32_t> host;
  Tensor dev;
  AttentionMask dm;
  ref::HostMask hm;
};

// Fills m in place: dm and hm point into m itself.
void make_mask(Context& ctx, const KernelOptions& o, Mask& m) {
  bool pad = o.mask == "padding" || o.mask == "both";
  bool causal = o.mask == "causal" || o.mask == "both";
  if (!pad && !causal && o.mask != "none")
    throw Error("--mask must be none, padding, causal or both, got \"" + o.mask + "\"");
  if (pad) {
    m.host.assign(size_t(o.batch) * o.kv_len, 0);
    for (uint32_t b = 0; b < o.batch; ++b)  // batch b has its last b·3 keys padded
      for (uint32_t j = o.kv_len - std::min(o.kv_len - 1, b * 3); j < o.kv_len; ++j)
        m.host[size_t(b) * o.kv_len + j] = 1;
    m.dev = ctx.tensor_i32({o.batch, o.kv_len}, m.host);
    m.dm.key_padding = &m.dev;
    m.hm.key_padding = &m.host;
    m.hm.key_padding_stride = o.kv_len;
  }
  m.dm.causal = m.hm.causal = causal;
  m.dm.causal_offset = m.hm.causal_offset = causal && o.kv_len > o.q_len ? o.kv_len - o.q_len : 0;
}

// Everything a case needs stays alive here for the run.
struct Arena {
  std::vector<std::vector<float>> host;
  std::vector<Tensor> dev;
  std::vector<int32_t> ids;
  std::shared_ptr<Mask> mask;
  std::vector<double> want;
  const std::vector<float>& h(std::vector<float> v) { host.push_back(std::move(v)); return host.back(); }
};

Case gemm_case(Context& ctx, const KernelOptions& o, Arena& A) {
  DType wt = parse_dtype(o.dtype);
  Activation act = parse_act(o.act);
  A.host.reserve(8);
  A.dev.reserve(8);
  auto& x = A.h(rnd(size_t(o.m * o.k), 1));
  auto& w = A.h(stored(rnd(size_t(o.n * o.k), 2), wt));
  auto& b = A.h(stored(rnd(size_t(o.n), 3), wt));
  auto& r = A.h(rnd(size_t(o.m * o.n), 4));
  A.dev = {ctx.tensor({o.m, o.k}, x), ctx.tensor({o.n, o.k}, w, wt), ctx.tensor({o.n}, b, wt),
           ctx.tensor({o.m, o.n}, r), ctx.tensor({o.m, o.n})};
  Case c;
  c.shape = "M=" + std::to_string(o.m) + " N=" + std::to_string(o.n) + " K=" + std::to_string(o.k) +
            " " + o.dtype;
  c.variants = gemm_variants();
  c.record = [&A, &o, act](Recorder& rec, const std::string& v) {
    GemmArgs g;
    g.x = &A.dev[0];
    g.w = &A.dev[1];
    g.bias = o.bias ? &A.dev[2] : nullptr;
    g.residual = o.residual ? &A.dev[3] : nullptr;
    g.y = &A.dev[4];
    g.act = act;
    g.variant = v;
    return gemm(rec, g);
  };
  c.error = [&ctx, &A, &o, act]() {
    if (A.want.empty())
      A.want = ref::gemm(A.host[0], A.host[1], o.bias ? &A.host[2] : nullptr,
                         o.residual ? &A.host[3] : nullptr, o.m, o.n, o.k, act);
    return ref::max_rel_error(ctx.read(A.dev[4]), A.want);
  };
  return c;
}

// Attention inputs: a packed [B, L, 3d] QKV when q_len == kv_len (self-attention),
// else Q [B, Lq, d] and a packed [B, Lk, 2d] KV (cross-attention).
struct AttnData {
  HeadsView q, k, v;
  ref::HostHeads hq, hk, hv;
  AttentionShape s;
};

AttnData attn_inputs(Context& ctx, const KernelOptions& o, Arena& A) {
  DType kv = parse_dtype(o.dtype);
  const uint32_t d = o.heads * o.head_dim;
  A.host.reserve(8);
  A.dev.reserve(8);
  AttnData a;
  a.s = {o.batch, o.heads, o.head_dim, o.q_len, o.kv_len};
  auto& qh = A.h(rnd(size_t(o.batch) * o.q_len * d, 11));
  auto& kvh = A.h(stored(rnd(size_t(o.batch) * o.kv_len * 2 * d, 12), kv));
  A.dev.push_back(ctx.tensor({o.batch, o.q_len, d}, qh));
  A.dev.push_back(ctx.tensor({o.batch, o.kv_len, 2 * d}, kvh, kv));
  a.q = {&A.dev[0], 0, 0, 0};
  a.k = {&A.dev[1], 0, 0, 0};
  a.v = {&A.dev[1], d, 0, 0};
  a.hq = {&qh, 0, d, o.q_len * d};
  a.hk = {&kvh, 0, 2 * d, o.kv_len * 2 * d};
  a.hv = {&kvh, d, 2 * d, o.kv_len * 2 * d};
  return a;
}

std::string attn_shape(const KernelOptions& o) {
  return "B=" + std::to_string(o.batch) + " H=" + std::to_string(o.heads) + " D=" +
         std::to_string(o.head_dim) + " Lq=" + std::to_string(o.q_len) + " Lk=" +
         std::to_string(o.kv_len) + " mask=" + o.mask + " kv " + o.dtype;
}

Case attention_case(Context& ctx, const KernelOptions& o, Arena& A) {
  auto a = std::make_shared<AttnData>(attn_inputs(ctx, o, A));
  A.mask = std::make_shared<Mask>();
  make_mask(ctx, o, *A.mask);
  const float scale = 1.0f / std::sqrt(float(o.head_dim));
  Case c;
  c.shape = attn_shape(o);
  if (o.op == "flash_attention" || o.op == "attention") {
    A.dev.push_back(ctx.tensor({o.batch, o.q_len, o.heads * o.head_dim}));
    A.dev.push_back(ctx.tensor({o.batch, o.heads, o.q_len, o.kv_len}));
    bool fused = o.op == "flash_attention";
    c.variants = fused ? std::vector<std::string>{""} : std::vector<std::string>{"subgroup", "shared"};
    c.record = [&A, a, scale, fused](Recorder& rec, const std::string& v) {
      if (fused) return flash_attention(rec, {a->q, a->k, a->v, a->s, A.mask->dm, scale, &A.dev[2], v});
      // The unfused chain, reported as one op.
      OpInfo s = attention_scores(rec, {a->q, a->k, a->s, scale, &A.dev[3], ""});
      OpInfo m = masked_softmax(rec, {&A.dev[3], a->s, A.mask->dm, v});
      OpInfo p = attention_values(rec, {&A.dev[3], a->v, a->s, &A.dev[2], ""});
      OpInfo all{"attention", "unfused/" + m.variant, {}, s.flops + m.flops + p.flops,
                 s.bytes + m.bytes + p.bytes};
      return all;
    };
    c.error = [&ctx, &A, a, scale]() {
      if (A.want.empty()) A.want = ref::attention(a->hq, a->hk, a->hv, a->s, A.mask->hm, scale);
      return ref::max_rel_error(ctx.read(A.dev[2]), A.want);
    };
  } else if (o.op == "attention_scores") {
    A.dev.push_back(ctx.tensor({o.batch, o.heads, o.q_len, o.kv_len}));
    c.variants = {""};
    c.record = [&A, a, scale](Recorder& rec, const std::string& v) {
      return attention_scores(rec, {a->q, a->k, a->s, scale, &A.dev[2], v});
    };
    c.error = [&ctx, &A, a, scale]() {
      if (A.want.empty()) A.want = ref::attention_scores(a->hq, a->hk, a->s, scale);
      return ref::max_rel_error(ctx.read(A.dev[2]), A.want);
    };
  } else if (o.op == "masked_softmax") {
    auto& sh = A.h(rnd(size_t(o.batch) * o.heads * o.q_len * o.kv_len, 13));
    A.dev.push_back(ctx.tensor({o.batch, o.heads, o.q_len, o.kv_len}, sh));
    c.variants = {"subgroup", "shared"};
    // In place: every run starts from the softmax of the previous one, so the
    // check recomputes from the original scores before the last run.
    c.record = [&A, &ctx, a](Recorder& rec, const std::string& v) {
      ctx.write(A.dev[2], A.host[2]);
      return masked_softmax(rec, {&A.dev[2], a->s, A.mask->dm, v});
    };
    c.error = [&ctx, &A, a]() {
      ctx.write(A.dev[2], A.host[2]);
      Recorder rec(ctx);
      masked_softmax(rec, {&A.dev[2], a->s, A.mask->dm, ""});
      ctx.submit(rec);
      std::vector<double> s(A.host[2].begin(), A.host[2].end());
      return ref::max_rel_error(ctx.read(A.dev[2]), ref::masked_softmax(s, a->s, A.mask->hm));
    };
  } else {  // attention_values
    auto& ph = A.h(rnd(size_t(o.batch) * o.heads * o.q_len * o.kv_len, 14));
    A.dev.push_back(ctx.tensor({o.batch, o.heads, o.q_len, o.kv_len}, ph));
    A.dev.push_back(ctx.tensor({o.batch, o.q_len, o.heads * o.head_dim}));
    c.variants = {""};
    c.record = [&A, a](Recorder& rec, const std::string& v) {
      return attention_values(rec, {&A.dev[2], a->v, a->s, &A.dev[3], v});
    };
    c.error = [&ctx, &A, a]() {
      if (A.want.empty()) {
        std::vector<double> p(A.host[2].begin(), A.host[2].end());
        A.want = ref::attention_values(p, a->hv, a->s);
      }
      return ref::max_rel_error(ctx.read(A.dev[3]), A.want);
    };
  }
  return c;
}

Case layernorm_case(Context& ctx, const KernelOptions& o, Arena& A) {
  DType wt = parse_dtype(o.dtype);
  A.host.reserve(8);
  A.dev.reserve(8);
  auto& x = A.h(rnd(size_t(o.m * o.n), 21));
  auto& r = A.h(rnd(size_t(o.m * o.n), 22));
  auto& g = A.h(stored(rnd(size_t(o.n), 23), wt));
  auto& b = A.h(stored(rnd(size_t(o.n), 24), wt));
  A.dev = {ctx.tensor({o.m, o.n}, x), ctx.tensor({o.m, o.n}, r), ctx.tensor({o.n}, g, wt),
           ctx.tensor({o.n}, b, wt), ctx.tensor({o.m, o.n})};
  Case c;
  c.shape = "rows=" + std::to_string(o.m) + " d=" + std::to_string(o.n) + " " + o.dtype +
            (o.residual ? " +residual" : "");
  c.variants = {"subgroup", "shared"};
  c.record = [&A, &o](Recorder& rec, const std::string& v) {
    return layernorm(rec, {&A.dev[0], o.residual ? &A.dev[1] : nullptr, &A.dev[2], &A.dev[3],
                           &A.dev[4], 1e-5f, v});
  };
  c.error = [&ctx, &A, &o]() {
    if (A.want.empty())
      A.want = ref::layernorm(A.host[0], o.residual ? &A.host[1] : nullptr, A.host[2], A.host[3],
                              o.m, o.n, 1e-5);
    return ref::max_rel_error(ctx.read(A.dev[4]), A.want);
  };
  return c;
}

Case embedding_case(Context& ctx, const KernelOptions& o, Arena& A) {
  DType wt = parse_dtype(o.dtype);
  const uint32_t vocab = uint32_t(o.n), d = uint32_t(o.k), len = o.q_len;
  A.host.reserve(8);
  A.dev.reserve(8);
  auto& table = A.h(stored(rnd(size_t(vocab) * d, 31), wt));
  auto& pos = A.h(stored(sinusoidal_table(len, d), wt));
  std::mt19937 g(32);
  A.ids.resize(size_t(o.batch) * len);
  for (auto& id : A.ids) id = int32_t(g() % vocab);
  A.dev = {ctx.tensor_i32({o.batch, len}, A.ids), ctx.tensor({vocab, d}, table, wt),
           ctx.tensor({len, d}, pos, wt), ctx.tensor({o.batch, len, d})};
  Case c;
  c.shape = "B=" + std::to_string(o.batch) + " L=" + std::to_string(len) + " vocab=" +
            std::to_string(vocab) + " d=" + std::to_string(d) + " " + o.dtype;
  c.variants = {""};
  const float scale = std::sqrt(float(d));
  c.record = [&A, scale](Recorder& rec, const std::string& v) {
    return embedding(rec, {&A.dev[0], &A.dev[1], &A.dev[2], 0, nullptr, scale, &A.dev[3], v});
  };
  c.error = [&ctx, &A, &o, vocab, d, len, scale]() {
    (void)vocab;
    if (A.want.empty())
      A.want = ref::embedding(A.ids, o.batch, len, A.host[0], d, &A.host[1], 0, scale);
    return ref::max_rel_error(ctx.read(A.dev[3]), A.want);
  };
  return c;
}

Case add_case(Context& ctx, const KernelOptions& o, Arena& A) {
  A.host.reserve(4);
  A.dev.reserve(4);
  auto& a = A.h(rnd(size_t(o.m * o.n), 41));
  auto& b = A.h(rnd(size_t(o.m * o.n), 42));
  A.dev = {ctx.tensor({o.m, o.n}, a), ctx.tensor({o.m, o.n}, b), ctx.tensor({o.m, o.n})};
  Case c;
  c.shape = std::to_string(o.m) + "x" + std::to_string(o.n);
  c.variants = {""};
  c.record = [&A](Recorder& rec, const std::string& v) { return add(rec, {&A.dev[0], &A.dev[1], &A.dev[2], v}); };
  c.error = [&ctx, &A]() {
    if (A.want.empty()) A.want = ref::add(A.host[0], A.host[1]);
    return ref::max_rel_error(ctx.read(A.dev[2]), A.want);
  };
  return c;
}

// Sentence pooling: [batch, q_len, n] with the last b·3 rows of sequence b
// masked (--mask padding or both), as attention's padding mask.
Case mean_pool_case(Context& ctx, const KernelOptions& o, Arena& A) {
  A.host.reserve(2);
  A.dev.reserve(4);
  const uint32_t len = o.q_len, d = uint32_t(o.n);
  auto& x = A.h(rnd(size_t(o.batch) * len * d, 45));
  const bool pad = o.mask == "padding" || o.mask == "both";
  A.ids.assign(size_t(o.batch) * len, 0);
  for (uint32_t b = 0; pad && b < o.batch; ++b)
    for (uint32_t i = len - std::min(len - 1, b * 3); i < len; ++i) A.ids[size_t(b) * len + i] = 1;
  A.dev = {ctx.tensor({o.batch, len, d}, x), ctx.tensor_i32({o.batch, len}, A.ids), ctx.tensor({o.batch, d})};
  Case c;
  c.shape = "B=" + std::to_string(o.batch) + " L=" + std::to_string(len) + " d=" + std::to_string(d) +
            (pad ? " padding" : "");
  c.variants = {""};
  c.record = [&A, pad](Recorder& rec, const std::string& v) {
    return mean_pool(rec, {&A.dev[0], pad ? &A.dev[1] : nullptr, 0, &A.dev[2], v});
  };
  c.error = [&ctx, &A, &o, pad, len, d]() {
    if (A.want.empty()) A.want = ref::mean_pool(A.host[0], pad ? &A.ids : nullptr, len, o.batch, len, d);
    return ref::max_rel_error(ctx.read(A.dev[2]), A.want);
  };
  return c;
}

Case l2_normalize_case(Context& ctx, const KernelOptions& o, Arena& A) {
  A.host.reserve(2);
  A.dev.reserve(2);
  auto& x = A.h(rnd(size_t(o.m * o.n), 46));
  A.dev = {ctx.tensor({o.m, o.n}, x), ctx.tensor({o.m, o.n})};
  Case c;
  c.shape = "rows=" + std::to_string(o.m) + " d=" + std::to_string(o.n);
  c.variants = {"subgroup", "shared"};
  c.record = [&A](Recorder& rec, const std::string& v) { return l2_normalize(rec, {&A.dev[0], &A.dev[1], 1e-12f, v}); };
  c.error = [&ctx, &A, &o]() {
    if (A.want.empty()) A.want = ref::l2_normalize(A.host[0], o.m, o.n, 1e-12);
    return ref::max_rel_error(ctx.read(A.dev[1]), A.want);
  };
  return c;
}

Case topk_case(Context& ctx, const KernelOptions& o, Arena& A) {
  A.host.reserve(2);
  A.dev.reserve(4);
  auto& x = A.h(rnd(size_t(o.m * o.n), 51));
  A.dev = {ctx.tensor({o.m, o.n}, x), ctx.tensor({o.m, int64_t(o.topk)}),
           ctx.tensor({o.m, int64_t(o.topk)}, DType::I32)};
  Case c;
  c.shape = "rows=" + std::to_string(o.m) + " n=" + std::to_string(o.n) + " k=" + std::to_string(o.topk);
  c.variants = {"subgroup", "shared"};
  c.record = [&A, &o](Recorder& rec, const std::string& v) {
    return topk(rec, {&A.dev[0], o.topk, &A.dev[1], &A.dev[2], v});
  };
  // Error is 0 when every index matches the reference, else 1.
  c.error = [&ctx, &A, &o]() {
    std::vector<float> vals;
    std::vector<int32_t> idx;
    ref::topk(A.host[0], o.m, o.n, o.topk, vals, idx);
    return ctx.read_i32(A.dev[2]) == idx ? 0.0 : 1.0;
  };
  return c;
}

// KV-cache append: q_len new rows of width n go after the first kv_len − q_len
// rows of a [batch, max(kv_len, q_len), n] cache, batches gathered in reverse
// order (a beam reorder) through an index.
Case copy_rows_case(Context& ctx, const KernelOptions& o, Arena& A) {
  const uint32_t width = uint32_t(o.n), rows = o.q_len, len = std::max(o.kv_len, o.q_len);
  A.host.reserve(2);
  A.dev.reserve(3);
  auto& src = A.h(rnd(size_t(o.batch) * rows * width, 61));
  auto& dst = A.h(rnd(size_t(o.batch) * len * width, 62));
  A.ids.resize(o.batch);
  for (uint32_t b = 0; b < o.batch; ++b) A.ids[b] = int32_t(o.batch - 1 - b);
  A.dev = {ctx.tensor({o.batch, rows, width}, src), ctx.tensor({o.batch, len, width}, dst),
           ctx.tensor_i32({o.batch}, A.ids)};
  Case c;
  c.shape = "B=" + std::to_string(o.batch) + " rows=" + std::to_string(rows) + " width=" +
            std::to_string(width) + " into " + std::to_string(len) + " rows";
  c.variants = {""};
  auto args = std::make_shared<CopyRowsArgs>();
  args->src = &A.dev[0];
  args->dst = &A.dev[1];
  args->dst_row0 = len - rows;
  args->batch = o.batch;
  args->rows = rows;
  args->width = width;
  args->index = &A.dev[2];
  c.record = [args](Recorder& rec, const std::string& v) {
    CopyRowsArgs a = *args;
    a.variant = v;
    return copy_rows(rec, a);
  };
  c.error = [&ctx, &A, args]() {
    if (A.want.empty()) {
      auto w = ref::copy_rows(A.host[0], A.host[1], *args, &A.ids);
      A.want.assign(w.begin(), w.end());
    }
    return ref::max_rel_error(ctx.read(A.dev[1]), A.want);
  };
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<std::string> kernel_ops() {
  return {"gemm", "attention_scores", "masked_softmax", "attention_values", "flash_attention",
          "attention", "layernorm", "embedding", "add", "topk", "copy_rows", "mean_pool", "l2_normalize"};
}

std::vector<KernelResult> run_kernel(Context& ctx, const KernelOptions& o) {
  if (o.repeat < 1) throw Error("--repeat must be at least 1");
  if (!ctx.caps().timestamps) throw Error("the device has no timestamp queries on its compute queue");
  Arena A;
  Case c;
  const std::string& op = o.op;
  if (op == "gemm") c = gemm_case(ctx, o, A);
  else if (op == "attention_scores" || op == "masked_softmax" || op == "attention_values" ||
           op == "flash_attention" || op == "attention")
    c = attention_case(ctx, o, A);
  else if (op == "layernorm") c = layernorm_case(ctx, o, A);
  else if (op == "embedding") c = embedding_case(ctx, o, A);
  else if (op == "add") c = add_case(ctx, o, A);
  else if (op == "topk") c = topk_case(ctx, o, A);
  else if (op == "copy_rows") c = copy_rows_case(ctx, o, A);
  else if (op == "mean_pool") c = mean_pool_case(ctx, o, A);
  else if (op == "l2_normalize") c = l2_normalize_case(ctx, o, A);
  else throw Error("unknown kernel \"" + op + "\"");

  std::string picked;
  {
    Recorder probe(ctx);
    picked = c.record(probe, "").variant;
  }
  std::vector<std::string> variants;
  if (o.variant == "all") variants = c.variants;
  else variants = {o.variant};

  std::vector<KernelResult> out;
  for (const auto& v : variants) {
    Recorder rec(ctx, true);
    OpInfo info;
    try {
      info = c.record(rec, v);
    } catch (const Error& e) {
      if (o.variant != "all") throw;
      std::fprintf(stderr, "vkformer: skipping variant %s: %s\n", v.c_str(), e.what());
      continue;
    }
    std::vector<double> dev, wall;
    for (int i = 0; i < o.warmup + o.repeat; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      ctx.submit(rec);
      auto t1 = std::chrono::steady_clock::now();
      if (i < o.warmup) continue;
      double ms = 0;
      for (auto& t : rec.timings()) ms += t.ms;
      dev.push_back(ms);
      wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    KernelResult r;
    r.op = op;
    r.variant = info.variant;
    r.shape = c.shape;
    r.spec_values = info.spec;
    r.flops = info.flops;
    r.bytes = info.bytes;
    for (auto& [name, val] : info.spec) r.spec += (r.spec.empty() ? "" : " ") + name + "=" + std::to_string(val);
    r.median_ms = median(dev);
    r.min_ms = *std::min_element(dev.begin(), dev.end());
    r.max_ms = *std::max_element(dev.begin(), dev.end());
    r.wall_ms = median(wall);
    r.gflops = info.flops / (r.median_ms * 1e6);
    r.gbps = info.bytes / (r.median_ms * 1e6);
    r.picked = info.variant == picked;
    if (o.check) {
      r.max_error = c.error();
      r.checked = true;
      r.passed = r.max_error <= (op == "topk" ? 0.0 : 1e-4);
    }
    out.push_back(r);
  }
  return out;
}

size_t create_all_pipelines(Context& ctx) {
  uint64_t before = ctx.pipelines_created();
  std::vector<std::string> dtypes = {"f32"};
  if (ctx.caps().storage_16bit) dtypes.push_back("f16");
  for (const auto& op : kernel_ops())
    for (const auto& dt : dtypes) {
      KernelOptions o;
      o.op = op;
      o.dtype = dt;
      o.m = 8;
      o.q_len = o.kv_len = 16;
      for (int64_t m : {int64_t(1), int64_t(64)}) {  // small M picks gemv, larger the tiled GEMM
        o.m = m;
        Arena A;
        Case c = op == "gemm" ? gemm_case(ctx, o, A)
                 : op == "layernorm" ? layernorm_case(ctx, o, A)
                 : op == "embedding" ? embedding_case(ctx, o, A)
                 : op == "add" ? add_case(ctx, o, A)
                 : op == "topk" ? topk_case(ctx, o, A)
                 : op == "copy_rows" ? copy_rows_case(ctx, o, A)
                 : op == "mean_pool" ? mean_pool_case(ctx, o, A)
                 : op == "l2_normalize" ? l2_normalize_case(ctx, o, A)
                 : attention_case(ctx, o, A);
        // Some drivers (lavapipe among them) compile at the first dispatch,
        // not at pipeline creation: run each variant once.
        for (const auto& v : c.variants) {
          Recorder rec(ctx);
          try {
            c.record(rec, v);
          } catch (const Error&) {
            continue;  // a variant the device cannot run (e.g. no subgroups) is not warmed
          }
          ctx.submit(rec);
        }
      }
    }
  return size_t(ctx.pipelines_created() - before);
}

void print_results(const std::vector<KernelResult>& rs) {
  std::printf("%-18s %-22s %10s %10s %10s %10s %9s %9s %10s  %s\n", "op", "variant", "median ms",
              "min ms", "max ms", "wall ms", "GFLOP/s", "GB/s", "max err", "spec constants");
  for (const auto& r : rs) {
    char err[32];
    if (r.checked) std::snprintf(err, sizeof err, "%.2e%s", r.max_error, r.passed ? "" : " FAIL");
    else std::snprintf(err, sizeof err, "-");
    std::printf("%-18s %-22s %10.3f %10.3f %10.3f %10.3f %9.2f %9.2f %10s  %s%s\n", r.op.c_str(),
                (r.variant + (r.picked ? " *" : "")).c_str(), r.median_ms, r.min_ms, r.max_ms,
                r.wall_ms, r.gflops, r.gbps, err, r.spec.c_str(), "");
  }
  if (!rs.empty()) std::printf("shape: %s   (* = the variant the engine picks on this device)\n", rs[0].shape.c_str());
}

}  // namespace vkf::tools
