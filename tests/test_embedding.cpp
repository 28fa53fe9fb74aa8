// vkf::embedding: a table of shapes; positions none, learned, stored unlike the
// table and offset; position ids; clamped ids; folding; bad arguments.
#include <cmath>
#include <cstdio>
#include <tuple>

#include "op_test.hpp"

namespace vkf::test {
namespace {

enum class Pos { None, Learned, Sinusoidal };

struct EmbCase {
  uint32_t batch, len, d, vocab;
  DType table_dtype, pos_dtype;
  Pos pos;
  uint32_t pos_offset = 0;
  std::vector<int32_t> ids = {};  // empty: random ids in [0, vocab) with some padding (id 0)
};

double run_embedding(Context& ctx, const EmbCase& c, OpInfo* info = nullptr) {
  const uint32_t max_pos = c.pos_offset + c.len + 2;
  std::vector<int32_t> ids = c.ids;
  if (ids.empty()) {
    auto u = random_vector(size_t(c.batch) * c.len, c.d + c.len, 0.f, float(c.vocab));
    for (float v : u) ids.push_back(std::min(int32_t(v), int32_t(c.vocab) - 1));
    for (uint32_t b = 0; b < c.batch; ++b) ids[size_t(b) * c.len + c.len - 1] = 0;  // padded tail
  }
  auto table = as_stored(random_vector(size_t(c.vocab) * c.d, c.vocab + c.d), c.table_dtype);
  std::vector<float> pos = c.pos == Pos::Learned ? random_vector(size_t(max_pos) * c.d, 99)
                                                 : sinusoidal_table(max_pos, c.d);
  pos = as_stored(pos, c.pos_dtype);
  Tensor tids = ctx.tensor_i32({c.batch, c.len}, ids);
  Tensor ttable = ctx.tensor({c.vocab, c.d}, table, c.table_dtype);
  Tensor tpos = ctx.tensor({max_pos, c.d}, pos, c.pos_dtype);
  Tensor tout = ctx.tensor({c.batch, c.len, c.d});
  const float scale = std::sqrt(float(c.d));
  Recorder rec(ctx);
  EmbeddingArgs a;
  a.ids = &tids;
  a.table = &ttable;
  a.positions = c.pos == Pos::None ? nullptr : &tpos;
  a.pos_offset = c.pos_offset;
  a.scale = scale;
  a.out = &tout;
  OpInfo i = embedding(rec, a);
  if (info) *info = i;
  ctx.submit(rec);
  auto want = ref::embedding(ids, c.batch, c.len, table, c.d, c.pos == Pos::None ? nullptr : &pos,
                             c.pos_offset, scale);
  return ref::max_rel_error(ctx.read(tout), want);
}

}  // namespace

// Lengths and vocabularies from 1, d 1, odd, vec4-aligned and wider than a
// workgroup (scalar and vec4), with a position offset for the tests below.
struct Shape {
  uint32_t batch, len, d, vocab, pos_offset;
};
const std::vector<Shape> kShapes = {{1, 1, 1, 1, 0},      {2, 3, 5, 11, 0},  {3, 7, 64, 50, 4},
                                    {1, 17, 127, 33, 1},  {2, 5, 768, 40, 9}, {5, 3, 1000, 7, 2},
                                    {3, 4, 1001, 9, 0},   {1, 2, 3000, 5, 0}};

std::vector<std::string> table_rows() {
  std::vector<std::string> rows;
  for (const Shape& s : kShapes)
    rows.push_back("batch=" + std::to_string(s.batch) + ",q_len=" + std::to_string(s.len) +
                   ",k=" + std::to_string(s.d) + ",n=" + std::to_string(s.vocab));
  return rows;
}

// The registered case: sinusoidal positions from 0, stored like the table.
// Block-format tables (GGUF's, shaders/lib/quant.glsl): a row of whole blocks
// gathered and dequantized, with f32 positions; d 256 fits every format's block.
std::vector<std::string> embedding_shapes() {
  std::vector<std::string> s = grid({table_rows(), {"dtype=f32", "dtype=f16"}});
  for (const char* f : {"q8_0", "q4_0", "q4_1", "q4_k", "q6_k"})
    s.push_back(std::string("batch=2,q_len=5,n=40,k=") + (std::string(f).back() == 'k' ? "512" : "96") + ",dtype=" + f);
  return s;
}
VKF_OP_SHAPES(embedding, embedding_shapes());

// What the table does not vary: no positions, learned ones, positions stored
// unlike the table (the four shader variants), and a position offset.
class EmbeddingTest : public DeviceTest,
                      public ::testing::WithParamInterface<std::tuple<DType, DType, Pos>> {};

TEST_P(EmbeddingTest, PositionKindsAndStorage) {
  auto [tdt, pdt, pos] = GetParam();
  if ((tdt == DType::F16 || pdt == DType::F16) && !has_f16()) GTEST_SKIP() << "no 16-bit storage";
  for (const Shape& s : kShapes) {
    SCOPED_TRACE("batch " + std::to_string(s.batch) + " len " + std::to_string(s.len) + " d " +
                 std::to_string(s.d) + " pos_offset " + std::to_string(s.pos_offset));
    EXPECT_LE(run_embedding(ctx(), {s.batch, s.len, s.d, s.vocab, tdt, pdt, pos, s.pos_offset}), kF32Bound);
  }
}

std::vector<std::tuple<DType, DType, Pos>> position_kinds() {
  std::vector<std::tuple<DType, DType, Pos>> out;
  for (DType t : weight_dtypes())
    for (DType p : weight_dtypes())
      for (Pos pos : {Pos::None, Pos::Learned, Pos::Sinusoidal})
        if (t != p || pos != Pos::Sinusoidal) out.push_back({t, p, pos});  // else the table's
  return out;
}
INSTANTIATE_TEST_SUITE_P(All, EmbeddingTest, ::testing::ValuesIn(position_kinds()));

// Workgroup sizes as for a discrete GPU: wide groups, several per row.
TEST_F(DeviceTest, EmbeddingWithGpuSizes) {
  ScopedCaps caps(ctx());
  caps->device_type = "discrete";
  OpInfo info;
  EXPECT_LE(run_embedding(ctx(), {2, 5, 768, 40, DType::F32, DType::F32, Pos::Learned, 3}, &info), kF32Bound);
  EXPECT_LE(run_embedding(ctx(), {1, 2, 3000, 5, DType::F32, DType::F32, Pos::None, 0}), kF32Bound);
  EXPECT_GT(info.spec[0].second, ctx().caps().subgroup_size);
}

// Ids outside [0, vocab) must not read outside the table: the device clamps them.
TEST_F(DeviceTest, EmbeddingClampsOutOfRangeIds) {
  std::vector<int32_t> ids = {-1, 0, 6, 7, 1 << 30, -(1 << 30), 3, int32_t(0x7fffffff)};
  double err = run_embedding(ctx(), {2, 4, 12, 7, DType::F32, DType::F32, Pos::Learned, 1, ids});
  EXPECT_LE(err, kF32Bound);
}

TEST_F(DeviceTest, EmbeddingFoldsRowsIntoTheGrid) {
  ScopedCaps caps(ctx());
  caps->max_workgroup_count[0] = 4;
  caps->max_workgroup_count[1] = 3;
  EXPECT_LE(run_embedding(ctx(), {3, 29, 36, 20, DType::F32, DType::F32, Pos::Sinusoidal, 5}), kF32Bound);
}

// Values of PyTorch's usual formula, div_term = exp(arange(0, d, 2)·−ln(10000)/d),
// pe[:, 0::2] = sin(pos·div_term), pe[:, 1::2] = cos(pos·div_term), in float64.
TEST(SinusoidalTable, MatchesThePaper) {
  auto t = sinusoidal_table(101, 8);
  ASSERT_EQ(t.size(), 101u * 8);
  auto at = [&](uint32_t p, uint32_t c) { return double(t[p * 8 + c]); };
  for (uint32_t c = 0; c < 8; ++c) EXPECT_EQ(at(0, c), c % 2 ? 1.0 : 0.0);
  EXPECT_NEAR(at(1, 0), 0.8414709848078965, 1e-7);   // sin(1)
  EXPECT_NEAR(at(1, 1), 0.5403023058681398, 1e-7);   // cos(1)
  EXPECT_NEAR(at(5, 2), 0.4794255386042029, 1e-7);   // sin(5 / 10000^(2/8)) = sin(0.5)
  EXPECT_NEAR(at(5, 3), 0.8775825618903728, 1e-7);   // cos(0.5)
  EXPECT_NEAR(at(100, 6), 0.09983341664682809, 1e-7); // sin(100 / 10000^(6/8)) = sin(0.1)
  EXPECT_NEAR(at(100, 7), 0.9950041652780258, 1e-7);  // cos(0.1)
  // Odd d: the last column is a sine without its cosine.
  auto o = sinusoidal_table(4, 5);
  EXPECT_NEAR(o[3 * 5 + 3], 0.997162035307237, 1e-7);     // cos(3 / 10000^(2/5))
  EXPECT_NEAR(o[3 * 5 + 4], 0.0018928709030918874, 1e-9); // sin(3 / 10000^(4/5))
}

TEST_F(DeviceTest, EmbeddingRejectsBadArguments) {
  Tensor ids = ctx().tensor_i32({2, 3}, std::vector<int32_t>(6)), table = ctx().tensor({10, 8});
  Tensor pos = ctx().tensor({5, 8}), pos7 = ctx().tensor({5, 7}), out = ctx().tensor({2, 3, 8});
  Tensor out_bad = ctx().tensor({2, 4, 8}), fids = ctx().tensor({2, 3}), ids1 = ctx().tensor_i32({6}, std::vector<int32_t>(6));
  Recorder rec(ctx());
  auto expect_error = [&](EmbeddingArgs a, const char* needle) {
    test::expect_error([&] { embedding(rec, a); }, needle);
  };
  expect_error({&fids, &table, nullptr, 0, nullptr, 1.f, &out}, "ids");
  expect_error({&ids1, &table, nullptr, 0, nullptr, 1.f, &out}, "ids");
  expect_error({&ids, &table, &pos7, 0, nullptr, 1.f, &out}, "positions");
  expect_error({&ids, &table, nullptr, 0, nullptr, 1.f, &out_bad}, "out");
  expect_error({&ids, &table, &pos, 3, nullptr, 1.f, &out}, "pos_offset 3 + len 3 exceeds the 5 positions");
  expect_error({&ids, &table, nullptr, 0, nullptr, 1.f, &table}, "out");
  expect_error({&ids, &table, nullptr, 0, nullptr, 1.f, &out, "fancy"}, "variant");
  EXPECT_NO_THROW(embedding(rec, {&ids, &table, &pos, 2, nullptr, 1.f, &out}));  // 2 + 3 ≤ 5
  EXPECT_EQ(rec.dispatches(), 1u);
  ctx().submit(rec);
}

namespace {

// Embeds with explicit position ids; returns the error against ref::embedding_at.
double run_with_position_ids(Context& ctx, uint32_t batch, uint32_t len, uint32_t d, uint32_t vocab,
                             uint32_t max_pos, const std::vector<int32_t>& position_ids, DType table_dtype,
                             DType pos_dtype) {
  std::vector<int32_t> ids(size_t(batch) * len);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 7 + 3) % vocab);
  auto table = as_stored(random_vector(size_t(vocab) * d, vocab + d), table_dtype);
  auto pos = as_stored(random_vector(size_t(max_pos) * d, max_pos + 1), pos_dtype);
  Tensor tids = ctx.tensor_i32({batch, len}, ids), tpids = ctx.tensor_i32({batch, len}, position_ids);
  Tensor ttable = ctx.tensor({vocab, d}, table, table_dtype), tpos = ctx.tensor({max_pos, d}, pos, pos_dtype);
  Tensor tout = ctx.tensor({batch, len, d});
  const float scale = std::sqrt(float(d));
  EmbeddingArgs a;
  a.ids = &tids;
  a.table = &ttable;
  a.positions = &tpos;
  a.pos_offset = 1000;  // unused with position_ids: would fail the pos_offset check otherwise
  a.position_ids = &tpids;
  a.scale = scale;
  a.out = &tout;
  Recorder rec(ctx);
  embedding(rec, a);
  ctx.submit(rec);
  return ref::max_rel_error(ctx.read(tout), ref::embedding_at(ids, batch, len, table, d, pos, position_ids, scale));
}

}  // namespace

