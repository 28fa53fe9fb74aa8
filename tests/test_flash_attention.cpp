// flash_attention: fused online-softmax attention, against the double
// reference and against the unfused path on the device.
#include <algorithm>
#include <cstring>

#include "attention_util.hpp"
#include "vk/tuning_hooks.hpp"

namespace vkf::test {

// Every head dim (and 24, 30, 40), f32 and f16 K/V, every mask kind, lengths
// off the tiles, cross attention, packed QKV/KV views, decode steps (Lq = 1 or
// a few rows against a KV cache, causal_offset = keys before them), long keys
// (several tiles, keys split across the invocations of a row), fully masked rows;
// grouped-query and multi-query K/V (kv_heads) with masks, packed views and a cache;
// Mistral's sliding window: shorter than the prompt, 1 (each query sees only
// itself), at least kv_len (plain causal), decode steps over a cache (whole
// tiles before the window skipped), grouped K/V, padding (fully masked rows)
// and several query blocks. Decode rows (at most 16) also run the split variant
// (flash-decoding: key ranges merged by a second pass), some with empty ranges.
// Padding comes with two sequences or more: the table's mask pads none of the first.
std::vector<AttnCase> flash_cases() {
  const std::vector<AttnCase> base = {
      {1, 1, 32, 1, 1, Layout::Separate, MaskKind::None},
      {2, 3, 64, 17, 33, Layout::Separate, MaskKind::Padding},
      {3, 2, 80, 33, 33, Layout::PackedQKV, MaskKind::Causal},
      {3, 1, 128, 33, 33, Layout::Separate, MaskKind::Both},
      {1, 3, 24, 64, 64, Layout::PackedQKV, MaskKind::Both},
      {2, 2, 40, 5, 70, Layout::PackedKV, MaskKind::Padding},
      {1, 2, 64, 70, 17, Layout::PackedKV, MaskKind::None},
      {2, 2, 64, 1, 33, Layout::Cache, MaskKind::Causal, 32},
      {3, 3, 128, 1, 65, Layout::Cache, MaskKind::Both, 64},
      {2, 2, 80, 1, 300, Layout::Cache, MaskKind::Padding},
      {2, 1, 32, 4, 130, Layout::Cache, MaskKind::Causal, 126},
      grouped({2, 6, 64, 17, 33, Layout::Separate, MaskKind::Padding}, 2),
      grouped({2, 4, 64, 1, 65, Layout::Cache, MaskKind::Causal, 64}, 1),
      grouped({3, 4, 40, 33, 33, Layout::PackedQKV, MaskKind::Both}, 2),
      grouped({2, 6, 32, 5, 70, Layout::PackedKV, MaskKind::Causal, 65}, 3),
      windowed({2, 2, 64, 33, 33, Layout::Separate, MaskKind::Causal}, 5),
      windowed({1, 3, 32, 17, 17, Layout::PackedQKV, MaskKind::Causal}, 1),
      windowed({2, 2, 40, 17, 33, Layout::Separate, MaskKind::Causal, 16}, 40),
      windowed({2, 2, 64, 1, 65, Layout::Cache, MaskKind::Causal, 64}, 16),
      windowed({2, 1, 32, 4, 130, Layout::Cache, MaskKind::Causal, 126}, 50),
      grouped(windowed({2, 4, 64, 17, 40, Layout::Separate, MaskKind::Causal, 23}, 7), 2),
      grouped(windowed({3, 4, 40, 9, 9, Layout::PackedQKV, MaskKind::Both}, 1), 2),
      windowed({2, 2, 40, 5, 70, Layout::PackedKV, MaskKind::Both, 65}, 9),
      windowed({1, 2, 64, 70, 70, Layout::Separate, MaskKind::Causal}, 20),
      // Decoding over 600 cached keys: where a GPU's rule splits the keys (variant split).
      grouped(windowed({1, 4, 32, 2, 600, Layout::Cache, MaskKind::Causal, 598}, 300), 2),
      {1, 1, 128, 5, 5, Layout::Separate, MaskKind::Causal},
      {2, 3, 30, 17, 1, Layout::Separate, MaskKind::Both},
  };
  // fp16 K/V on every shape but packed QKV (Q is f32) and the last two (compile time).
  std::vector<AttnCase> out;
  for (size_t n = 0; n < base.size(); ++n)
    for (DType dt : weight_dtypes()) {
      AttnCase c = base[n];
      if (dt == DType::F16 && (c.layout == Layout::PackedQKV || n + 2 >= base.size())) continue;
      c.kv = dt;
      out.push_back(c);
    }
  return out;
}
VKF_OP_SHAPES(flash_attention, op_shapes(flash_cases()));

// The cases the table's packed KV memory cannot stand for (other layouts, a KV
// cache with NaN past the filled keys, rows whose every key is masked, decode
// offsets), against the reference and against the unfused path on the device.
class FlashTest : public DeviceTest, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(FlashTest, MatchesUnfusedOnEveryLayout) {
  const AttnCase c = GetParam();
  if (c.kv == DType::F16 && !has_f16()) GTEST_SKIP() << "no 16-bit storage";
  AttnInputs in(ctx(), c, 51);
  const auto& s = in.shape;
  const int64_t width = int64_t(s.heads) * s.head_dim;
  Tensor out = ctx().tensor({s.batch, s.q_len, width}), unfused = ctx().tensor({s.batch, s.q_len, width});
  Tensor scores = ctx().tensor({s.batch, s.heads, s.q_len, s.kv_len});
  Recorder rec(ctx());
  OpInfo info = flash_attention(rec, {in.hq, in.hk, in.hv, s, in.mask, in.scale, &out});
  attention_scores(rec, {in.hq, in.hk, s, in.scale, &scores});
  masked_softmax(rec, {&scores, s, in.mask});
  attention_values(rec, {&scores, in.hv, s, &unfused});
  ctx().submit(rec);
  auto got = ctx().read(out), other = ctx().read(unfused);
  const double err = ref::max_rel_error(got, ref::attention(in.rq, in.rk, in.rv, s, in.hmask, in.scale));
  const double vs_unfused = ref::max_rel_error(got, {other.begin(), other.end()});
  EXPECT_LE(err, kF32Bound);
  EXPECT_LE(vs_unfused, kF32Bound);
  RecordProperty("max_rel_error", sci(err));
  RecordProperty("vs_unfused", sci(vs_unfused));
  expect_zero_rows(got, in);
  EXPECT_EQ(info.flops, 4.0 * s.batch * s.heads * s.q_len * s.kv_len * s.head_dim);
}

// K/V read through texel buffers or staged in shared memory: the same sums in
// the same order, so bit for bit the same output when the knobs agree (they
// differ for short queries on a CPU, where texel reads take fewer lanes).
TEST_P(FlashTest, TexelMatchesStaged) {
  const AttnCase c = GetParam();
  if (c.kv == DType::F16 && !has_f16()) GTEST_SKIP() << "no 16-bit storage";
  if (!(c.kv == DType::F16 ? ctx().caps().texel_f16 : ctx().caps().texel_f32)) GTEST_SKIP() << "no texel formats";
  AttnInputs in(ctx(), c, 52);
  const auto& s = in.shape;
  const int64_t width = int64_t(s.heads) * s.head_dim;
  Tensor staged = ctx().tensor({s.batch, s.q_len, width}), texel = ctx().tensor({s.batch, s.q_len, width});
  Recorder rec(ctx());
  const OpInfo a = flash_attention(rec, {in.hq, in.hk, in.hv, s, in.mask, in.scale, &staged, "online"});
  const OpInfo b = flash_attention(rec, {in.hq, in.hk, in.hv, s, in.mask, in.scale, &texel, "texel"});
  ctx().submit(rec);
  EXPECT_EQ(b.variant, "texel");
  const auto x = ctx().read(staged), y = ctx().read(texel);
  const auto knob = [](const OpInfo& i, const char* k) {
    for (const auto& [name, v] : i.spec)
      if (name == k) return v;
    return ~0u;
  };
  if (knob(a, "WG") == knob(b, "WG") && knob(a, "TPR") == knob(b, "TPR") && knob(a, "BK") == knob(b, "BK"))
    EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(float)));
  EXPECT_LE(ref::max_rel_error(y, ref::attention(in.rq, in.rk, in.rv, s, in.hmask, in.scale)), kF32Bound);
  expect_zero_rows(y, in);
}

