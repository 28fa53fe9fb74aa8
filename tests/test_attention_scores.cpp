// attention_scores: S = scale·QKᵀ read straight from head views: a table of
// shapes, every layout models use, and bad arguments.
#include "attention_util.hpp"

namespace vkf::test {

VKF_OP_SHAPES(attention_scores, op_shapes(view_cases()));

// Q and K as models lay them out (separate, a packed QKV projection, a KV cache
// with NaN past the filled keys), which the table's packed KV memory is not;
// and what the op reports.
class ScoresTest : public DeviceTest, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(ScoresTest, ReadsEveryLayout) {
  const AttnCase c = GetParam();
  if (c.kv == DType::F16 && !has_f16()) GTEST_SKIP() << "no 16-bit storage";
  AttnInputs in(ctx(), c, 11);
  const auto& s = in.shape;
  Tensor scores = ctx().tensor({s.batch, s.heads, s.q_len, s.kv_len});
  Recorder rec(ctx());
  OpInfo info = attention_scores(rec, {in.hq, in.hk, s, in.scale, &scores});
  ctx().submit(rec);
  const double err = ref::max_rel_error(ctx().read(scores), ref::attention_scores(in.rq, in.rk, s, in.scale));
  EXPECT_LE(err, kF32Bound);
  RecordProperty("max_rel_error", sci(err));
  EXPECT_EQ(info.flops, 2.0 * s.batch * s.heads * s.q_len * s.kv_len * s.head_dim);
  EXPECT_EQ(info.variant, "tiled");
}

INSTANTIATE_TEST_SUITE_P(Layouts, ScoresTest, ::testing::ValuesIn(own_input_cases(view_cases())),
                         [](const auto& i) { return case_name(i.param); });

TEST_F(DeviceTest, AttentionScoresRejectsBadArguments) {
  const AttentionShape s{2, 2, 8, 3, 5};
  Tensor q = ctx().tensor({2, 3, 16}), k = ctx().tensor({2, 5, 16}), sc = ctx().tensor({2, 2, 3, 5});
  Tensor q16 = ctx().tensor({2, 3, 16}, DType::F16);
  Tensor ki = ctx().tensor_i32({2, 5, 16}, std::vector<int32_t>(160));
  Tensor bad_sc = ctx().tensor({2, 2, 5, 3}), sc6 = ctx().tensor({2, 2, 3, 6});
  Recorder rec(ctx());
  auto call = [&](HeadsView qv, HeadsView kv, AttentionShape sh, Tensor* out, std::string variant = "") {
    AttentionScoresArgs a{qv, kv, sh, 1.0f, out, variant};
    return attention_scores(rec, a);
  };
  EXPECT_NO_THROW(call({&q}, {&k}, s, &sc));
  EXPECT_THROW(call({&q16}, {&k}, s, &sc), Error);             // Q must be f32
  EXPECT_THROW(call({&q}, {&ki}, s, &sc), Error);              // K i32
  EXPECT_THROW(call({&q}, {nullptr}, s, &sc), Error);          // K missing
  EXPECT_THROW(call({&q}, {&k}, s, &bad_sc), Error);           // scores shape
  EXPECT_THROW(call({&q}, {&k}, s, &q), Error);                // scores aliases q (and wrong shape)
  EXPECT_THROW(call({&q, 1}, {&k}, s, &sc), Error);            // columns past the row
  EXPECT_THROW(call({&q, 0, 16, 50}, {&k}, s, &sc), Error);    // batch stride past the end
  EXPECT_THROW(call({&q}, {&k, 0, 16, 0}, {2, 2, 8, 3, 6}, &sc6), Error);  // 6 keys in a 5-row K
  EXPECT_THROW(call({&q}, {&k}, {2, 2, 0, 3, 5}, &sc), Error); // head_dim 0
  EXPECT_THROW(call({&q}, {&k}, s, &sc, "nope"), Error);
  EXPECT_NO_THROW(call({&q}, {&k, 8}, {2, 2, 8, 3, 5, 1}, &sc));  // multi-query: one K head, columns [8, 16)
  expect_error([&] { call({&q}, {&k}, {2, 6, 8, 3, 5, 4}, &sc); },
               "attention_scores: heads 6 is not a multiple of kv_heads 4");
}

}  // namespace vkf::test