// (table dtype, positions dtype)
class EmbeddingPositionIdsTest : public DeviceTest, public ::testing::WithParamInterface<std::tuple<DType, DType>> {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    auto [tdt, pdt] = GetParam();
    if ((tdt == DType::F16 || pdt == DType::F16) && !has_f16()) GTEST_SKIP() << "no 16-bit storage";
  }
};

// Prompts of unequal length continue each at its own position.
TEST_P(EmbeddingPositionIdsTest, GiveEachSequenceItsPositions) {
  auto [tdt, pdt] = GetParam();
  double worst = 0;
  // [[0,1,2],[5,6,7]]: two sequences at different offsets; then one token per
  // sequence (a decoding step), and a vec4-aligned d with a longer batch.
  worst = std::max(worst, run_with_position_ids(ctx(), 2, 3, 12, 20, 8, {0, 1, 2, 5, 6, 7}, tdt, pdt));
  worst = std::max(worst, run_with_position_ids(ctx(), 3, 1, 7, 9, 10, {4, 0, 9}, tdt, pdt));
  worst = std::max(worst, run_with_position_ids(ctx(), 4, 5, 64, 30, 12,
                                                {0, 1, 2, 3, 4, 7, 8, 9, 10, 11, 2, 3, 4, 5, 6, 0, 0, 1, 1, 2},
                                                tdt, pdt));
  EXPECT_LE(worst, kF32Bound);
  std::printf("[ max error ] position_ids, table %s, positions %s: %.3g\n", dtype_name(tdt), dtype_name(pdt),
              worst);
}

