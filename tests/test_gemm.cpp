// vkf::gemm: every variant over a table of awkward shapes, every activation,
// bias and residual on and off, fp32 and fp16 weights; huge inputs, the pick by
// rows, folding, what fp16 storage costs, and bad arguments.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "op_test.hpp"
#include "vk/tuning_hooks.hpp"

namespace vkf::test {
namespace {

struct Case {
  int64_t M, N, K;
  DType dtype = DType::F32;
  Activation act = Activation::None;
  bool bias = false, residual = false;
  std::string variant;
  float x_scale = 1.f;  ///< widens X so pre-activations reach the activations' tails
};

struct Result {
  double err;     ///< against the reference on the weights as stored
  double err_f32; ///< against the reference on the unrounded fp32 weights
  OpInfo info;
  std::vector<float> y;
};

Result run(Context& ctx, const Case& c, uint32_t seed = 1) {
  auto x = random_vector(size_t(c.M * c.K), seed, -c.x_scale, c.x_scale);
  auto w = random_vector(size_t(c.N * c.K), seed + 1);
  auto b = random_vector(size_t(c.N), seed + 2);
  auto r = random_vector(size_t(c.M * c.N), seed + 3);
  Tensor tx = ctx.tensor({c.M, c.K}, x), tw = ctx.tensor({c.N, c.K}, w, c.dtype);
  Tensor tb = ctx.tensor({c.N}, b, c.dtype), tr = ctx.tensor({c.M, c.N}, r), ty = ctx.tensor({c.M, c.N});
  Recorder rec(ctx);
  GemmArgs a{&tx, &tw, c.bias ? &tb : nullptr, c.residual ? &tr : nullptr, &ty, c.act, c.variant};
  OpInfo info = gemm(rec, a);
  ctx.submit(rec);
  auto got = ctx.read(ty);
  const auto ws = as_stored(w, c.dtype), bs = as_stored(b, c.dtype);
  auto want = ref::gemm(x, ws, c.bias ? &bs : nullptr, c.residual ? &r : nullptr, c.M, c.N, c.K, c.act);
  auto want_f32 = ref::gemm(x, w, c.bias ? &b : nullptr, c.residual ? &r : nullptr, c.M, c.N, c.K, c.act);
  return {ref::max_rel_error(got, want), ref::max_rel_error(got, want_f32), info, got};
}

std::string describe(const Case& c) {
  char s[160];
  std::snprintf(s, sizeof s, "M=%lld N=%lld K=%lld %s act=%d bias=%d residual=%d variant=%s",
                (long long)c.M, (long long)c.N, (long long)c.K, dtype_name(c.dtype), int(c.act),
                int(c.bias), int(c.residual), c.variant.c_str());
  return s;
}

}  // namespace

// Shapes off the tiles (gemv's 4-row groups, 16- to 64-wide tiles): one row or
// column, exact and one-past tiles, K = 1 and K not a multiple of 4, with bias
// and residual taking turns; transformer-sized K (the vec4 loop over many
// tiles) on few rows; every activation with bias and residual, pre-activations
// spread over about [-12, 12] (both GELU tails, SiLU's saturating side) by
// k = 1024 inputs. The shapes in fp32 and with fp16 weights.
std::vector<std::string> gemm_shapes() {
  // A capability leg: each variant reached from storage and texel reads, vec4 and scalar
  // K, one and many rows, each weight format once (gemv or tiles by turns), and GELU.
  if (in_capability_leg())
    return {"m=1,n=5,k=4,bias=1,residual=0,dtype=f32",      "m=3,n=129,k=63,bias=1,residual=1,dtype=f32",
            "m=66,n=129,k=63,bias=0,residual=1,dtype=f32",   "m=17,n=64,k=768,bias=1,residual=1,dtype=f32",
            "m=257,n=65,k=64,bias=1,residual=1,dtype=f32",   "m=1,n=64,k=766,bias=1,residual=1,dtype=f16",
            "m=66,n=5,k=4,bias=1,residual=0,dtype=f16",      "m=5,n=33,k=1024,bias=1,residual=1,act=gelu,dtype=f32",
            "m=3,n=37,k=512,bias=1,residual=1,dtype=q8_0",   "m=66,n=37,k=256,bias=1,residual=0,dtype=q4_0",
            "m=3,n=37,k=512,bias=1,residual=1,dtype=q4_1",   "m=66,n=37,k=256,bias=1,residual=0,dtype=q4_k",
            "m=3,n=37,k=512,bias=1,residual=1,dtype=q6_k"};
  static const char* turns[] = {"bias=0,residual=0", "bias=1,residual=0", "bias=0,residual=1", "bias=1,residual=1"};
  std::vector<std::string> grid_shapes = grid({{"m=1", "m=3", "m=17", "m=64", "m=66"},
                                               {"n=1", "n=5", "n=64", "n=129"}, {"k=1", "k=3", "k=4", "k=63"}});
  for (size_t i = 0; i < grid_shapes.size(); ++i) grid_shapes[i] += std::string(",") + turns[(i + i / 4) % 4];
  const std::vector<std::string> dtypes = {"dtype=f32", "dtype=f16"};
  std::vector<std::string> shapes = grid({grid_shapes, dtypes});
  for (const auto& more :
       {grid({{"m=1", "m=17"}, {"n=64,bias=1,residual=1"}, {"k=768", "k=766"}, dtypes}),
        // The activation is the epilogue's (lib/gemm_epilogue.glsl, one code for every
        // variant), after the fp32 sum whatever the weights' format: GELU here in fp32 and
        // with fp16 weights; every activation on every variant in GemmActivationsOnEveryVariant,
        // which compiles each (variant, activation) once instead of per shape and size.
        grid({{"m=5,n=33,k=1024,bias=1,residual=1"}, {"act=none,dtype=f32", "act=gelu,dtype=f32", "act=gelu,dtype=f16"}})})
    shapes.insert(shapes.end(), more.begin(), more.end());
  shapes.push_back("m=257,n=65,k=64,bias=1,residual=1,dtype=f32");  // broadcast's block for many rows
  // GGUF's block formats (random blocks, an f32 bias): gemv and the blocked and
  // tiled variants, K of whole blocks (256 for the K formats).
  for (const char* f : {"q8_0", "q4_0", "q4_1", "q4_k", "q6_k"}) {
    shapes.push_back(std::string("m=3,n=37,k=512,bias=1,residual=1,dtype=") + f);
    shapes.push_back(std::string("m=66,n=37,k=256,bias=1,residual=0,act=gelu,dtype=") + f);
  }
  return shapes;
}
VKF_OP_SHAPES(gemm, gemm_shapes());

// Whether the leg runs a requested variant (leg_runs_variant): "gemv" runs
// gemm_vec_subgroup where the device has subgroup arithmetic.
bool leg_runs(const std::string& variant) { return leg_runs_variant(variant == "gemv" ? "gemv_subgroup" : variant); }

// Every activation on every variant: pre-activations over about [-12, 12] (both GELU
// tails, SiLU's saturating side), and large |x|, where exp() overflows inside SiLU and
// the GELUs: the result must stay finite (max_rel_error treats NaN and inf as
// failures) and accurate.
// A capability leg pairs each activation with one variant, by turns.
TEST_F(DeviceTest, GemmActivationsOnEveryVariant) {
  const Activation acts[] = {Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU,
                             Activation::Tanh};
  const char* variants[] = {"gemv", "tiled", "blocked", "texel", "broadcast"};
  for (int a = 0; a < 5; ++a)
    for (int v = 0; v < 5; ++v)
      for (float x_scale : {4.f, 400.f}) {
        const Activation act = acts[a];
        const char* variant = variants[v];
        if ((in_capability_leg() && v != a) || !device_runs(ctx().caps(), variant, {}) || !leg_runs(variant)) continue;
        Case c{5, 9, 8, DType::F32, act, true, true, variant, x_scale};
        EXPECT_LE(run(ctx(), c, 3).err, kF32Bound) << describe(c) << " x_scale=" << x_scale;
      }
}

// A NaN in X makes its row's outputs NaN through every activation, ReLU's
// max(x, 0) included, as PyTorch's do; the other rows stay finite (issue 29).
TEST_F(DeviceTest, GemmActivationsKeepNan) {
  const Activation acts[] = {Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU,
                             Activation::Tanh};
  const char* variants[] = {"gemv", "tiled", "blocked", "texel", "broadcast"};
  for (int a = 0; a < 5; ++a)
    for (int v = 0; v < 5; ++v) {
      const Activation act = acts[a];
      const char* variant = variants[v];
      if ((in_capability_leg() && v != a) || !device_runs(ctx().caps(), variant, {}) || !leg_runs(variant)) continue;
      const int64_t M = 3, N = 9, K = 8;
      auto x = random_vector(size_t(M * K), 7);
      x[size_t(1 * K + 2)] = std::nanf("");  // row 1
      auto w = random_vector(size_t(N * K), 8);
      Tensor tx = ctx().tensor({M, K}, x), tw = ctx().tensor({N, K}, w), ty = ctx().tensor({M, N});
      Recorder rec(ctx());
      gemm(rec, GemmArgs{&tx, &tw, nullptr, nullptr, &ty, act, variant});
      ctx().submit(rec);
      auto got = ctx().read(ty);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n)
          EXPECT_EQ(std::isnan(got[size_t(m * N + n)]), m == 1)
              << "act " << int(act) << " variant " << variant << " row " << m << " col " << n;
    }
}

