#include "op_test.hpp"

namespace vkf::test {

// 1, odd sizes, one past a workgroup's 1024 elements, and enough to need many groups.
VKF_OP_SHAPES(mul, {"m=1,n=1", "m=1,n=7", "m=1,n=1025", "m=3,n=32769"});

TEST_F(DeviceTest, MulRejectsMismatchedShapes) {
  Tensor a = ctx().tensor({4}), b = ctx().tensor({5}), y = ctx().tensor({4});
  Recorder rec(ctx());
  EXPECT_THROW(vkf::mul(rec, {&a, &b, &y}), Error);
}

}  // namespace vkf::test
