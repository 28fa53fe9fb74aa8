// masked_softmax: in place over rows of fp32 scores, both reduction variants,
// every mask kind; and the unfused pipeline scores → softmax → values against
// ref::attention.
#include "attention_util.hpp"

namespace vkf::test {

// Row lengths from 1 to past one workgroup's 256 lanes; every mask kind,
// causal with an offset (decoding after a prefix), Lq ≠ Lk, fully masked rows
// (three batches: the last masks every key; "both": row 0 of batch 0);
// Mistral's sliding window: shorter than the row, 1 (with padding: rows whose
// only key is padded), at least kv_len (plain causal), after an offset, on the
// vec4 path with windows that start off the vec4s.
// Padding comes with two sequences or more: the table's mask pads none of the first.
std::vector<AttnCase> softmax_cases() {
  return {
      {1, 1, 1, 1, 1, Layout::Separate, MaskKind::None},
      {2, 3, 1, 5, 5, Layout::Separate, MaskKind::Causal},
      {3, 2, 1, 17, 33, Layout::Separate, MaskKind::Padding},
      {3, 1, 1, 33, 33, Layout::Separate, MaskKind::Both},
      {1, 2, 1, 64, 64, Layout::Separate, MaskKind::Both},
      {2, 1, 1, 1, 70, Layout::Separate, MaskKind::Causal, 69},
      {2, 2, 1, 4, 300, Layout::Separate, MaskKind::Both, 296},
      {2, 3, 1, 17, 1000, Layout::Separate, MaskKind::Padding},
      {3, 3, 1, 33, 17, Layout::Separate, MaskKind::Causal},
      {2, 2, 1, 5, 257, Layout::Separate, MaskKind::None},
      // kv_len a multiple of 4: rows kept in registers as vec4s, masks read as ivec4s.
      {2, 2, 1, 20, 128, Layout::Separate, MaskKind::Padding},
      {3, 2, 1, 8, 64, Layout::Separate, MaskKind::Both},
      {2, 2, 1, 9, 96, Layout::Separate, MaskKind::Causal, 3},
      {1, 1, 1, 3, 4, Layout::Separate, MaskKind::None},
      {1, 2, 1, 5, 768, Layout::Separate, MaskKind::Both, 700},  // 24 vec4 per lane on CPU devices
      windowed({2, 3, 1, 9, 9, Layout::Separate, MaskKind::Causal}, 3),
      windowed({2, 1, 1, 1, 70, Layout::Separate, MaskKind::Causal, 69}, 1),
      windowed({3, 2, 1, 17, 33, Layout::Separate, MaskKind::Both}, 1),
      windowed({2, 2, 1, 9, 96, Layout::Separate, MaskKind::Causal, 3}, 200),
      windowed({2, 2, 1, 4, 300, Layout::Separate, MaskKind::Both, 296}, 100),
      windowed({2, 2, 1, 20, 128, Layout::Separate, MaskKind::Causal, 108}, 17),
      windowed({1, 2, 1, 5, 768, Layout::Separate, MaskKind::Both, 700}, 257),
  };
}
VKF_OP_SHAPES(masked_softmax, op_shapes(softmax_cases()));

// Runs the softmax on random scores in [-8, 8] and checks it against the reference.
void check_softmax(Context& ctx, const AttnCase& c, const std::string& variant) {
  AttnInputs in(ctx, c, 31);  // for the mask; the scores are random
  const auto& s = in.shape;
  const size_t n = size_t(s.batch) * s.heads * s.q_len * s.kv_len;
  auto x = random_vector(n, 32, -8.f, 8.f);
  Tensor scores = ctx.tensor({s.batch, s.heads, s.q_len, s.kv_len}, x);
  Recorder rec(ctx);
  OpInfo info = masked_softmax(rec, {&scores, s, in.mask, variant});
  ctx.submit(rec);
  EXPECT_EQ(info.variant, variant);
  auto got = ctx.read(scores);
  const double err = ref::max_rel_error(got, ref::masked_softmax({x.begin(), x.end()}, s, in.hmask));
  EXPECT_LE(err, kF32Bound);
  ::testing::Test::RecordProperty("max_rel_error", sci(err));
  for (size_t r : in.fully_masked_rows())
    for (uint32_t j = 0; j < s.kv_len; ++j) ASSERT_EQ(got[r * s.kv_len + j], 0.0f) << "row " << r;
}

// Masks the table's rows cannot have (scattered padding, rows whose every key is
// masked, other causal offsets), on scores in [-8, 8], with each variant.
class SoftmaxTest : public DeviceTest,
                    public ::testing::WithParamInterface<std::tuple<AttnCase, std::string>> {};

TEST_P(SoftmaxTest, MasksRowsAndOffsets) {
  const auto& [c, variant] = GetParam();
  if (variant == "subgroup" && !ctx().caps().subgroup_arithmetic) GTEST_SKIP() << "no subgroup arithmetic";
  check_softmax(ctx(), c, variant);
}

INSTANTIATE_TEST_SUITE_P(Masks, SoftmaxTest,
                         ::testing::Combine(::testing::ValuesIn(own_input_cases(softmax_cases(), false)),
                                            ::testing::Values("subgroup", "shared")),
                         [](const auto& i) { return case_name(std::get<0>(i.param)) + "_" + std::get<1>(i.param); });

// More rows than one grid dimension holds (65535 on most devices).
TEST_F(DeviceTest, MaskedSoftmaxManyRows) {
  for (const char* v : {"subgroup", "shared"}) {
    if (std::string(v) == "subgroup" && !ctx().caps().subgroup_arithmetic) continue;
    check_softmax(ctx(), {1, 1, 1, 70001, 3, Layout::Separate, MaskKind::Padding}, v);
  }
}

// With the workgroup-count limit clamped the rows fold into y and z.
TEST_F(DeviceTest, MaskedSoftmaxFoldsRows) {
  ScopedCaps caps(ctx());
  caps->max_workgroup_count[0] = 5;
  caps->max_workgroup_count[1] = 3;
  for (const char* v : {"subgroup", "shared"}) {
    if (std::string(v) == "subgroup" && !ctx().caps().subgroup_arithmetic) continue;
    check_softmax(ctx(), {2, 3, 1, 7, 9, Layout::Separate, MaskKind::Both}, v);  // 42 rows: 5 × 3 × 3
  }
}

// scores → softmax → values with f32 and f16 K/V equals ref::attention.
class UnfusedTest : public DeviceTest, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(UnfusedTest, MatchesAttention) {
  const AttnCase c = GetParam();
  if (c.kv == DType::F16 && !has_f16()) GTEST_SKIP() << "no 16-bit storage";
  AttnInputs in(ctx(), c, 41);
  const auto& s = in.shape;
  Tensor scores = ctx().tensor({s.batch, s.heads, s.q_len, s.kv_len});
  Tensor out = ctx().tensor({s.batch, s.q_len, int64_t(s.heads) * s.head_dim});
  Recorder rec(ctx());
  attention_scores(rec, {in.hq, in.hk, s, in.scale, &scores});
  masked_softmax(rec, {&scores, s, in.mask});
  attention_values(rec, {&scores, in.hv, s, &out});
  ctx().submit(rec);
  auto got = ctx().read(out);
  const double err = ref::max_rel_error(got, ref::attention(in.rq, in.rk, in.rv, s, in.hmask, in.scale));
  EXPECT_LE(err, kF32Bound);
  RecordProperty("max_rel_error", sci(err));
  expect_zero_rows(got, in);
}

std::vector<AttnCase> unfused_cases() {
  std::vector<AttnCase> out;
  for (DType dt : weight_dtypes()) {
    out.push_back({2, 3, 64, 17, 33, Layout::Separate, MaskKind::Padding, 0, dt});
    out.push_back({3, 2, 40, 5, 70, Layout::PackedKV, MaskKind::Both, 0, dt});
    out.push_back({1, 2, 128, 1, 33, Layout::Cache, MaskKind::Causal, 32, dt});
    out.push_back({3, 1, 80, 33, 33, Layout::Cache, MaskKind::Both, 0, dt});
  }
  out.push_back({2, 2, 32, 17, 17, Layout::PackedQKV, MaskKind::Causal});
  // Mistral: a sliding window over grouped K/V in a cache, and with padding.
  out.push_back(grouped(windowed({2, 4, 32, 9, 20, Layout::Cache, MaskKind::Causal, 11}, 4), 2));
  out.push_back(windowed({3, 2, 40, 5, 70, Layout::PackedKV, MaskKind::Both, 65}, 9));
  return out;
}
INSTANTIATE_TEST_SUITE_P(Shapes, UnfusedTest, ::testing::ValuesIn(unfused_cases()),
                         [](const auto& i) { return case_name(i.param); });

// A window reaching back to key 0 from the last query is the causal mask: the same bits.
TEST_F(DeviceTest, MaskedSoftmaxWindowOverAllKeysIsCausal) {
  const AttnCase c{2, 2, 1, 9, 96, Layout::Separate, MaskKind::Both, 3};  // last query at position 11
  AttnInputs in(ctx(), c, 33);
  const auto& s = in.shape;
  const auto x = random_vector(size_t(s.batch) * s.heads * s.q_len * s.kv_len, 34, -8.f, 8.f);
  for (const char* v : {"subgroup", "shared"}) {
    if (std::string(v) == "subgroup" && !ctx().caps().subgroup_arithmetic) continue;
    std::vector<std::vector<float>> outs;
    for (uint32_t window : {0u, 12u, 96u}) {
      Tensor scores = ctx().tensor({s.batch, s.heads, s.q_len, s.kv_len}, x);
      AttentionMask m = in.mask;
      m.window = window;
      Recorder rec(ctx());
      masked_softmax(rec, {&scores, s, m, v});
      ctx().submit(rec);
      outs.push_back(ctx().read(scores));
    }
    EXPECT_EQ(outs[1], outs[0]) << v;
    EXPECT_EQ(outs[2], outs[0]) << v;
  }
}

TEST_F(DeviceTest, MaskedSoftmaxRejectsBadArguments) {
  const AttentionShape s{2, 2, 1, 3, 5};
  Tensor sc = ctx().tensor({2, 2, 3, 5}), bad = ctx().tensor({2, 2, 5, 3});
  Tensor sc16 = ctx().tensor({2, 2, 3, 5}, DType::F16);
  Tensor pad = ctx().tensor_i32({2, 5}, std::vector<int32_t>(10)), padf = ctx().tensor({2, 5});
  Recorder rec(ctx());
  auto call = [&](Tensor* t, AttentionMask m, std::string variant = "") {
    return masked_softmax(rec, {t, s, m, variant});
  };
  EXPECT_NO_THROW(call(&sc, {&pad}));
  EXPECT_THROW(call(&bad, {}), Error);                 // shape
  EXPECT_THROW(call(&sc16, {}), Error);                // dtype
  EXPECT_THROW(call(&sc, {&padf}), Error);             // mask must be i32
  EXPECT_THROW(call(&sc, {&pad, 6}), Error);           // second batch's row past the end
  EXPECT_THROW(call(&sc, {&pad, 4}), Error);           // stride < kv_len
  EXPECT_THROW(call(&sc, {}, "warp"), Error);
  EXPECT_THROW(masked_softmax(rec, {&sc, {2, 2, 1, 3, 0}, {}}), Error);
  AttentionMask window;
  window.window = 2;
  expect_error([&] { call(&sc, window); }, "masked_softmax: mask.window 2 needs mask.causal");
  window.causal = true;
  EXPECT_NO_THROW(call(&sc, window));
}

// A NaN score makes its row NaN, as PyTorch's softmax does, on both paths
// (scalar and vec4) and both reductions; other rows keep their values, a fully
// masked row stays zeros, and a NaN at a masked key is never read (issue 29).
TEST_F(DeviceTest, MaskedSoftmaxNanScoreMakesItsRowNan) {
  for (const char* v : {"subgroup", "shared"}) {
    if (std::string(v) == "subgroup" && !ctx().caps().subgroup_arithmetic) continue;
    for (uint32_t kv_len : {7u, 64u, 300u}) {
      SCOPED_TRACE(std::string(v) + " kv_len " + std::to_string(kv_len));
      AttnInputs in(ctx(), {3, 1, 1, 4, kv_len, Layout::Separate, MaskKind::Padding}, 31);
      const auto& s = in.shape;
      const size_t n = size_t(s.batch) * s.heads * s.q_len * s.kv_len;
      auto x = random_vector(n, 32, -8.f, 8.f);
      const auto fully = in.fully_masked_rows();
      // Row 1: one NaN at its last key that is not padded. Every row: a NaN at its masked keys.
      uint32_t nan_key = kv_len - 1;
      while (nan_key > 0 && in.hmask.masked(0, 1, nan_key)) --nan_key;
      ASSERT_FALSE(in.hmask.masked(0, 1, nan_key));
      x[1 * kv_len + nan_key] = std::nanf("");
      for (size_t r = 0; r < n / kv_len; ++r) {
        const uint32_t b = uint32_t(r / (s.heads * s.q_len)), i = uint32_t(r % s.q_len);
        for (uint32_t j = 0; j < kv_len; ++j)
          if (in.hmask.masked(b, i, j)) x[r * kv_len + j] = std::nanf("");
      }
      Tensor scores = ctx().tensor({s.batch, s.heads, s.q_len, s.kv_len}, x);
      Recorder rec(ctx());
      masked_softmax(rec, {&scores, s, in.mask, v});
      ctx().submit(rec);
      auto got = ctx().read(scores);
      for (size_t r = 0; r < n / kv_len; ++r) {
        const bool is_fully = std::find(fully.begin(), fully.end(), r) != fully.end();
        for (uint32_t j = 0; j < kv_len; ++j) {
          const float g = got[r * kv_len + j];
          if (r == 1) EXPECT_TRUE(std::isnan(g)) << "row 1 key " << j << " got " << g;
          else if (is_fully) EXPECT_EQ(g, 0.0f) << "fully masked row " << r << " key " << j;
          else EXPECT_FALSE(std::isnan(g)) << "row " << r << " key " << j;
        }
      }
    }
  }
}

}  // namespace vkf::test
