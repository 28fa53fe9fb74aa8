#include <cstdio>
#include <tuple>

#include "test_util.hpp"
#include "vk/context_impl.hpp"

namespace vkf::test {
namespace {

double run_l2(Context& ctx, int64_t rows, int64_t d, const std::string& variant, float scale = 1.f,
              float eps = 1e-12f, OpInfo* info = nullptr) {
  auto x = random_vector(size_t(rows * d), uint32_t(rows * 17 + d), -scale, scale);
  Tensor tx = ctx.tensor({rows, d}, x), ty = ctx.tensor({rows, d});
  Recorder rec(ctx);
  OpInfo i = l2_normalize(rec, {&tx, &ty, eps, variant});
  if (info) *info = i;
  ctx.submit(rec);
  return ref::max_rel_error(ctx.read(ty), ref::l2_normalize(x, rows, d, eps));
}

}  // namespace

class L2NormalizeTest : public DeviceTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (GetParam() == "subgroup" && !ctx().caps().subgroup_arithmetic) GTEST_SKIP() << "no subgroup arithmetic";
  }
};

TEST_P(L2NormalizeTest, MatchesReference) {
  double worst = 0;
  for (int64_t d : {1, 3, 64, 127, 512, 4099})
    for (int64_t rows : {1, 2, 37}) {
      SCOPED_TRACE("rows " + std::to_string(rows) + " d " + std::to_string(d));
      OpInfo info;
      double err = run_l2(ctx(), rows, d, GetParam(), 1.f, 1e-12f, &info);
      EXPECT_LE(err, kF32Bound);
      EXPECT_EQ(info.variant, GetParam());
      worst = std::max(worst, err);
    }
  std::printf("[ max error ] %s: %.3g\n", GetParam().c_str(), worst);
}

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
  Capabilities saved = ctx().caps();
  auto& caps = ctx().impl().caps;
  caps.max_workgroup_count[0] = 7;
  caps.max_workgroup_count[1] = 5;
  double err = run_l2(ctx(), 203, 33, "");
  caps = saved;
  EXPECT_LE(err, kF32Bound);
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

}  // namespace vkf::test
