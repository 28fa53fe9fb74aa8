// vkf::l2_normalize: a table of shapes; tiny and zero rows (eps); folding; bad
// arguments.
#include "op_test.hpp"

namespace vkf::test {
namespace {

double run_l2(Context& ctx, int64_t rows, int64_t d, const std::string& variant, float scale = 1.f) {
  auto x = random_vector(size_t(rows * d), uint32_t(rows * 17 + d), -scale, scale);
  Tensor tx = ctx.tensor({rows, d}, x), ty = ctx.tensor({rows, d});
  Recorder rec(ctx);
  l2_normalize(rec, {&tx, &ty, 1e-12f, variant});
  ctx.submit(rec);
  return ref::max_rel_error(ctx.read(ty), ref::l2_normalize(x, rows, d, 1e-12));
}

}  // namespace

// d 1, odd, vec4, past a workgroup and long; one row to many.
VKF_OP_SHAPES(l2_normalize, grid({{"n=1", "n=3", "n=64", "n=127", "n=512", "n=4099"}, {"m=1", "m=2", "m=37"}}));

class L2NormalizeTest : public DeviceTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (GetParam() == "subgroup" && !ctx().caps().subgroup_arithmetic) GTEST_SKIP() << "no subgroup arithmetic";
  }
};

// Tiny rows: Σx² below eps is clamped to eps (x·10^6 here), as TF does, so a
// zero row stays zero rather than NaN.
TEST_P(L2NormalizeTest, TinyRowsUseEps) {
  EXPECT_LE(run_l2(ctx(), 3, 5, GetParam(), 1e-8f), kF32Bound);
  Tensor z = ctx().tensor({2, 9}, std::vector<float>(18, 0.f)), y = ctx().tensor({2, 9});
  Recorder rec(ctx());
  l2_normalize(rec, {&z, &y, 1e-12f, GetParam()});
  ctx().submit(rec);
  for (float v : ctx().read(y)) EXPECT_EQ(v, 0.f);
}

INSTANTIATE_TEST_SUITE_P(Variants, L2NormalizeTest, ::testing::Values("subgroup", "shared"));

TEST_F(DeviceTest, L2NormalizeFoldsRowsIntoTheGrid) {
  ScopedCaps caps(ctx());
  caps->max_workgroup_count[0] = 7;
  caps->max_workgroup_count[1] = 5;
  EXPECT_LE(run_l2(ctx(), 203, 33, ""), kF32Bound);
}

TEST_F(DeviceTest, L2NormalizeRejectsBadArguments) {
  Tensor x = ctx().tensor({4, 8}), y = ctx().tensor({4, 8}), y9 = ctx().tensor({4, 9});
  Tensor yi = ctx().tensor_i32({4, 8}, std::vector<int32_t>(32));
  Recorder rec(ctx());
  auto expect = [&](L2NormalizeArgs a, const char* needle) { expect_error([&] { l2_normalize(rec, a); }, needle); };
  expect({&x, &y9}, "y");
  expect({&x, &yi}, "y");
  expect({&x, &x}, "alias");
  expect({&x, &y, -1.f}, "eps");
  expect({&x, &y, 1e-12f, "warp"}, "variant");
  expect({nullptr, &y}, "x");
  EXPECT_EQ(rec.dispatches(), 0u);
}

// One NaN in a row makes the whole row NaN, as torch.nn.functional.normalize
// (its clamp_min keeps NaN); the other rows are untouched (issue 29).
TEST_P(L2NormalizeTest, NanInputMakesItsRowNan) {
  for (int64_t d : {5, 64, 300}) {
    auto x = random_vector(size_t(3 * d), 5, -1.f, 1.f);
    x[size_t(d) + 2] = std::nanf("");
    Tensor tx = ctx().tensor({3, d}, x), ty = ctx().tensor({3, d});
    Recorder rec(ctx());
    l2_normalize(rec, {&tx, &ty, 1e-12f, GetParam()});
    ctx().submit(rec);
    auto got = ctx().read(ty);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < d; ++c)
        EXPECT_EQ(std::isnan(got[size_t(r * d + c)]), r == 1) << "d " << d << " row " << r << " col " << c;
  }
}

}  // namespace vkf::test
