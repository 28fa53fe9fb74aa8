#include "op_test.hpp"

namespace vkf::test {

// 1, odd sizes, one past a workgroup's 1024 elements, and enough to need many groups.
VKF_OP_SHAPES(add, {"m=1,n=1", "m=1,n=7", "m=1,n=1023", "m=1,n=1025", "m=3,n=32769"});

TEST_F(DeviceTest, AddCountsOneFlopPerElement) {
  Tensor a = ctx().tensor({7}), b = ctx().tensor({7}), y = ctx().tensor({7});
  Recorder rec(ctx());
  EXPECT_EQ(vkf::add(rec, {&a, &b, &y}).flops, 7.0);
}

TEST_F(DeviceTest, AddRejectsMismatchedShapes) {
  Tensor a = ctx().tensor({4}), b = ctx().tensor({5}), y = ctx().tensor({4});
  Recorder rec(ctx());
  EXPECT_THROW(vkf::add(rec, {&a, &b, &y}), Error);
}

}  // namespace vkf::test
