// vkf::rmsnorm: the generic table (every row length class against every row
// count, fp32 and fp16 gamma), then what the generic test cannot say.
#include "op_test.hpp"

namespace vkf::test {

// A capability leg (in_capability_leg()): one and many rows, an odd row and three
// vec4-aligned classes.
VKF_OP_SHAPES(rmsnorm, in_capability_leg()
                           ? grid({{"m=1", "m=300"}, {"n=3", "n=127", "n=768", "n=1000"}, {"dtype=f32", "dtype=f16"}})
                           : grid({{"m=1", "m=2", "m=37", "m=300"},
                                   {"n=1", "n=3", "n=64", "n=127", "n=512", "n=768", "n=1000"},
                                   {"dtype=f32", "dtype=f16"}}));

namespace {

/// rmsnorm of `x` ([rows, d]) with gamma in [0.5, 1.5); max_rel_error against the reference.
double run_rmsnorm(Context& ctx, const std::vector<float>& x, int64_t rows, int64_t d, float eps = 1e-6f,
                   OpInfo* info = nullptr) {
  const auto gamma = random_vector(size_t(d), 5, 0.5f, 1.5f);
  Tensor tx = ctx.tensor({rows, d}, x), tg = ctx.tensor({d}, gamma), ty = ctx.tensor({rows, d});
  Recorder rec(ctx);
  const OpInfo i = rmsnorm(rec, {&tx, &tg, &ty, eps});
  if (info) *info = i;
  ctx.submit(rec);
  return ref::max_rel_error(ctx.read(ty), ref::rmsnorm(x, gamma, rows, d, eps));
}

}  // namespace

// No mean is subtracted: a row far from zero keeps its offset, scaled to unit RMS.
TEST_F(DeviceTest, RmsNormKeepsTheMean) {
  auto x = random_vector(5 * 768, 7, 999.f, 1001.f);
  EXPECT_LE(run_rmsnorm(ctx(), x, 5, 768), kF32Bound);
}

// An all-zero row gives zeros (0 / √eps), never NaN; eps matters for tiny rows.
TEST_F(DeviceTest, RmsNormZeroAndTinyRows) {
  std::vector<float> x(3 * 64, 0.f);
  for (int c = 0; c < 64; ++c) x[64 + c] = 1e-4f * float(c % 7 - 3), x[128 + c] = float(c) - 31.5f;
  EXPECT_LE(run_rmsnorm(ctx(), x, 3, 64, 1e-6f), kF32Bound);
  EXPECT_LE(run_rmsnorm(ctx(), x, 3, 64, 0.5f), kF32Bound);
}

// A NaN in a row makes that row NaN, as T5's RMSNorm in torch; the other rows
// are untouched; short, vec4 and streamed rows (issue 29).
TEST_F(DeviceTest, RmsNormNanInputMakesItsRowNan) {
  for (int64_t d : {5, 64, 9000}) {
    auto x = random_vector(size_t(3 * d), 9, -1.f, 1.f);
    x[size_t(d + d / 2)] = std::nanf("");  // row 1
    auto g = random_vector(size_t(d), 10);
    Tensor tx = ctx().tensor({3, d}, x), tg = ctx().tensor({d}, g), ty = ctx().tensor({3, d});
    Recorder rec(ctx());
    rmsnorm(rec, {&tx, &tg, &ty, 1e-6f, ""});
    ctx().submit(rec);
    auto got = ctx().read(ty);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < d; ++c)
        ASSERT_EQ(std::isnan(got[size_t(r * d + c)]), r == 1) << "d " << d << " row " << r << " col " << c;
  }
}

// Rows longer than the registers hold are streamed from memory.
TEST_F(DeviceTest, RmsNormLongRowsStream) {
  for (int64_t d : {40000, 40001}) {
    OpInfo info;
    EXPECT_LE(run_rmsnorm(ctx(), random_vector(size_t(3 * d), 9), 3, d, 1e-6f, &info), kF32Bound);
    EXPECT_EQ(info.spec[1].first, "ITEMS");
    EXPECT_EQ(info.spec[1].second, 1u);
  }
}

TEST_F(DeviceTest, RmsNormFoldsRowsIntoTheGrid) {
  ScopedCaps caps(ctx());
  caps->max_workgroup_count[0] = 7;
  caps->max_workgroup_count[1] = 5;
  EXPECT_LE(run_rmsnorm(ctx(), random_vector(203 * 65, 3), 203, 65), kF32Bound);
}

TEST_F(DeviceTest, RmsNormReportsWhatItDispatched) {
  OpInfo info;
  run_rmsnorm(ctx(), random_vector(4 * 768, 1), 4, 768, 1e-6f, &info);
  EXPECT_EQ(info.op, "rmsnorm");
  EXPECT_EQ(info.variant, ctx().caps().subgroup_arithmetic ? "subgroup" : "shared");
  EXPECT_EQ(info.spec[0].first, "WG");
  EXPECT_EQ(info.bytes, 4.0 * 768 * 4 * 2 + 768 * 4);
}

TEST_F(DeviceTest, RmsNormRejectsBadArguments) {
  Tensor x = ctx().tensor({4, 8}), y = ctx().tensor({4, 8}), g = ctx().tensor({8}), g7 = ctx().tensor({7});
  Tensor yi = ctx().tensor_i32({4, 8}, std::vector<int32_t>(32));
  Recorder rec(ctx());
  auto bad = [&](RmsNormArgs a, const char* needle) { expect_error([&] { rmsnorm(rec, a); }, needle); };
  bad({&x, &g7, &y}, "gamma [7] f32 must be [8]");
  bad({&x, nullptr, &y}, "gamma is missing");
  bad({&x, &g, &yi}, "y [4, 8] i32 must be f32");
  bad({&x, &g, &x}, "y must not alias x");
  bad({&x, &g, &y, -1.f}, "eps must be finite and >= 0");
  bad({&x, &g, &y, 1e-6f, "warp"}, "unknown variant \"warp\"");
  EXPECT_EQ(rec.dispatches(), 0u);
}

}  // namespace vkf::test
