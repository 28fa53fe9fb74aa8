// copy_rows: a table of sizes, KV-cache appends, beam gathers, column offsets
// and strides, grid folding and argument checks, with f32 and f16 on either
// side. A copy is exact, so every check asks for zero error, except f32 → f16,
// which rounds: within one fp16 ulp of the largest value (2⁻¹⁰; Vulkan lets
// the conversion round to nearest or towards zero; the reference rounds to
// nearest even).
#include <cstring>
#include <limits>
#include <numeric>

#include "op_test.hpp"

namespace vkf::test {
namespace {

size_t numel(const std::vector<int64_t>& s) {
  return size_t(std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<int64_t>()));
}

struct Copied {
  std::vector<float> src, before, got, want;
  OpInfo info;
};

// Copies from a random src into a random dst (so untouched elements are
// checked too), stored as `st` and `dt`; `a` gives everything but the tensors.
Copied run_copy(Context& ctx, const std::vector<int64_t>& src_shape, const std::vector<int64_t>& dst_shape,
                CopyRowsArgs a, const std::vector<int32_t>* index = nullptr, DType st = DType::F32,
                DType dt = DType::F32) {
  Copied c;
  c.src = as_stored(random_vector(numel(src_shape), uint32_t(numel(src_shape)) + a.width), st);
  c.before = as_stored(random_vector(numel(dst_shape), uint32_t(numel(dst_shape)) + 7, 2.f, 3.f), dt);
  Tensor ts = ctx.tensor(src_shape, c.src, st), td = ctx.tensor(dst_shape, c.before, dt), ti;
  if (index) ti = ctx.tensor_i32({int64_t(index->size())}, *index);
  a.src = &ts;
  a.dst = &td;
  a.index = index ? &ti : nullptr;
  Recorder rec(ctx);
  c.info = copy_rows(rec, a);
  ctx.submit(rec);
  c.got = ctx.read(td);
  c.want = ref::copy_rows(c.src, c.before, a, index);
  return c;
}

double error(const Copied& c) { return ref::max_rel_error(c.got, std::vector<double>(c.want.begin(), c.want.end())); }

}  // namespace

// The registered case appends q_len rows of width n to a cache of kv_len rows,
// gathering batches in reverse: width 1, odd (scalar) and vec4, narrow rows
// (several per workgroup), wide rows (several workgroups per row), one row, and
// contiguous blocks (one long row: kv_len = q_len); then into an fp16 cache
// (f32 → f16; odd widths put two rows, and two lanes, in one 32-bit word of
// the packed path), which the harness also runs packed.
VKF_OP_SHAPES(copy_rows, {"batch=1,q_len=1,kv_len=1,n=1", "batch=2,q_len=1,kv_len=4,n=7",
                          "batch=3,q_len=37,kv_len=40,n=3", "batch=2,q_len=100,kv_len=101,n=5",
                          "batch=2,q_len=9,kv_len=9,n=33", "batch=1,q_len=3,kv_len=4,n=1000",
                          "batch=2,q_len=2,kv_len=3,n=1001", "batch=4,q_len=1,kv_len=1,n=12",
                          "batch=2,q_len=50,kv_len=50,n=16", "batch=2,q_len=2,kv_len=2,n=6",
                          "batch=1,q_len=1,kv_len=1,n=1,dtype=f16", "batch=2,q_len=1,kv_len=4,n=7,dtype=f16",
                          "batch=3,q_len=37,kv_len=40,n=3,dtype=f16", "batch=2,q_len=9,kv_len=9,n=33,dtype=f16",
                          "batch=2,q_len=2,kv_len=3,n=1001,dtype=f16", "batch=4,q_len=1,kv_len=1,n=12,dtype=f16",
                          "batch=2,q_len=50,kv_len=50,n=16,dtype=f16", "batch=2,q_len=2,kv_len=2,n=6,dtype=f16"});