INSTANTIATE_TEST_SUITE_P(Layouts, FlashTest, ::testing::ValuesIn(own_input_cases(flash_cases())),
                         [](const auto& i) { return case_name(i.param); });

// An additive per-head bias (T5's relative positions) with every mask kind, decode
// rows over a cache, several key tiles and fully masked rows (which stay zero).
std::vector<AttnCase> bias_cases() {
  std::vector<AttnCase> out = {
      {1, 1, 32, 1, 1, Layout::Separate, MaskKind::None},
      {2, 3, 64, 17, 33, Layout::PackedKV, MaskKind::Padding},
      {3, 2, 40, 33, 33, Layout::PackedQKV, MaskKind::Both},
      {2, 2, 64, 1, 33, Layout::Cache, MaskKind::Causal, 32},
      {2, 1, 32, 4, 130, Layout::Cache, MaskKind::Causal, 126},
      grouped({2, 4, 32, 4, 20, Layout::Cache, MaskKind::Causal, 16}, 2),  // the bias is per query head
  };
  for (auto& c : out) c.bias = true;
  return out;
}

class FlashBiasTest : public DeviceTest, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(FlashBiasTest, AddsTheBiasBeforeTheMask) {
  const AttnCase c = GetParam();
  AttnInputs in(ctx(), c, 61);
  const auto& s = in.shape;
  Tensor out = ctx().tensor({s.batch, s.q_len, int64_t(s.heads) * s.head_dim});
  Recorder rec(ctx());
  FlashAttentionArgs a{in.hq, in.hk, in.hv, s, in.mask, 1.0f, &out};
  a.bias = &in.tbias;
  const OpInfo info = flash_attention(rec, a);
  ctx().submit(rec);
  const auto got = ctx().read(out);
  const double err = ref::max_rel_error(got, ref::attention(in.rq, in.rk, in.rv, s, in.hmask, 1.0, &in.bias));
  EXPECT_LE(err, kF32Bound);
  RecordProperty("max_rel_error", sci(err));
  expect_zero_rows(got, in);
  EXPECT_NE(std::find(info.spec.begin(), info.spec.end(), std::pair<std::string, uint32_t>{"BIAS", 1}),
            info.spec.end());
}