INSTANTIATE_TEST_SUITE_P(All, EmbeddingPositionIdsTest,
                         ::testing::Combine(::testing::Values(DType::F32, DType::F16),
                                            ::testing::Values(DType::F32, DType::F16)));

// pos_offset + i written out as position ids gives what pos_offset gives.
TEST_F(DeviceTest, EmbeddingPositionIdsMatchPosOffset) {
  const uint32_t batch = 2, len = 4, d = 20, vocab = 9, max_pos = 10, offset = 3;
  std::vector<int32_t> ids{1, 5, 8, 0, 2, 2, 7, 3}, pids;
  for (uint32_t b = 0; b < batch; ++b)
    for (uint32_t i = 0; i < len; ++i) pids.push_back(int32_t(offset + i));
  auto table = random_vector(size_t(vocab) * d, 5);
  auto pos = sinusoidal_table(max_pos, d);
  Tensor tids = ctx().tensor_i32({batch, len}, ids), tpids = ctx().tensor_i32({batch, len}, pids);
  Tensor ttable = ctx().tensor({vocab, d}, table), tpos = ctx().tensor({max_pos, d}, pos);
  Tensor t1 = ctx().tensor({batch, len, d}), t2 = ctx().tensor({batch, len, d});
  Recorder rec(ctx());
  embedding(rec, {&tids, &ttable, &tpos, offset, nullptr, 2.f, &t1});
  embedding(rec, {&tids, &ttable, &tpos, 0, &tpids, 2.f, &t2});
  ctx().submit(rec);
  EXPECT_EQ(ctx().read(t1), ctx().read(t2));
  EXPECT_LE(ref::max_rel_error(ctx().read(t2), ref::embedding(ids, batch, len, table, d, &pos, offset, 2.0)),
            kF32Bound);
}

