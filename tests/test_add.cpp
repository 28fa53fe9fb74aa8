#include "test_util.hpp"

namespace vkf::test {

class AddTest : public DeviceTest, public ::testing::WithParamInterface<int64_t> {};

TEST_P(AddTest, MatchesReference) {
  const int64_t n = GetParam();
  auto a = random_vector(size_t(n), 1), b = random_vector(size_t(n), 2);
  Tensor ta = ctx().tensor({n}, a), tb = ctx().tensor({n}, b), ty = ctx().tensor({n});
  Recorder rec(ctx());
  OpInfo info = vkf::add(rec, {&ta, &tb, &ty});
  ctx().submit(rec);
  EXPECT_LE(ref::max_rel_error(ctx().read(ty), ref::add(a, b)), kF32Bound);
  EXPECT_EQ(info.flops, double(n));
}

// 1, odd sizes, one past a workgroup's 1024 elements, and enough to need many groups.
INSTANTIATE_TEST_SUITE_P(Shapes, AddTest, ::testing::Values(1, 7, 1023, 1025, 98304 + 3));

TEST_F(DeviceTest, AddRejectsMismatchedShapes) {
  Tensor a = ctx().tensor({4}), b = ctx().tensor({5}), y = ctx().tensor({4});
  Recorder rec(ctx());
  EXPECT_THROW(vkf::add(rec, {&a, &b, &y}), Error);
}

}  // namespace vkf::test
