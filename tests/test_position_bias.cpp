// position_bias: T5's relative-position bias expanded from bucket ids. The
// table's cases have 41 relative positions (−20..20), so longer rows clamp;
// a decode step's rows start at kv_len − q_len.
#include "op_test.hpp"

namespace vkf::test {

VKF_OP_SHAPES(position_bias, {"heads=1,q_len=1,kv_len=1", "heads=3,q_len=17,kv_len=33", "heads=8,q_len=1,kv_len=65",
                              "heads=2,q_len=70,kv_len=70,dtype=f16", "heads=5,q_len=4,kv_len=130"});

TEST_F(DeviceTest, PositionBiasRejectsBadArguments) {
  Tensor table = ctx().tensor({32, 4}), out = ctx().tensor({4, 3, 5}), bad_out = ctx().tensor({4, 3, 6});
  Tensor buckets = ctx().tensor_i32({9}, std::vector<int32_t>(9)), even = ctx().tensor_i32({8}, std::vector<int32_t>(8));
  Recorder rec(ctx());
  EXPECT_NO_THROW(position_bias(rec, {&table, &buckets, 3, 5, 0, &out}));
  EXPECT_NO_THROW(position_bias(rec, {&table, &buckets, 3, 5, 0, &bad_out}));  // longer rows
  EXPECT_THROW(position_bias(rec, {&table, &buckets, 3, 7, 0, &bad_out}), Error);  // too short
  EXPECT_THROW(position_bias(rec, {&table, &even, 3, 5, 0, &out}), Error);  // not 2·max_rel + 1
  EXPECT_THROW(position_bias(rec, {&table, &buckets, 3, 5, 0x7fffffffu, &out}), Error);
  EXPECT_THROW(position_bias(rec, {&table, &table, 3, 5, 0, &out}), Error);  // buckets not i32
}

}  // namespace vkf::test
