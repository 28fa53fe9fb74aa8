// vkf::mean_pool: a table of shapes with and without padding; scattered and
// whole-sequence masks; mask strides; folding; what it reports; bad arguments.
#include "op_test.hpp"

namespace vkf::test {
namespace {

enum class MaskKind { Tail, Scattered, All };

// Mean pool of [batch, len, d] with a key padding mask of `stride` columns;
// returns max_rel_error against the reference.
double run_pool(Context& ctx, uint32_t batch, uint32_t len, uint32_t d, MaskKind kind, uint32_t stride = 0,
                OpInfo* info = nullptr, PoolMode mode = PoolMode::Mean) {
  const uint32_t ms = stride ? stride : len;
  auto x = random_vector(size_t(batch) * len * d, batch * 131 + len * 7 + d, -2.f, 2.f);
  std::vector<int32_t> mask(size_t(batch) * ms, 1);  // columns past len stay 1: never read
  for (uint32_t b = 0; b < batch; ++b)
    for (uint32_t i = 0; i < len; ++i) {
      int32_t m = 0;
      if (kind == MaskKind::Tail) m = i >= len - (b % len);  // sequence b has b % len padded rows
      if (kind == MaskKind::Scattered) m = (i * 7 + b) % 3 == 0;
      if (kind == MaskKind::All) m = b % 2 == 0;  // even sequences: every row masked
      mask[size_t(b) * ms + i] = m;
    }
  Tensor tx = ctx.tensor({int64_t(batch), int64_t(len), int64_t(d)}, x);
  Tensor tm = ctx.tensor_i32({int64_t(batch), int64_t(ms)}, mask);
  Tensor to = ctx.tensor({int64_t(batch), int64_t(d)});
  Recorder rec(ctx);
  MeanPoolArgs a;
  a.x = &tx;
  a.key_padding = &tm;
  a.key_padding_stride = stride;
  a.out = &to;
  a.mode = mode;
  OpInfo i = mean_pool(rec, a);
  if (info) *info = i;
  ctx.submit(rec);
  auto want = ref::mean_pool(x, &mask, ms, batch, len, d, mode);
  auto got = ctx.read(to);
  if (kind == MaskKind::All && mode != PoolMode::First)  // fully masked sequences give exact zeros, never NaN
    for (uint32_t b = 0; b < batch; b += 2)
      for (uint32_t c = 0; c < d; ++c) EXPECT_EQ(got[size_t(b) * d + c], 0.0f);
  return ref::max_rel_error(got, want);
}

}  // namespace

// d 1, odd, vec4 and past a workgroup; one row to many; one and three sequences.
const std::vector<std::string> kShapes = grid({{"n=1", "n=3", "n=4", "n=130", "n=512", "n=1025"},
                                               {"q_len=1", "q_len=2", "q_len=37", "q_len=128"},
                                               {"batch=1", "batch=3"}});

// The registered case pads the last 3·b rows of sequence b.
VKF_OP_SHAPES(mean_pool, grid({kShapes, {"mask=none", "mask=padding"}}));

// Masks the table's case does not make: scattered rows, and whole sequences
// masked (their mean is exactly 0, never NaN).
class MeanPoolTest : public DeviceTest, public ::testing::WithParamInterface<MaskKind> {};

TEST_P(MeanPoolTest, ScatteredAndFullyMaskedSequences) {
  for (const auto& text : kShapes) {
    SCOPED_TRACE(text);
    const OpShape s = parse_op_shape(text);
    EXPECT_LE(run_pool(ctx(), s.batch, s.q_len, uint32_t(s.n), GetParam()), kF32Bound);
  }
}

INSTANTIATE_TEST_SUITE_P(Masks, MeanPoolTest, ::testing::Values(MaskKind::Scattered, MaskKind::All));

// sentence-transformers' other pooling modes: mean_sqrt_len_tokens, max, cls
// (the first row, even where masked), with tail and scattered masks.
TEST_F(DeviceTest, MeanPoolModes) {
  for (PoolMode mode : {PoolMode::MeanSqrtLen, PoolMode::Max, PoolMode::First})
    for (MaskKind kind : {MaskKind::Tail, MaskKind::Scattered, MaskKind::All})
      for (const char* text : {"n=3,q_len=1,batch=3", "n=130,q_len=37,batch=3", "n=1025,q_len=2,batch=1"}) {
        SCOPED_TRACE(std::string(text) + " mode " + std::to_string(int(mode)) + " mask " + std::to_string(int(kind)));
        const OpShape s = parse_op_shape(text);
        OpInfo info;
        EXPECT_LE(run_pool(ctx(), s.batch, s.q_len, uint32_t(s.n), kind, 0, &info, mode), kF32Bound);
        EXPECT_EQ(info.spec.back(), std::make_pair(std::string("MODE"), uint32_t(mode)));
      }
}

// A mask wider than len (a plan's buffer reused for a shorter batch).
TEST_F(DeviceTest, MeanPoolMaskStride) {
  EXPECT_LE(run_pool(ctx(), 3, 5, 64, MaskKind::Tail, 9), kF32Bound);
}

// More sequences than one grid dimension holds.
TEST_F(DeviceTest, MeanPoolFoldsIntoTheGrid) {
  ScopedCaps caps(ctx());
  caps->max_workgroup_count[0] = 7;
  caps->max_workgroup_count[1] = 5;
  EXPECT_LE(run_pool(ctx(), 50, 3, 300, MaskKind::Scattered), kF32Bound);
}

TEST_F(DeviceTest, MeanPoolReportsWhatItDispatched) {
  OpInfo info;
  run_pool(ctx(), 2, 8, 512, MaskKind::Tail, 0, &info);
  EXPECT_EQ(info.op, "mean_pool");
  EXPECT_EQ(info.variant, "default");
  EXPECT_EQ(info.bytes, 2.0 * 8 * 512 * 4 + 2 * 8 * 4 + 2 * 512 * 4);
}

TEST_F(DeviceTest, MeanPoolRejectsBadArguments) {
  Tensor x = ctx().tensor({2, 4, 8}), out = ctx().tensor({2, 8}), x2 = ctx().tensor({8, 8});
  Tensor m = ctx().tensor_i32({2, 4}, std::vector<int32_t>(8)), m3 = ctx().tensor_i32({2, 3}, std::vector<int32_t>(6));
  Tensor mf = ctx().tensor({2, 4}), out7 = ctx().tensor({2, 7});
  Recorder rec(ctx());
  auto expect = [&](MeanPoolArgs a, const char* needle) { expect_error([&] { mean_pool(rec, a); }, needle); };
  expect({&x2, nullptr, 0, &out}, "x");
  expect({&x, &m3, 0, &out}, "key_padding");
  expect({&x, &m, 3, &out}, "key_padding");
  expect({&x, &mf, 0, &out}, "key_padding");
  expect({&x, &m, 0, &out7}, "out");
  expect({&x, &m, 0, nullptr}, "out");
  expect({&x, &m, 0, &out, "fast"}, "variant");
  EXPECT_EQ(rec.dispatches(), 0u);
}

// A NaN in an unmasked row makes its column NaN in every mode that reads it, as
// torch's sum and max do; a NaN in a masked row is never read (issue 29).
TEST_F(DeviceTest, MeanPoolPropagatesNan) {
  const uint32_t batch = 2, len = 5, d = 9;
  for (PoolMode mode : {PoolMode::Mean, PoolMode::MeanSqrtLen, PoolMode::Max}) {
    auto x = random_vector(size_t(batch) * len * d, 3, -2.f, 2.f);
    std::vector<int32_t> mask(size_t(batch) * len, 0);
    mask[4] = 1;                                       // sequence 0, row 4 masked
    x[(size_t(0) * len + 2) * d + 3] = std::nanf("");  // sequence 0, row 2, column 3
    x[(size_t(0) * len + 4) * d + 5] = std::nanf("");  // masked: never read
    x[(size_t(1) * len + 0) * d + 7] = std::nanf("");  // sequence 1, row 0 (the max's first value), column 7
    Tensor tx = ctx().tensor({int64_t(batch), int64_t(len), int64_t(d)}, x);
    Tensor tm = ctx().tensor_i32({int64_t(batch), int64_t(len)}, mask);
    Tensor to = ctx().tensor({int64_t(batch), int64_t(d)});
    Recorder rec(ctx());
    MeanPoolArgs a;
    a.x = &tx;
    a.key_padding = &tm;
    a.out = &to;
    a.mode = mode;
    mean_pool(rec, a);
    ctx().submit(rec);
    auto got = ctx().read(to);
    for (uint32_t b = 0; b < batch; ++b)
      for (uint32_t c = 0; c < d; ++c)
        EXPECT_EQ(std::isnan(got[b * d + c]), (b == 0 && c == 3) || (b == 1 && c == 7))
            << "mode " << int(mode) << " sequence " << b << " column " << c;
  }
}

}  // namespace vkf::test