INSTANTIATE_TEST_SUITE_P(Bias, FlashBiasTest, ::testing::ValuesIn(bias_cases()),
                         [](const auto& i) { return case_name(i.param); });

/// flash_attention on a case's inputs with `mask` (the case's own when null), forcing `variant`.
std::vector<float> run_flash(Context& ctx, const AttnInputs& in, const std::string& variant,
                             const AttentionMask* mask = nullptr) {
  const auto& s = in.shape;
  Tensor out = ctx.tensor({s.batch, s.q_len, int64_t(s.heads) * s.head_dim});
  Recorder rec(ctx);
  const OpInfo info = flash_attention(rec, {in.hq, in.hk, in.hv, s, mask ? *mask : in.mask, in.scale, &out, variant});
  EXPECT_EQ(info.variant, variant);
  ctx.submit(rec);
  return ctx.read(out);
}

std::vector<std::string> flash_variants(const Capabilities& c) {
  if (c.texel_f32) return {"online", "texel"};
  return {"online"};
}

// A sliding window that reaches back to key 0 from the last query (position
// 16 + 16 = 32: 33 keys) is the causal mask itself: bit for bit the same output.
TEST_F(DeviceTest, FlashAttentionWindowOverAllKeysIsCausal) {
  AttnInputs in(ctx(), {2, 2, 40, 17, 33, Layout::Separate, MaskKind::Causal, 16}, 71);
  for (const auto& variant : flash_variants(ctx().caps())) {
    const auto causal = run_flash(ctx(), in, variant);
    for (uint32_t window : {33u, 34u, 100000u}) {
      SCOPED_TRACE(variant + ", window " + std::to_string(window));
      AttentionMask m = in.mask;
      m.window = window;
      const auto got = run_flash(ctx(), in, variant, &m);
      EXPECT_EQ(0, std::memcmp(got.data(), causal.data(), got.size() * sizeof(float)));
    }
    AttentionMask m = in.mask;
    m.window = 32;  // one key short for the last query: not the same
    EXPECT_NE(run_flash(ctx(), in, variant, &m), causal);
  }
}