TEST_F(DeviceTest, GemmAutoPicksByRows) {
  EXPECT_EQ(run(ctx(), {1, 64, 64}).info.variant.rfind("gemv", 0), 0u);
  const std::string many = run(ctx(), {130, 64, 64}).info.variant;
  // On a CPU, texel buffers when the device reads them (vectorized gathers),
  // with X's rows shared by subgroup shuffles where it has them; else plain
  // storage-buffer loads.
  const auto& c = ctx().caps();
  EXPECT_EQ(many, c.coopmat                ? "coopmat"
                  : c.device_type != "cpu" ? "tiled"
                  : !c.texel_f32         ? "blocked"
                  : c.subgroup_shuffle   ? "broadcast"
                                         : "texel");
}

// broadcast, texel and blocked sum each output in the same order (K steps of
// four, fma by fma): their results must be the same bits, whatever the tiles.
TEST_F(DeviceTest, GemmBroadcastMatchesBlockedBitwise) {
  if (!device_runs(ctx().caps(), "broadcast", {}) || !ctx().caps().texel_f32)
    GTEST_SKIP() << "no subgroup shuffles or texel buffers";
  for (const Case& base : {Case{37, 100, 64}, Case{130, 72, 30}, Case{66, 129, 768}}) {
    Case b = base, t = base, k = base;
    b.variant = "broadcast", t.variant = "texel", k.variant = "blocked";
    const Result rb = run(ctx(), b), rt = run(ctx(), t), rk = run(ctx(), k);
    EXPECT_EQ(rb.y, rt.y) << describe(b);
    EXPECT_EQ(rb.y, rk.y) << describe(b);
  }
}