// A decoder step: K and V of the new token, columns [d, 3d) of a packed QKV
// projection [B, 1, 3d], go to row t of a [B, max_len, 2d] cache.
TEST_F(DeviceTest, CopyRowsAppendsToAKvCache) {
  struct Case { uint32_t batch, d, max_len, t, len; };
  // aligned (vec4), odd d (scalar), the last row, and a whole prompt of 5 rows.
  for (Case s : {Case{3, 24, 7, 4, 1}, Case{2, 5, 6, 0, 1}, Case{1, 64, 9, 8, 1}, Case{2, 12, 8, 0, 5},
                 Case{3, 7, 10, 2, 5}}) {
    SCOPED_TRACE("batch " + std::to_string(s.batch) + " d " + std::to_string(s.d) + " t " +
                 std::to_string(s.t) + " len " + std::to_string(s.len));
    CopyRowsArgs a;
    a.src_col = s.d;
    a.dst_row0 = s.t;
    a.batch = s.batch;
    a.rows = s.len;
    a.width = 2 * s.d;
    Copied c = run_copy(ctx(), {s.batch, s.len, 3 * s.d}, {s.batch, s.max_len, 2 * s.d}, a);
    EXPECT_EQ(error(c), 0.0);
    EXPECT_EQ(c.info.spec[3].second, s.d % 4 == 0 ? 1u : 0u) << "ALIGNED";  // src_col = d, strides 3d and 2d
    // Spelled out for the first batch, independently of the reference.
    for (uint32_t i = 0; i < s.len; ++i)
      for (uint32_t col = 0; col < 2 * s.d; ++col)
        ASSERT_EQ(c.got[(size_t(s.t) + i) * 2 * s.d + col], c.src[size_t(i) * 3 * s.d + s.d + col]);
    EXPECT_EQ(c.info.bytes, 8.0 * s.batch * s.len * 2 * s.d);
  }
}

// Beam search: dst cache b becomes src cache index[b].
TEST_F(DeviceTest, CopyRowsGathersBeams) {
  const uint32_t beams = 4, max_len = 6, d = 12;
  const std::vector<int64_t> cache{beams, max_len, 2 * d};
  const std::vector<std::vector<int32_t>> indices{{2, 2, 0, 3}, {0, 1, 2, 3}, {3, 3, 3, 3}, {1, 0, 3, 2}};
  for (const auto& index : indices) {
    SCOPED_TRACE("index " + std::to_string(index[0]) + std::to_string(index[1]) + std::to_string(index[2]) +
                 std::to_string(index[3]));
    CopyRowsArgs a;
    a.batch = beams;
    a.width = 2 * d;
    for (uint32_t rows : {max_len, 3u}) {  // the whole cache, or the rows filled so far
      a.rows = rows;
      Copied c = run_copy(ctx(), cache, cache, a, &index);
      EXPECT_EQ(error(c), 0.0);
      for (uint32_t b = 0; b < beams; ++b)
        ASSERT_EQ(c.got[size_t(b) * max_len * 2 * d + 2 * d * (rows - 1) + 5],
                  c.src[size_t(index[b]) * max_len * 2 * d + 2 * d * (rows - 1) + 5]);
    }
    // Only V (columns [d, 2d)), rows 1..4: rows are not contiguous, nothing collapses.
    a.src_col = a.dst_col = d;
    a.src_row0 = a.dst_row0 = 1;
    a.rows = 4;
    a.width = d;
    EXPECT_EQ(error(run_copy(ctx(), cache, cache, a, &index)), 0.0);
  }
}

// Index values the host cannot check are clamped into the batches of src; a
// smaller src can fill a larger dst.
TEST_F(DeviceTest, CopyRowsClampsIndexValues) {
  CopyRowsArgs a;
  a.batch = 5;
  a.rows = 3;
  a.width = 8;
  std::vector<int32_t> index{-5, 7, 1, 0, int32_t(0x7fffffff)};
  Copied c = run_copy(ctx(), {2, 3, 8}, {5, 3, 8}, a, &index);
  EXPECT_EQ(error(c), 0.0);
  EXPECT_EQ(c.got[0], c.src[0]);            // -5 → 0
  EXPECT_EQ(c.got[24], c.src[24]);          // 7 → 1
  EXPECT_EQ(c.got[4 * 24 + 3], c.src[24 + 3]);  // 2^31 − 1 → 1
  // src batches = blocks that fit: rows 1..2 of a [3, 4, 8] src laid out with
  // a batch stride of 40 fit twice (the third would end past element 96).
  a.src_row0 = 1;
  a.rows = 2;
  a.src_batch_stride = 40;
  std::vector<int32_t> far{2, 1, 0, 9, -1};
  EXPECT_EQ(error(run_copy(ctx(), {3, 4, 8}, {5, 3, 8}, a, &far)), 0.0);
}