// Window 1: each query sees only the key at its own position, so its output
// is exactly that key's V row (softmax weight exp(0)/1).
TEST_F(DeviceTest, FlashAttentionWindowOfOneSeesItsOwnKey) {
  const AttnCase c = grouped(windowed({2, 4, 32, 5, 12, Layout::Cache, MaskKind::Causal, 7}, 1), 2);
  AttnInputs in(ctx(), c, 72);
  const auto& s = in.shape;
  for (const auto& variant : flash_variants(ctx().caps())) {
    SCOPED_TRACE(variant);
    const auto got = run_flash(ctx(), in, variant);
    for (uint32_t b = 0; b < s.batch; ++b)
      for (uint32_t i = 0; i < s.q_len; ++i)
        for (uint32_t h = 0; h < s.heads; ++h)
          for (uint32_t col = 0; col < s.head_dim; ++col)
            ASSERT_EQ(got[(size_t(b) * s.q_len + i) * s.heads * s.head_dim + h * s.head_dim + col],
                      float(in.rv.at(b, i + c.causal_offset, h / s.heads_per_kv() * s.head_dim + col)))
                << "batch " << b << " query " << i << " head " << h;
  }
}

TEST_F(DeviceTest, FlashAttentionRejectsBadArguments) {
  const AttentionShape s{2, 2, 8, 3, 5};
  Tensor q = ctx().tensor({2, 3, 16}), k = ctx().tensor({2, 5, 16}), v = ctx().tensor({2, 5, 16});
  Tensor out = ctx().tensor({2, 3, 16}), bad_out = ctx().tensor({2, 3, 17});
  Tensor pad = ctx().tensor_i32({2, 5}, std::vector<int32_t>(10));
  Tensor big_q = ctx().tensor({1, 1, 300}), big_k = ctx().tensor({1, 1, 300});
  Tensor big_out = ctx().tensor({1, 1, 300});
  Recorder rec(ctx());
  auto call = [&](HeadsView qv, HeadsView kv, HeadsView vv, Tensor* o, AttentionMask m = {},
                  AttentionShape sh = {2, 2, 8, 3, 5}, std::string variant = "") {
    FlashAttentionArgs a{qv, kv, vv, sh, m, 1.0f, o, variant};
    return flash_attention(rec, a);
  };
  EXPECT_NO_THROW(call({&q}, {&k}, {&v}, &out, {&pad}));
  if (has_f16()) {
    Tensor v16 = ctx().tensor({2, 5, 16}, DType::F16);
    EXPECT_THROW(call({&q}, {&k}, {&v16}, &out), Error);  // K and V dtypes differ
  }
  EXPECT_THROW(call({&q}, {&k}, {nullptr}, &out), Error);
  EXPECT_THROW(call({&q}, {&k}, {&v}, &bad_out), Error);
  EXPECT_THROW(call({&q}, {&k}, {&v}, &q), Error);             // out aliases q
  EXPECT_THROW(call({&q}, {&k, 4}, {&v}, &out), Error);        // columns past the row
  EXPECT_THROW(call({&q}, {&k}, {&v}, &out, {&pad, 7}), Error);  // mask too small
  EXPECT_THROW(call({&q}, {&k}, {&v}, &out, {}, {2, 2, 8, 3, 6}), Error);  // 6 keys in 5 rows
  EXPECT_THROW(call({&q}, {&k}, {&v}, &out, {}, s, "tiled"), Error);
  EXPECT_THROW(call({&big_q}, {&big_k}, {&big_k}, &big_out, {}, {1, 1, 300, 1, 1}), Error);  // head_dim > 256
  // Multi-query: one K/V head of 8 columns, here the second half of each row.
  EXPECT_NO_THROW(call({&q}, {&k, 8}, {&v, 8}, &out, {}, {2, 2, 8, 3, 5, 1}));
  expect_error([&] { call({&q}, {&k}, {&v}, &out, {}, {2, 6, 8, 3, 5, 4}); },
               "flash_attention: heads 6 is not a multiple of kv_heads 4");
  expect_error([&] { call({&q}, {&k}, {&v}, &out, {}, {2, 2, 8, 3, 5, 4}); },
               "flash_attention: heads 2 is not a multiple of kv_heads 4");
  expect_error([&] { call({&q}, {&k, 8}, {&v}, &out, {}, {2, 2, 8, 3, 5, 2}); },
               "k: columns [8, 24) (col_offset + kv_heads·head_dim) do not fit in rows of 16 elements");
  AttentionMask window;
  window.window = 4;
  expect_error([&] { call({&q}, {&k}, {&v}, &out, window); },
               "flash_attention: mask.window 4 needs mask.causal (a sliding window counts back from each query's "
               "position)");
  window.causal = true;
  EXPECT_NO_THROW(call({&q}, {&k}, {&v}, &out, window));
  expect_error([&] { op("flash_attention").make_case(ctx(), parse_op_shape("mask=padding,window=4")); },
               "window=4 needs mask=causal or mask=both");
  Tensor bias = ctx().tensor({2, 3, 7}), bad_bias = ctx().tensor({2, 3, 4});  // rows may be longer
  FlashAttentionArgs a{{&q}, {&k}, {&v}, s, {}, 1.0f, &out};
  a.bias = &bias;
  EXPECT_NO_THROW(flash_attention(rec, a));
  a.bias = &bad_bias;  // one key short
  EXPECT_THROW(flash_attention(rec, a), Error);
}