// Tensor cores (variant coopmat) run only where the device lists a 16×16×16
// f16·f16+f32 cooperative-matrix shape; asking for them elsewhere names what is
// missing. Where they run, with f32 and f16 W, they are held to the fp32 bound:
// fp32 values go in as two fp16 parts (shaders/gemm_coopmat.comp).
TEST_F(DeviceTest, GemmCoopmatByCapability) {
  Case k{70, 100, 72, DType::F32, Activation::GeluErf, true, true};
  k.variant = "coopmat";
  if (!ctx().caps().coopmat) {
    expect_error([&] { run(ctx(), k); }, "needs VK_NV_cooperative_matrix");
    return;
  }
  for (DType dt : {DType::F32, DType::F16})
    for (Case c : {k, Case{33, 16, 16}, Case{130, 257, 768, DType::F32, Activation::None, false, true}}) {
      c.variant = "coopmat";
      c.dtype = dt;
      SCOPED_TRACE(describe(c));
      const Result r = run(ctx(), c);
      EXPECT_LE(r.err, kF32Bound);
      EXPECT_EQ(r.info.variant, "coopmat");
    }
}

// The tensor-core kernel with its matrix operations done by the lanes
// (coopmat_emulated, shaders/lib/coopmat.glsl) on any device with fp16
// arithmetic: coopmat's tiles, fp16 parts, split-K, prefetching and epilogue
// against the reference, within gemm's fp32 bound. Never the rule's pick.
// lavapipe takes ~20 s to compile each pipeline, so the cases share three:
// fp32 W (split) and fp16 W (exact) with GELU, bias and residual, off the
// tiles in M, N and K (BK 32); other tiles, prefetching and split-K. The
// block formats are cli_kernel_gemm_splitk_coopmat_emulated_q4_k (tests/CMakeLists.txt).
TEST_F(DeviceTest, GemmCoopmatEmulatedKeepsTheBound) {
  if (in_capability_leg()) GTEST_SKIP() << "lavapipe's default leg runs it (its pipelines are slow to compile)";
  const Capabilities& c = ctx().caps();
  Case k{70, 100, 72, DType::F32, Activation::GeluErf, true, true, "coopmat_emulated"};
  if (!c.shader_float16 || 256 % c.subgroup_size != 0) {
    expect_error([&] { run(ctx(), k); }, "variant coopmat_emulated needs shaderFloat16");
    return;
  }
  for (DType dt : {DType::F32, DType::F16}) {
    if (dt == DType::F16 && !has_f16()) continue;
    for (Case e : {k, Case{33, 16, 16}, Case{130, 65, 200}}) {
      e.dtype = dt, e.act = Activation::GeluErf, e.bias = e.residual = true, e.variant = "coopmat_emulated";
      SCOPED_TRACE(describe(e));
      const Result r = run(ctx(), e);
      EXPECT_LE(r.err, kF32Bound);
      EXPECT_EQ(r.info.variant, "coopmat_emulated");
    }
  }
  // One more pipeline for the rest: 2×1 matrices a subgroup over three 16-wide K
  // steps, prefetching, and split-K (chunks of 144, 144 and 12 of K; the chunks'
  // product has no epilogue, the sum does).
  {
    const TunedConfig cfg{"coopmat_emulated",
                          {{"BM", 64}, {"BN", 32}, {"BK", 48}, {"WM", 2}, {"WN", 2}, {"PF", 1}, {"SPLITK", 3}}};
    SCOPED_TRACE(cfg.text());
    ForcedTuning force(ctx(), "gemm", cfg);
    const Result r = run(ctx(), {33, 70, 300, DType::F32, Activation::GeluErf, true, true});
    EXPECT_LE(r.err, kF32Bound);
    EXPECT_EQ(r.info.variant, "coopmat_emulated");
    EXPECT_EQ(r.info.spec.back(), (std::pair<std::string, uint32_t>{"SPLITK", 3}));
  }
  EXPECT_NE(run(ctx(), {130, 64, 64}).info.variant, "coopmat_emulated");  // never the rule's
}