// What the table's case does not vary: column offsets, first rows, and
// explicit strides into flat tensors.
struct Layout {
  uint32_t batch, rows, width, src_col, dst_col, src_row0, dst_row0;
  std::vector<int64_t> src_shape, dst_shape;
  uint32_t src_row_stride = 0, src_batch_stride = 0, dst_row_stride = 0, dst_batch_stride = 0;
};

std::vector<Layout> layouts() {
  return {
      {2, 1, 7, 3, 1, 0, 2, {2, 1, 11}, {2, 4, 9}},
      {3, 37, 3, 2, 0, 1, 0, {3, 40, 5}, {3, 37, 3}},      // narrow: several rows side by side
      {2, 100, 5, 0, 3, 0, 0, {2, 100, 6}, {2, 101, 9}},
      {2, 9, 33, 1, 0, 0, 0, {2, 9, 34}, {2, 9, 33}},
      {1, 3, 1000, 0, 4, 0, 1, {1, 3, 1000}, {1, 4, 1008}},  // wide, vec4
      {2, 2, 1001, 2, 0, 1, 0, {2, 3, 1003}, {2, 2, 1001}},  // wide, scalar
      // explicit strides into flat tensors, batch strides past the default
      {3, 4, 6, 1, 2, 1, 0, {3 * 50}, {3 * 40 + 8}, 10, 50, 9, 40},
      {2, 5, 8, 4, 0, 0, 3, {2 * 72}, {2 * 100}, 12, 72, 8, 100},
  };
}

std::string describe(const Layout& l) {
  return "batch " + std::to_string(l.batch) + " rows " + std::to_string(l.rows) + " width " +
         std::to_string(l.width) + " cols " + std::to_string(l.src_col) + "→" + std::to_string(l.dst_col);
}

double run_layout(Context& ctx, const Layout& l, DType st = DType::F32, DType dt = DType::F32) {
  CopyRowsArgs a;
  a.batch = l.batch;
  a.rows = l.rows;
  a.width = l.width;
  a.src_col = l.src_col;
  a.dst_col = l.dst_col;
  a.src_row0 = l.src_row0;
  a.dst_row0 = l.dst_row0;
  a.src_row_stride = l.src_row_stride;
  a.src_batch_stride = l.src_batch_stride;
  a.dst_row_stride = l.dst_row_stride;
  a.dst_batch_stride = l.dst_batch_stride;
  return error(run_copy(ctx, l.src_shape, l.dst_shape, a, nullptr, st, dt));
}

// With the device's own workgroup sizes and as for a discrete GPU (wide groups, few units per lane).
TEST_F(DeviceTest, CopyRowsLayouts) {
  for (const char* sizes : {"native", "gpu"}) {
    ScopedCaps caps(ctx());
    if (std::string(sizes) == "gpu") caps->device_type = "discrete";
    for (const Layout& l : layouts()) {
      SCOPED_TRACE(std::string(sizes) + " sizes, " + describe(l));
      EXPECT_EQ(run_layout(ctx(), l), 0.0);
    }
  }
}

TEST_F(DeviceTest, CopyRowsFoldsTheGrid) {
  ScopedCaps caps(ctx());
  caps->max_workgroup_count[0] = 4;
  caps->max_workgroup_count[1] = 3;
  EXPECT_EQ(run_layout(ctx(), {5, 300, 3, 0, 1, 0, 0, {5, 300, 3}, {5, 301, 4}}), 0.0);  // 50 groups: x, y and z
  EXPECT_EQ(run_layout(ctx(), {3, 2, 1001, 2, 0, 1, 0, {3, 3, 1003}, {3, 2, 1001}}), 0.0);
}