// Tensor cores (variant coopmat) run only where the device lists a 16×16×16
// f16·f16+f32 cooperative-matrix shape; asking for them elsewhere names what
// is missing. Where they run (the engine's pick from 32 query rows), they
// keep the fp32 bound with f32 and f16 K/V, masks, grouped K/V and a bias.
TEST_F(DeviceTest, FlashAttentionCoopmatByCapability) {
  const Capabilities& caps = ctx().caps();
  AttnInputs in(ctx(), grouped({2, 4, 40, 33, 70, Layout::Separate, MaskKind::Both}, 2), 84);
  if (!caps.coopmat) {
    expect_error([&] { run_flash(ctx(), in, "coopmat"); }, "variant coopmat needs VK_NV_cooperative_matrix");
    return;
  }
  for (DType dt : weight_dtypes())
    for (AttnCase c : {grouped({2, 4, 40, 33, 70, Layout::Separate, MaskKind::Both}, 2),
                       windowed({1, 2, 128, 70, 70, Layout::Separate, MaskKind::Causal}, 20),
                       AttnCase{3, 2, 64, 33, 33, Layout::PackedKV, MaskKind::Padding}}) {
      c.kv = dt;
      c.bias = c.layout == Layout::PackedKV;
      SCOPED_TRACE(case_name(c));
      AttnInputs ci(ctx(), c, 85);
      const auto& s = ci.shape;
      Tensor out = ctx().tensor({s.batch, s.q_len, int64_t(s.heads) * s.head_dim});
      Recorder rec(ctx());
      FlashAttentionArgs a{ci.hq, ci.hk, ci.hv, s, ci.mask, c.bias ? 1.0f : ci.scale, &out};
      if (c.bias) a.bias = &ci.tbias;
      EXPECT_EQ(flash_attention(rec, a).variant, "coopmat");  // the rule's pick
      ctx().submit(rec);
      const auto got = ctx().read(out);
      EXPECT_LE(ref::max_rel_error(got, ref::attention(ci.rq, ci.rk, ci.rv, s, ci.hmask, a.scale, c.bias ? &ci.bias : nullptr)),
                kF32Bound);
      expect_zero_rows(got, ci);
    }
}