// The split coopmat makes of each fp32 value (shaders/gemm_coopmat.comp), done
// here with the same roundings: hi = fp16(v·2⁻⁸), lo = fp16((v − hi·2⁸)·2³)
// carry v to within max(2⁻²²·|v|, 2⁻²⁷) over |v| from 1e-9 to 1.6e7, and past
// 65504·2⁸ hi is inf (the product is inf, never a clipped number). Checked on
// every device, since most have no cooperative matrices to run the shader.
struct Halves {
  float hi, lo;
};
Halves split_fp16(float v) {
  const float hi = half_to_float(float_to_half(v * (1.0f / 256.0f)));
  return {hi, half_to_float(float_to_half((v - hi * 256.0f) * 8.0f))};
}

TEST(GemmCoopmatSplit, TwoHalvesCarryFp32) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> expo(-30.0, 24.0), sign(-1.0, 1.0);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = float(std::exp2(expo(rng)) * (sign(rng) < 0 ? -1.0 : 1.0));
    if (std::fabs(x) >= 65504.0f * 256.0f) continue;
    const auto [hi, lo] = split_fp16(x);
    ASSERT_TRUE(std::isfinite(hi) && std::isfinite(lo)) << x;
    const double back = double(hi) * 256.0 + double(lo) / 8.0;
    const double bound = std::max(std::ldexp(std::fabs(double(x)), -22), std::ldexp(1.0, -27));
    ASSERT_LE(std::fabs(back - double(x)), bound) << "x = " << x << " hi " << hi << " lo " << lo;
    worst = std::max(worst, std::fabs(back - double(x)) / bound);
  }
  EXPECT_GT(worst, 0.0);  // the bound is reached at all, so it measures something
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(65536.0f))));  // hi of x = 2^24
}