// fp16 on either side: f32 → f16 (an fp16 KV cache's append), f16 → f16
// (slot copies, beam reordering) and f16 → f32, through every layout, a KV
// append with odd widths and a beam gather; with the device's sizes, as for a
// discrete GPU, and packed (32-bit words of two halves, written by atomics
// where a word is shared) when the device has 16-bit storage to compare with.
TEST_F(DeviceTest, CopyRowsFp16EitherSide) {
  if (!has_f16()) GTEST_SKIP() << "the device (profile) stores no fp16 tensors";
  const DType F32 = DType::F32, F16 = DType::F16;
  const std::vector<std::pair<DType, DType>> pairs{{F32, F16}, {F16, F16}, {F16, F32}};
  for (const char* sizes : {"native", "gpu", "packed"}) {
    ScopedCaps caps(ctx());
    if (std::string(sizes) == "gpu") caps->device_type = "discrete";
    if (std::string(sizes) == "packed") {
      if (!caps->storage_16bit || !caps->f16_packed) continue;
      caps->storage_16bit = false;
    }
    for (const auto& [st, dt] : pairs) {
      const std::string formats = std::string("_") + dtype_name(st) + "_" + dtype_name(dt);
      const double bound = st == F32 ? 0x1p-10 : 0.0;
      SCOPED_TRACE(std::string(sizes) + " sizes, " + formats);
      for (const Layout& l : layouts()) {
        SCOPED_TRACE(describe(l));
        EXPECT_LE(run_layout(ctx(), l, st, dt), bound);
      }
      // A decoder step's K/V append, odd and aligned d, one row and a prompt of 5.
      for (uint32_t d : {5u, 12u}) {
        for (uint32_t len : {1u, 5u}) {
          CopyRowsArgs a;
          a.src_col = d;
          a.dst_row0 = 2;
          a.batch = 3;
          a.rows = len;
          a.width = 2 * d;
          const Copied c = run_copy(ctx(), {3, len, 3 * d}, {3, 9, 2 * d}, a, nullptr, st, dt);
          EXPECT_LE(error(c), bound) << "d " << d << " len " << len;
          EXPECT_NE(c.info.spec.size(), 0u);
          EXPECT_EQ(c.info.bytes, double(dtype_size(st) + dtype_size(dt)) * 3 * len * 2 * d);
        }
      }
      // Beam gathers, the whole cache and only V of rows 1..4 (odd column offset).
      const std::vector<int32_t> index{2, 2, 0, 3};
      for (uint32_t d : {6u, 7u}) {
        CopyRowsArgs a;
        a.batch = 4;
        a.rows = 6;
        a.width = 2 * d;
        EXPECT_LE(error(run_copy(ctx(), {4, 6, 2 * d}, {4, 6, 2 * d}, a, &index, st, dt)), bound);
        a.src_col = a.dst_col = d;
        a.src_row0 = a.dst_row0 = 1;
        a.rows = 4;
        a.width = d;
        EXPECT_LE(error(run_copy(ctx(), {4, 6, 2 * d}, {4, 6, 2 * d}, a, &index, st, dt)), bound);
      }
    }
  }
}

// f16 → f16 copies the halves themselves: signed zeros, subnormals, infinities
// and the largest finite value come through unchanged (natively and packed).
TEST_F(DeviceTest, CopyRowsFp16CopiesBits) {
  if (!has_f16()) GTEST_SKIP() << "the device (profile) stores no fp16 tensors";
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> v{-0.0f, 0.0f, 0x1p-24f, -0x1p-24f, 0x1.ff8p-15f, 65504.0f, -65504.0f, inf, -inf};
  for (bool packed : {false, true}) {
    ScopedCaps caps(ctx());
    if (packed) {
      if (!caps->storage_16bit || !caps->f16_packed) continue;
      caps->storage_16bit = false;
    }
    Tensor src = ctx().tensor({1, 1, 9}, v, DType::F16), dst = ctx().tensor({1, 2, 9}, DType::F16);
    Recorder rec(ctx());
    CopyRowsArgs a;
    a.src = &src;
    a.dst = &dst;
    a.dst_row0 = 1;
    a.width = 9;
    copy_rows(rec, a);
    ctx().submit(rec);
    const std::vector<float> got = ctx().read(dst);
    for (size_t i = 0; i < v.size(); ++i)
      EXPECT_EQ(std::memcmp(&got[9 + i], &v[i], 4), 0) << (packed ? "packed " : "") << "element " << i << ": "
                                                       << got[9 + i] << " for " << v[i];
  }
}