// The tensor-core kernel (shaders/flash_attention_coopmat.comp) with its
// matrix operations done by the lanes (variant coopmat_emulated,
// shaders/lib/coopmat.glsl), on any device with fp16 arithmetic: its two
// passes, fp16 parts, masks, grouped K/V, sliding window, decode offsets,
// bias and NaN rows against the reference, within the fp32 bound, and fully
// masked rows zeros. lavapipe takes 10–20 s to compile each pipeline (one per
// padded head dim, K/V format, bias and tiling), so the cases share five, and
// only its default leg runs them.
TEST_F(DeviceTest, FlashAttentionCoopmatEmulatedMatchesTheReference) {
  if (in_capability_leg()) GTEST_SKIP() << "lavapipe's default leg runs it";
  const Capabilities& caps = ctx().caps();
  if (!caps.shader_float16 || 256 % caps.subgroup_size != 0) {
    AttnInputs in(ctx(), {1, 1, 32, 2, 2, Layout::Separate, MaskKind::None}, 81);
    expect_error([&] { run_flash(ctx(), in, "coopmat_emulated"); }, "variant coopmat_emulated needs shaderFloat16");
    return;
  }
  // fp32 K/V at head dims 40 and 30 or 32 (padded to 48 and 32), fp16 K/V at 64
  // (two 16-key matrices a tile on lavapipe).
  std::vector<AttnCase> cases = {AttnCase{2, 3, 40, 17, 33, Layout::Separate, MaskKind::Padding},
                                 grouped({3, 4, 40, 33, 33, Layout::PackedQKV, MaskKind::Both}, 2),
                                 windowed({1, 2, 32, 70, 70, Layout::Separate, MaskKind::Causal}, 20),
                                 AttnCase{2, 1, 32, 4, 130, Layout::Cache, MaskKind::Causal, 126},
                                 AttnCase{2, 3, 30, 17, 1, Layout::Separate, MaskKind::Both}};
  if (has_f16())
    for (AttnCase c : {AttnCase{2, 3, 64, 17, 33, Layout::Separate, MaskKind::Padding},
                       windowed({1, 2, 64, 70, 70, Layout::Separate, MaskKind::Causal}, 20)}) {
      c.kv = DType::F16;
      cases.push_back(c);
    }
  AttnCase biased{3, 2, 40, 33, 33, Layout::PackedKV, MaskKind::Both};
  biased.bias = true;
  cases.push_back(biased);
  for (const AttnCase& c : cases) {
    SCOPED_TRACE(case_name(c));
    AttnInputs in(ctx(), c, 81);
    const auto& s = in.shape;
    Tensor out = ctx().tensor({s.batch, s.q_len, int64_t(s.heads) * s.head_dim});
    Recorder rec(ctx());
    FlashAttentionArgs a{in.hq, in.hk, in.hv, s, in.mask, c.bias ? 1.0f : in.scale, &out, "coopmat_emulated"};
    if (c.bias) a.bias = &in.tbias;
    EXPECT_EQ(flash_attention(rec, a).variant, "coopmat_emulated");
    ctx().submit(rec);
    const auto got = ctx().read(out);
    EXPECT_LE(ref::max_rel_error(got, ref::attention(in.rq, in.rk, in.rv, s, in.hmask, a.scale, c.bias ? &in.bias : nullptr)),
              kF32Bound);
    expect_zero_rows(got, in);
  }
  // One NaN in a query: its row only is NaN.
  AttnInputs in(ctx(), {2, 3, 40, 17, 33, Layout::Separate, MaskKind::Padding}, 82);
  const auto clean = run_flash(ctx(), in, "coopmat_emulated");
  const uint32_t d = in.shape.heads * in.shape.head_dim;
  in.q[size_t(5) * d + 1 * in.shape.head_dim + 3] = std::nanf("");  // batch 0, row 5, head 1
  Tensor tq = ctx().tensor({in.shape.batch, in.shape.q_len, d}, in.q);
  Tensor out = ctx().tensor({in.shape.batch, in.shape.q_len, d});
  Recorder rec(ctx());
  flash_attention(rec, {HeadsView{&tq}, in.hk, in.hv, in.shape, in.mask, in.scale, &out, "coopmat_emulated"});
  ctx().submit(rec);
  const auto got = ctx().read(out);
  for (size_t e = 0; e < got.size(); ++e) {
    const bool nan_row = e / d == 5 && e % d / in.shape.head_dim == 1;
    if (nan_row) ASSERT_TRUE(std::isnan(got[e])) << e;
    else ASSERT_EQ(got[e], clean[e]) << e;
  }
  // A tuned tiling: one subgroup, 48 keys a tile (several tiles over 130 keys).
  ForcedTuning force(ctx(), "flash_attention", {"coopmat_emulated", {{"NSG", 1}, {"BK", 48}}});
  AttnInputs cached(ctx(), {2, 1, 32, 4, 130, Layout::Cache, MaskKind::Causal, 126}, 83);
  Tensor o2 = ctx().tensor({2, 4, 32});
  Recorder r2(ctx());
  const OpInfo info = flash_attention(r2, {cached.hq, cached.hk, cached.hv, cached.shape, cached.mask, cached.scale, &o2});
  ctx().submit(r2);
  EXPECT_EQ(info.variant, "coopmat_emulated");
  EXPECT_LE(ref::max_rel_error(ctx().read(o2), ref::attention(cached.rq, cached.rk, cached.rv, cached.shape, cached.hmask,
                                                             cached.scale)),
            kF32Bound);
}