// fp32 W's dot products as coopmat forms them: hi·hi·2¹⁶ + (hi·lo + lo·hi)·2⁵,
// each fp16 product exact, Xlo·Wlo left out. Within gemm's fp32 bound of the
// exact sum at transformer-sized K, inputs over several binades.
TEST(GemmCoopmatSplit, ThreeProductsKeepTheFp32Bound) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> mant(-1.0, 1.0), expo(-6.0, 6.0);
  for (int K : {64, 768, 3072}) {
    double exact = 0, split = 0, scale = 0;
    for (int k = 0; k < K; ++k) {
      const float x = float(mant(rng) * std::exp2(expo(rng))), w = float(mant(rng) * std::exp2(expo(rng)) / 16);
      const Halves xs = split_fp16(x), ws = split_fp16(w);
      exact += double(x) * double(w);
      split += double(xs.hi) * ws.hi * 65536.0 + (double(xs.hi) * ws.lo + double(xs.lo) * ws.hi) * 32.0;
      scale += std::fabs(double(x) * double(w));
    }
    // fp32 accumulation adds its own K·2⁻²⁴ (relative to the magnitudes' sum) on the device.
    EXPECT_LE(std::fabs(split - exact), 1e-6 * scale) << "K " << K;
  }
}

// gemv_subgroup at a required subgroup size (knob SGS, the device's smallest:
// its only one on lavapipe and SwiftShader), from storage and texel buffers,
// matches the reference; without size control, or on a variant without
// subgroup operations, SGS is refused.
TEST_F(DeviceTest, GemvRequiresTheTunedSubgroupSize) {
  const Capabilities& c = ctx().caps();
  const uint32_t sgs = c.min_subgroup_size;
  auto refused = [&](TunedConfig cfg, Case k, const std::string& needle) {
    ForcedTuning force(ctx(), "gemm", cfg);
    expect_error([&] { run(ctx(), k); }, needle);
  };
  if (!c.subgroup_arithmetic || !c.subgroup_size_control) {
    refused({"", {{"SGS", sgs}}}, {1, 64, 64},
            c.subgroup_arithmetic ? "offers no subgroup size control" : "only variants with subgroup operations");
    return;
  }
  for (uint32_t texel : {0u, 1u})
    for (Case k : {Case{1, 64, 768, DType::F32, Activation::None, true, true}, Case{3, 33, 63},
                   Case{4, 70, 128, DType::F16, Activation::GeluErf, true, false}}) {
      if (k.dtype == DType::F16 && !has_f16()) continue;
      SCOPED_TRACE(describe(k) + " TEXEL=" + std::to_string(texel));
      ForcedTuning force(ctx(), "gemm", {"gemv_subgroup", {{"TEXEL", texel}, {"SGS", sgs}}});
      const Result r = run(ctx(), k);
      EXPECT_LE(r.err, kF32Bound);
      EXPECT_EQ(r.info.variant, "gemv_subgroup");
      EXPECT_EQ(r.info.spec.back(), (std::pair<std::string, uint32_t>{"SGS", sgs}));
    }
  const std::string only = "\" sets SGS, which only variants with subgroup operations take";
  refused({"gemv_shared", {{"SGS", sgs}}}, {1, 64, 64},
          "gemm: the tuned configuration \"gemv_shared SGS=" + std::to_string(sgs) + only);
  refused({"blocked", {{"SGS", sgs}}}, {9, 64, 64}, "blocked SGS=" + std::to_string(sgs) + only);
  refused({"gemv_subgroup", {{"SGS", c.max_subgroup_size * 2}}}, {1, 64, 64},
          "is not a power of two within the device's " + std::to_string(c.min_subgroup_size) + "..");
}