// rows = 0 is an empty copy: checked, nothing recorded, no cost.
TEST_F(DeviceTest, CopyRowsOfZeroRowsRecordsNothing) {
  Tensor src = ctx().tensor({2, 3, 8}), dst = ctx().tensor({2, 3, 8});
  Recorder rec(ctx());
  CopyRowsArgs a;
  a.src = &src;
  a.dst = &dst;
  a.batch = 2;
  a.rows = 0;
  a.width = 8;
  OpInfo info = copy_rows(rec, a);
  EXPECT_EQ(rec.dispatches(), 0u);
  EXPECT_EQ(info.bytes, 0.0);
  a.width = 9;  // still checked
  EXPECT_THROW(copy_rows(rec, a), Error);
}

TEST_F(DeviceTest, CopyRowsRejectsBadArguments) {
  Tensor src = ctx().tensor({2, 3, 8}), dst = ctx().tensor({2, 4, 8}), flat = ctx().tensor({10});
  Tensor half = has_f16() ? ctx().tensor({2, 3, 8}, DType::F16) : Tensor();
  Tensor idx = ctx().tensor_i32({2}, {0, 1}), idx3 = ctx().tensor_i32({3}, {0, 1, 0});
  Tensor fidx = ctx().tensor({2});
  Recorder rec(ctx());
  CopyRowsArgs ok;
  ok.src = &src;
  ok.dst = &dst;
  ok.batch = 2;
  ok.rows = 3;
  ok.width = 8;
  auto bad = [&](auto change, const char* needle) {
    CopyRowsArgs a = ok;
    change(a);
    expect_error([&] { copy_rows(rec, a); }, needle);
  };
  bad([](CopyRowsArgs& a) { a.src = nullptr; }, "src is missing");
  bad([&](CopyRowsArgs& a) { a.dst = &idx; }, "dst");
  bad([&](CopyRowsArgs& a) { a.src = &idx; }, "src [2] i32 must be f32 or f16");
  if (has_f16()) bad([&](CopyRowsArgs& a) { a.dst = &half; a.dst_row0 = 1; }, "dst [2, 3, 8] f16 is too small");
  bad([](CopyRowsArgs& a) { a.width = 0; }, "width");
  bad([](CopyRowsArgs& a) { a.batch = 0; }, "batch");
  bad([](CopyRowsArgs& a) { a.src_col = 1; }, "src columns [1, 9)");
  bad([](CopyRowsArgs& a) { a.dst_col = 4; a.width = 5; }, "dst columns [4, 9)");
  bad([](CopyRowsArgs& a) { a.rows = 7; }, "src [2, 3, 8] f32 is too small");
  bad([](CopyRowsArgs& a) { a.rows = 4; }, "src [2, 3, 8] f32 has room for 1 batch");
  bad([](CopyRowsArgs& a) { a.dst_row0 = 2; }, "dst [2, 4, 8] f32 is too small");
  bad([](CopyRowsArgs& a) { a.batch = 3; }, "fewer than batch = 3");
  bad([](CopyRowsArgs& a) { a.dst_batch_stride = 16; }, "batches would overlap");
  bad([&](CopyRowsArgs& a) { a.dst = &src; }, "dst must not overlap src");
  bad([&](CopyRowsArgs& a) { a.src = &flat; a.rows = 1; a.width = 2; }, "batch_stride or at least 2 dimensions");
  bad([&](CopyRowsArgs& a) { a.index = &idx3; }, "index [3] i32 must hold batch = 2");
  bad([&](CopyRowsArgs& a) { a.index = &fidx; }, "index");
  bad([](CopyRowsArgs& a) { a.variant = "fast"; }, "variant");
  if (has_f16()) {  // without fp16 tensors (the no-fp16 profile) an f16 side is refused by name
    ScopedCaps caps(ctx());
    caps->storage_16bit = caps->f16_packed = false;
    bad([&](CopyRowsArgs& a) { a.dst = &half; }, "dst is f16 but the device (or its profile) has no 16-bit storage");
    bad([&](CopyRowsArgs& a) { a.src = &half; }, "src is f16 but the device");
  }
  EXPECT_EQ(rec.dispatches(), 0u);
  CopyRowsArgs with_index = ok;
  with_index.index = &idx;
  EXPECT_NO_THROW(copy_rows(rec, with_index));
  ok.src_row0 = 0;
  ok.dst_row0 = 1;  // rows 1..3 of a 4-row dst
  EXPECT_NO_THROW(copy_rows(rec, ok));
  EXPECT_EQ(rec.dispatches(), 2u);
  ctx().submit(rec);
}

}  // namespace vkf::test
