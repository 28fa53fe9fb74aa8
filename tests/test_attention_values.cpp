// attention_values: O = P·V with heads written concatenated: a table of
// shapes, every layout models use, and bad arguments.
#include "attention_util.hpp"

namespace vkf::test {

VKF_OP_SHAPES(attention_values, op_shapes(view_cases()));

// V as models lay it out (separate, a packed QKV projection, a KV cache with
// NaN past the filled keys), which the table's packed KV memory is not; and
// what the op reports.
class ValuesTest : public DeviceTest, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(ValuesTest, ReadsEveryLayout) {
  const AttnCase c = GetParam();
  if (c.kv == DType::F16 && !has_f16()) GTEST_SKIP() << "no 16-bit storage";
  AttnInputs in(ctx(), c, 21);
  const auto& s = in.shape;
  // Probabilities-like weights in [0, 1) (the op is a plain product, rows need not sum to 1).
  auto p = random_vector(size_t(s.batch) * s.heads * s.q_len * s.kv_len, 22, 0.f, 1.f);
  Tensor probs = ctx().tensor({s.batch, s.heads, s.q_len, s.kv_len}, p);
  Tensor out = ctx().tensor({s.batch, s.q_len, int64_t(s.heads) * s.head_dim});
  Recorder rec(ctx());
  OpInfo info = attention_values(rec, {&probs, in.hv, s, &out});
  ctx().submit(rec);
  const std::vector<double> pd(p.begin(), p.end());
  const double err = ref::max_rel_error(ctx().read(out), ref::attention_values(pd, in.rv, s));
  EXPECT_LE(err, kF32Bound);
  RecordProperty("max_rel_error", sci(err));
  EXPECT_EQ(info.flops, 2.0 * s.batch * s.heads * s.q_len * s.kv_len * s.head_dim);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ValuesTest, ::testing::ValuesIn(own_input_cases(view_cases())),
                         [](const auto& i) { return case_name(i.param); });

TEST_F(DeviceTest, AttentionValuesRejectsBadArguments) {
  const AttentionShape s{2, 2, 8, 3, 5};
  Tensor p = ctx().tensor({2, 2, 3, 5}), v = ctx().tensor({2, 5, 16}), out = ctx().tensor({2, 3, 16});
  Tensor vi = ctx().tensor_i32({2, 5, 16}, std::vector<int32_t>(160));
  Tensor bad_p = ctx().tensor({2, 2, 5, 3}), bad_out = ctx().tensor({2, 16, 3});
  Tensor p16 = ctx().tensor({2, 2, 3, 5}, DType::F16);
  Recorder rec(ctx());
  auto call = [&](Tensor* probs, HeadsView vv, AttentionShape sh, Tensor* o, std::string variant = "") {
    AttentionValuesArgs a{probs, vv, sh, o, variant};
    return attention_values(rec, a);
  };
  EXPECT_NO_THROW(call(&p, {&v}, s, &out));
  EXPECT_THROW(call(&bad_p, {&v}, s, &out), Error);          // probs shape
  EXPECT_THROW(call(&p16, {&v}, s, &out), Error);            // probs must be f32
  EXPECT_THROW(call(&p, {&vi}, s, &out), Error);             // V i32
  EXPECT_THROW(call(&p, {&v}, s, &bad_out), Error);          // out shape
  EXPECT_THROW(call(&p, {&v, 8}, s, &out), Error);           // columns past the row
  EXPECT_THROW(call(&p, {&v, 0, 16, 100}, s, &out), Error);   // batch stride past the end
  EXPECT_THROW(call(&p, {&v}, {2, 2, 8, 3, 0}, &out), Error);  // no keys
  EXPECT_THROW(call(&p, {&v}, s, &out, "gemv"), Error);
  EXPECT_NO_THROW(call(&p, {&v, 8}, {2, 2, 8, 3, 5, 1}, &out));  // multi-query: one V head, columns [8, 16)
  expect_error([&] { call(&p, {&v}, {2, 6, 8, 3, 5, 4}, &out); },
               "attention_values: heads 6 is not a multiple of kv_heads 4");
}

}  // namespace vkf::test