// Issue 29 #10, #11: knobs are checked in 64-bit arithmetic against the
// device's limits and a register budget, before anything is compiled.
TEST_F(DeviceTest, GemmRefusesTunedKnobsBeyondTheLimits) {
  auto refused = [&](TunedConfig cfg, Case k, const std::string& needle) {
    ForcedTuning force(ctx(), "gemm", cfg);
    expect_error([&] { run(ctx(), k); }, needle);
  };
  // COLS = 2^30 at 4 rows: rows · cols (and · wg · 4) wrapped to 0 in 32 bits and passed; the
  // result was wrong (max err 1.0).
  refused({"", {{"COLS", 1u << 30}}}, {4, 64, 64}, "COLS=1073741824 does not fit the device");
  refused({"", {{"COLS", 1u << 30}}}, {1, 64, 64}, "COLS=1073741824 does not fit the device");
  // 1024 accumulators per invocation: lavapipe compiled it for over a minute.
  refused({"blocked", {{"BM", 1024}, {"BN", 1}, {"TM", 1024}, {"TN", 1}}}, {9, 64, 64}, "TM x TN up to 256");
  refused({"blocked", {{"BK", 128}}}, {9, 64, 64}, "BK a multiple of 4 up to 64");
  refused({"blocked", {{"TM", 0}}}, {9, 64, 64}, "do not fit the device");  // was a division by zero
  // BM/TM × BN/TN = 2^32 invocations wrapped to 0 before the check.
  refused({"blocked", {{"BM", 65536}, {"TM", 1}, {"BN", 65536}, {"TN", 1}}}, {9, 64, 64}, "do not fit the device");
  refused({"bogus", {}}, {9, 64, 64}, "gemm: unknown variant \"bogus\"");
}

// Split-K (knob SPLITK, the staged tiles' and coopmat's; the rule's on GPUs
// only), and the staged tiles' prefetching of the next step (knob PF): K in chunks of whole BK steps, each a workgroup's partial sum, added
// up in order by gemm_splitk_reduce with the epilogue. Any number of chunks
// keeps gemm's fp32 bound, whatever the activation, bias, residual and K (off
// the chunks and off BK); a variant without staged tiles refuses the knob, and
// 0 or more than 8 chunks are refused. (The block formats split by the rule in
// the gpu profile's leg of the op test: m=66, n=37, k=256 is 4 chunks there.)
TEST_F(DeviceTest, GemmSplitKAndPrefetchKeepTheBound) {
  std::vector<Case> cases = {{33, 70, 1000, DType::F32, Activation::GeluErf, true, true},
                             {64, 64, 100, DType::F32, Activation::None, false, false},
                             {5, 129, 768, DType::F32, Activation::SiLU, true, false}};
  if (has_f16()) cases.push_back({40, 65, 766, DType::F16, Activation::GeluTanh, true, true});
  for (const Case& k : cases)
    for (uint32_t splits : {1u, 2u, 3u, 8u}) {
      const uint32_t pf = splits % 2;  // with and without prefetching the next step's tiles
      SCOPED_TRACE(describe(k) + " SPLITK=" + std::to_string(splits) + " PF=" + std::to_string(pf));
      // 16 × 16 tiles of 64 invocations: within every profile's limits (min: 128).
      ForcedTuning force(ctx(), "gemm", {"tiled", {{"BM", 16}, {"BN", 16}, {"BK", 8}, {"TM", 2}, {"TN", 2},
                                                   {"SPLITK", splits}, {"PF", pf}}});
      const Result r = run(ctx(), k);
      EXPECT_LE(r.err, kF32Bound);
      const auto& spec = r.info.spec;
      EXPECT_NE(std::find(spec.begin(), spec.end(), std::pair<std::string, uint32_t>{"PF", pf}), spec.end());
      if (splits > 1) EXPECT_EQ(spec.back(), (std::pair<std::string, uint32_t>{"SPLITK", splits}));
    }
  auto refused = [&](TunedConfig cfg, const std::string& needle) {
    ForcedTuning force(ctx(), "gemm", cfg);
    expect_error([&] { run(ctx(), {9, 64, 64}); }, needle);
  };
  refused({"blocked", {{"SPLITK", 2}}}, "blocked does not split K (staged tiles and coopmat do)");
  refused({"blocked", {{"PF", 1}}}, "blocked PF=1: prefetching is 0 or 1, for staged tiles only");
  refused({"tiled", {{"SPLITK", 0}}}, "tiled SPLITK=0 must be 1..8");
  refused({"tiled", {{"SPLITK", 9}}}, "tiled SPLITK=9 must be 1..8");
}