// One NaN in a query makes that row's output NaN, as PyTorch's softmax does,
// short rows and long ones (several tiles, keys split across invocations);
// every other row keeps its value and fully masked rows stay zeros (issue 29),
// also where the split variant merges key ranges (some of them fully masked).
TEST_F(DeviceTest, FlashAttentionNanQueryMakesItsRowNan) {
  for (const AttnCase& c : {AttnCase{2, 2, 64, 5, 17, Layout::Separate, MaskKind::Both},
                            AttnCase{2, 2, 32, 3, 300, Layout::Separate, MaskKind::Padding},
                            AttnCase{1, 2, 64, 4, 4, Layout::Separate, MaskKind::Causal}})
  for (const char* variant : {"", "split"}) {
    SCOPED_TRACE(case_name(c) + " variant \"" + variant + "\"");
    AttnInputs in(ctx(), c, 61);
    const auto& s = in.shape;
    const uint32_t d = s.heads * s.head_dim;
    // Batch 0, head 1, the first query after 0 that sees a key.
    const uint32_t nan_h = 1;
    uint32_t nan_i = 0;
    for (uint32_t i = 1; i < s.q_len && nan_i == 0; ++i)
      for (uint32_t j = 0; j < s.kv_len && nan_i == 0; ++j)
        if (!in.hmask.masked(0, i, j)) nan_i = i;
    ASSERT_NE(nan_i, 0u);
    in.q[size_t(nan_i) * d + nan_h * s.head_dim + 3] = std::nanf("");
    Tensor tq = ctx().tensor({s.batch, s.q_len, d}, in.q);
    Tensor out = ctx().tensor({s.batch, s.q_len, d});
    Recorder rec(ctx());
    flash_attention(rec, {HeadsView{&tq}, in.hk, in.hv, s, in.mask, in.scale, &out, variant});
    ctx().submit(rec);
    auto got = ctx().read(out);
    const auto fully = in.fully_masked_rows();
    for (uint32_t b = 0; b < s.batch; ++b)
      for (uint32_t i = 0; i < s.q_len; ++i)
        for (uint32_t h = 0; h < s.heads; ++h) {
          const size_t r = (size_t(b) * s.heads + h) * s.q_len + i;
          const bool is_fully = std::find(fully.begin(), fully.end(), r) != fully.end();
          const bool nan_row = b == 0 && i == nan_i && h == nan_h;
          for (uint32_t e = 0; e < s.head_dim; ++e) {
            const float g = got[(size_t(b) * s.q_len + i) * d + h * s.head_dim + e];
            if (nan_row) ASSERT_TRUE(std::isnan(g)) << "b " << b << " i " << i << " h " << h;
            else if (is_fully) ASSERT_EQ(g, 0.0f) << "fully masked b " << b << " i " << i << " h " << h;
            else ASSERT_FALSE(std::isnan(g)) << "b " << b << " i " << i << " h " << h;
          }
        }
  }
}

}  // namespace vkf::test
