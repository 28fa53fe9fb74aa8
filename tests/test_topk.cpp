// vkf::topk: a table of shapes and k; ties, infinities, zeros and NaN ranked as
// torch ranks them; folding; what it reports; bad arguments.
#include <cmath>
#include <limits>
#include <tuple>

#include "op_test.hpp"

namespace vkf::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs topk on the device and checks values and indices against ref::topk exactly.
void check_topk(Context& ctx, const std::vector<float>& x, int64_t rows, int64_t n, uint32_t k,
                const std::string& variant, OpInfo* info = nullptr) {
  Tensor tx = ctx.tensor({rows, n}, x), tv = ctx.tensor({rows, int64_t(k)});
  Tensor ti = ctx.tensor_i32({rows, int64_t(k)}, std::vector<int32_t>(size_t(rows) * k, -7));
  Recorder rec(ctx);
  OpInfo i = topk(rec, {&tx, k, &tv, &ti, variant});
  if (info) *info = i;
  ctx.submit(rec);
  std::vector<float> want_v;
  std::vector<int32_t> want_i;
  ref::topk(x, rows, n, k, want_v, want_i);
  auto got_v = ctx.read(tv);
  auto got_i = ctx.read_i32(ti);
  ASSERT_EQ(got_i, want_i);
  for (size_t j = 0; j < got_v.size(); ++j) {
    if (std::isnan(want_v[j])) {
      ASSERT_TRUE(std::isnan(got_v[j])) << j;
    } else {
      ASSERT_EQ(got_v[j], want_v[j]) << j;  // copies of inputs: exact
    }
  }
}

}  // namespace

// Rows of 1 to 32000 values (one vocabulary), many short rows, every k that
// fits the row, on random values.
std::vector<std::string> topk_shapes() {
  std::vector<std::string> out;
  for (const auto& s : grid({{"m=1,n=1", "m=3,n=7", "m=2,n=33", "m=37,n=100", "m=5,n=1001", "m=300,n=64", "m=2,n=32000"},
                             {"topk=1", "topk=2", "topk=5", "topk=16", "topk=32"}})) {
    const OpShape o = parse_op_shape(s);
    if (o.topk <= o.n) out.push_back(s);
  }
  return out;
}
VKF_OP_SHAPES(topk, topk_shapes());

// The rules for ties, infinities and zeros, per (variant, k, sizes). Sizes
// "gpu" picks workgroup sizes as for a discrete GPU (wide groups of several
// subgroups), so that lavapipe also runs the cross-subgroup merge that its own
// one-subgroup choice never needs.
class TopKTest : public DeviceTest,
                 public ::testing::WithParamInterface<std::tuple<std::string, uint32_t, std::string>> {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (std::get<0>(GetParam()) == "subgroup" && !ctx().caps().subgroup_arithmetic)
      GTEST_SKIP() << "no subgroup arithmetic";
    if (std::get<2>(GetParam()) == "gpu") caps_->device_type = "discrete";
  }
  ScopedCaps caps_{ctx()};
};

// Few distinct values: most of the top k are ties, resolved to the lower index.
TEST_P(TopKTest, TiesGoToTheLowerIndex) {
  auto [variant, k, sizes] = GetParam();
  for (int64_t n : {40, 999, 4096}) {
    SCOPED_TRACE("n " + std::to_string(n));
    auto x = random_vector(size_t(4 * n), uint32_t(n), 0.f, 3.f);
    for (auto& v : x) v = std::floor(v);
    for (int64_t i = 0; i < n; ++i) x[size_t(3 * n + i)] = 1.5f;  // a row of one value
    check_topk(ctx(), x, 4, n, k, variant);
  }
}

// -inf (masked logits) ranks below every finite value and ties among itself;
// a row of -inf returns its first k indices. -0 ties with +0.
TEST_P(TopKTest, NegativeInfinityAndZeros) {
  auto [variant, k, sizes] = GetParam();
  const int64_t n = 301;
  auto x = random_vector(size_t(4 * n), 5, -1.f, 1.f);
  for (int64_t i = 0; i < n; ++i) {
    if (i % 3 != 1) x[size_t(i)] = -kInf;               // row 0: mostly -inf
    x[size_t(n + i)] = -kInf;                           // row 1: all -inf
    if (i > 2) x[size_t(2 * n + i)] = -kInf;            // row 2: three finite values, then -inf
    x[size_t(3 * n + i)] = i % 2 ? 0.f : -0.f;          // row 3: signed zeros
  }
  x[size_t(3 * n + 7)] = kInf;
  check_topk(ctx(), x, 4, n, k, variant);
}

INSTANTIATE_TEST_SUITE_P(Rules, TopKTest,
                         ::testing::Combine(::testing::Values("subgroup", "shared"),
                                            ::testing::Values(1u, 2u, 5u, 16u, 32u),
                                            ::testing::Values("native", "gpu")));

TEST_F(DeviceTest, TopKRanksNaNFirstLikeTorch) {
  auto x = random_vector(2 * 50, 8);
  x[10] = std::nanf("");
  x[3] = std::nanf("");
  x[60] = -std::nanf("");
  check_topk(ctx(), x, 2, 50, 4, "");
}

TEST_F(DeviceTest, TopKFoldsRowsIntoTheGrid) {
  ScopedCaps caps(ctx());
  caps->max_workgroup_count[0] = 6;
  caps->max_workgroup_count[1] = 4;
  check_topk(ctx(), random_vector(101 * 77, 9), 101, 77, 3, "");
}

TEST_F(DeviceTest, TopKReportsWhatItDispatched) {
  OpInfo info;
  check_topk(ctx(), random_vector(4 * 1000, 10), 4, 1000, 2, "", &info);
  EXPECT_EQ(info.op, "topk");
  EXPECT_EQ(info.variant, ctx().caps().subgroup_arithmetic ? "subgroup" : "shared");
  ASSERT_EQ(info.spec.size(), 2u);
  EXPECT_EQ(info.spec[1], (std::pair<std::string, uint32_t>{"K", 2}));
  EXPECT_GE(topk_max_k(), 16u);
}

TEST_F(DeviceTest, TopKRejectsBadArguments) {
  Tensor x = ctx().tensor({3, 10}), v = ctx().tensor({3, 2}), v3 = ctx().tensor({3, 3});
  Tensor i = ctx().tensor_i32({3, 2}, std::vector<int32_t>(6)), fi = ctx().tensor({3, 2});
  Tensor x1 = ctx().tensor({30}), x4 = ctx().tensor({3, 4});
  Tensor v5 = ctx().tensor({3, 5}), i5 = ctx().tensor_i32({3, 5}, std::vector<int32_t>(15));
  Recorder rec(ctx());
  auto expect_error = [&](TopKArgs a, const char* needle) {
    test::expect_error([&] { topk(rec, a); }, needle);
  };
  expect_error({&x1, 2, &v, &i}, "x");
  expect_error({&x, 0, &v, &i}, "k 0");
  expect_error({&x, topk_max_k() + 1, &v, &i}, "topk_max_k");
  expect_error({&x4, 5, &v5, &i5}, "exceeds the row length n 4");
  expect_error({&x, 2, &v3, &i}, "values");
  expect_error({&x, 2, &v, &fi}, "indices");
  expect_error({&x, 2, &v, &i, "bitonic"}, "variant");
  EXPECT_EQ(rec.dispatches(), 0u);
}

}  // namespace vkf::test