// Leading dimensions of x and y flatten into M.
TEST_F(DeviceTest, GemmFlattensLeadingDims) {
  const int64_t B = 2, L = 3, K = 20, N = 7;
  auto x = random_vector(size_t(B * L * K), 11), w = random_vector(size_t(N * K), 12);
  Tensor tx = ctx().tensor({B, L, K}, x), tw = ctx().tensor({N, K}, w), ty = ctx().tensor({B, L, N});
  Recorder rec(ctx());
  gemm(rec, {&tx, &tw, nullptr, nullptr, &ty});
  ctx().submit(rec);
  EXPECT_LE(ref::max_rel_error(ctx().read(ty), ref::gemm(x, w, nullptr, nullptr, B * L, N, K, Activation::None)),
            kF32Bound);
}

// A stacked projection kept as parts in different formats (a GGUF's Q4_K_M Q, K and V):
// each part's product goes to its window of Y's columns (GemmArgs::y_col), with the
// stacked bias and residual read at the same columns. Together they equal the
// product of the stacked matrix, on every variant that reads the formats.
TEST_F(DeviceTest, GemmPartsWriteWindowsOfY) {
  const int64_t K = 64, rows[] = {37, 5, 11};
  const DType formats[] = {DType::Q4_0, DType::Q8_0, DType::F32};
  const int64_t N = rows[0] + rows[1] + rows[2];
  // The engine's pick (gemv at one row, the CPU devices' register blocks at 66) and the GPUs' tiles.
  for (int64_t M : {1, 66})
    for (const char* variant : {"", "tiled"}) {
      if (*variant && !device_runs(ctx().caps(), variant, {})) continue;
      const auto x = random_vector(size_t(M * K), 21), b = random_vector(size_t(N), 22), r = random_vector(size_t(M * N), 23);
      Tensor tx = ctx().tensor({M, K}, x), tb = ctx().tensor({N}, b), tr = ctx().tensor({M, N}, r);
      Tensor ty = ctx().tensor({M, N});
      std::vector<float> stacked;  // the parts as stored, stacked by rows
      std::vector<Tensor> parts;
      Recorder rec(ctx());
      int64_t col = 0;
      for (int i = 0; i < 3; ++i) {
        const auto w = random_vector(size_t(rows[i] * K), 30 + i);
        parts.push_back(ctx().tensor({rows[i], K}, w, formats[i]));
        const auto stored = ctx().read(parts.back());
        stacked.insert(stacked.end(), stored.begin(), stored.end());
        GemmArgs a{&tx, &parts.back(), &tb, &tr, &ty, Activation::GeluErf, variant};
        a.y_col = uint32_t(col);
        gemm(rec, a);
        col += rows[i];
      }
      ctx().submit(rec);
      const auto want = ref::gemm(x, stacked, &b, &r, M, N, K, Activation::GeluErf);
      EXPECT_LE(ref::max_rel_error(ctx().read(ty), want), kF32Bound) << "M=" << M << " variant=" << variant;
    }
  // A window must fit Y.
  Tensor x = ctx().tensor({2, 64}), w = ctx().tensor({8, 64}), y = ctx().tensor({2, 12});
  Recorder rec(ctx());
  GemmArgs a{&x, &w, nullptr, nullptr, &y};
  a.y_col = 5;
  expect_error([&] { gemm(rec, a); }, "or wider, holding columns y_col = 5 to y_col + N");
}