// Position ids outside [0, max_positions) must not read outside the table: the device clamps them.
TEST_F(DeviceTest, EmbeddingClampsOutOfRangePositionIds) {
  std::vector<int32_t> pids{-1, 0, 6, 7, 1 << 30, -(1 << 30), 3, int32_t(0x7fffffff)};
  EXPECT_LE(run_with_position_ids(ctx(), 2, 4, 12, 7, 7, pids, DType::F32, DType::F32), kF32Bound);
}

TEST_F(DeviceTest, EmbeddingRejectsBadPositionIds) {
  Tensor ids = ctx().tensor_i32({2, 3}, std::vector<int32_t>(6)), table = ctx().tensor({10, 8});
  Tensor pos = ctx().tensor({5, 8}), out = ctx().tensor({2, 3, 8});
  Tensor pids = ctx().tensor_i32({2, 3}, std::vector<int32_t>(6)), pids_t = ctx().tensor_i32({3, 2}, std::vector<int32_t>(6));
  Tensor pids_flat = ctx().tensor_i32({6}, std::vector<int32_t>(6)), fpids = ctx().tensor({2, 3});
  Recorder rec(ctx());
  auto expect_error = [&](EmbeddingArgs a, const char* needle) {
    test::expect_error([&] { embedding(rec, a); }, needle);
  };
  expect_error({&ids, &table, nullptr, 0, &pids, 1.f, &out}, "position_ids needs positions");
  expect_error({&ids, &table, &pos, 0, &pids_t, 1.f, &out}, "position_ids [3, 2] i32 must be [2, 3]");
  expect_error({&ids, &table, &pos, 0, &pids_flat, 1.f, &out}, "position_ids [6] i32 must be [2, 3]");
  expect_error({&ids, &table, &pos, 0, &fpids, 1.f, &out}, "position_ids [2, 3] f32 must be i32");
  EXPECT_EQ(rec.dispatches(), 0u);
  // pos_offset is unused with position_ids: 4 + 3 > 5 positions is no error.
  EXPECT_NO_THROW(embedding(rec, {&ids, &table, &pos, 4, &pids, 1.f, &out}));
  ctx().submit(rec);
}

}  // namespace vkf::test