// More than 65535 workgroups: the grid folds into y.
TEST_F(DeviceTest, GemmManyWorkgroups) {
  Case c{1, 300000, 4, DType::F32, Activation::None, true, false, "gemv"};
  EXPECT_LE(run(ctx(), c).err, kF32Bound);
}

// What fp16 storage costs: the same product against the unrounded fp32
// weights. Rounding each weight to 11 significant bits (relative error up to
// 2^-11 ≈ 4.9e-4, random in sign) leaves ~1e-4 on a K = 768 dot product;
// 2e-3 leaves room for unlucky seeds.
TEST_F(DeviceTest, GemmF16WeightsAgainstUnroundedF32) {
  if (!has_f16()) GTEST_SKIP() << "no 16-bit storage";
  constexpr double kF16StorageBound = 2e-3;
  for (const char* variant : {"gemv", "tiled", "blocked", "texel", "broadcast"}) {
    if (!device_runs(ctx().caps(), variant, {})) continue;
    Case c{17, 64, 768, DType::F16, Activation::GeluErf, true, false, variant};
    Result r = run(ctx(), c, 5);
    EXPECT_LE(r.err, kF16Bound) << describe(c);
    EXPECT_LE(r.err_f32, kF16StorageBound) << describe(c);
    EXPECT_GT(r.err_f32, r.err) << "fp16 storage should cost something";
    std::printf("[ gemm f16 %s ] vs stored weights %.2e, vs unrounded fp32 weights %.2e\n", variant, r.err,
                r.err_f32);
  }
}

TEST_F(DeviceTest, GemmRejectsBadArguments) {
  Tensor x = ctx().tensor({4, 8}), w = ctx().tensor({6, 8}), b = ctx().tensor({6}), y = ctx().tensor({4, 6});
  Tensor w_k = ctx().tensor({6, 7}), b_bad = ctx().tensor({5}), y_bad = ctx().tensor({4, 5});
  Tensor y_rank = ctx().tensor({24}), r_bad = ctx().tensor({4, 7});
  Recorder rec(ctx());
  auto call = [&](GemmArgs a) { gemm(rec, a); };
  EXPECT_NO_THROW(call({&x, &w, &b, nullptr, &y}));
  EXPECT_THROW(call({&x, &w_k, nullptr, nullptr, &y}), Error) << "K mismatch";
  EXPECT_THROW(call({&x, &w, &b_bad, nullptr, &y}), Error) << "bias size";
  EXPECT_THROW(call({&x, &w, &b, nullptr, &y_bad}), Error) << "y columns";
  EXPECT_THROW(call({&x, &w, &b, nullptr, &y_rank}), Error) << "y rank";
  EXPECT_THROW(call({&x, &w, &b, &r_bad, &y}), Error) << "residual shape";
  EXPECT_THROW(call({&x, &w, &b, nullptr, &y, Activation::None, "winograd"}), Error) << "unknown variant";
  EXPECT_THROW(call({&x, &w, nullptr, nullptr, nullptr}), Error) << "missing y";
  EXPECT_THROW(call({&x, &w, &b, &y, &y}), Error) << "y aliases residual";
  if (has_f16()) {
    Tensor w16 = ctx().tensor({6, 8}, DType::F16), x_f16 = ctx().tensor({4, 8}, DType::F16);
    EXPECT_THROW(call({&x_f16, &w, nullptr, nullptr, &y}), Error) << "f16 x";
    EXPECT_THROW(call({&x, &w16, &b, nullptr, &y}), Error) << "bias dtype differs from w";
  }
  ctx().submit(rec);  // the one valid call
}

}  // namespace vkf::test
