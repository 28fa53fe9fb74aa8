// Row-block copy with an optional batch gather (KV-cache append, beam
// reordering): shaders/copy_rows.comp, reference in src/reference/copy_rows.cpp.
//
// Decisions:
//   - src and dst are each f32 or f16 (a device that can store fp16 tensors,
//     natively or packed): one shader per pair, copy_rows_<src>_<dst>; f32 → f16
//     rounds (an fp16 KV cache's append), f16 → f16 copies the bits;
//   - every element either side touches must lie inside its tensor, and the
//     columns [col, col + width) must fit in a row (row stride), so rows never
//     run into each other; dst batches must not overlap either (else two lanes
//     would write one element);
//   - index values are unknown when recording, so the device clamps them into
//     [0, src batches), src batches = how many batch strides of src hold a whole
//     block of rows; without an index, batch must not exceed src batches;
//   - rows = 0 is an empty copy: arguments are checked, nothing is recorded and
//     the OpInfo has zero cost; batch and width must be ≥ 1.
#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/copy_rows.h"

namespace vkf {
namespace {

struct Side {
  uint64_t row = 0, batch = 0, off = 0, span = 0;  // span: elements from a batch's start to its last one + 1
};

Side resolve(const Tensor* t, uint32_t col, uint32_t row0, uint32_t row_stride, uint32_t batch_stride,
             const CopyRowsArgs& a, const Capabilities& caps, const char* name) {
  const char* op = "copy_rows";
  const std::string n(name);
  require_weight(t, op, name, caps);
  VKF_REQUIRE(batch_stride || t->shape().size() >= 2, op,
              n + " " + t->describe() + " needs a " + n + "_batch_stride or at least 2 dimensions");
  Side s;
  s.row = row_stride ? row_stride : uint64_t(t->dim(-1));
  s.batch = batch_stride ? batch_stride : s.row * uint64_t(t->dim(-2));
  VKF_REQUIRE(s.row >= 1 && s.batch >= 1, op, n + " " + t->describe() + " has a zero stride");
  VKF_REQUIRE(uint64_t(col) + a.width <= s.row, op,
              n + " columns [" + std::to_string(col) + ", " + std::to_string(uint64_t(col) + a.width) +
                  ") (" + n + "_col + width) do not fit in rows of " + std::to_string(s.row) + " elements");
  s.off = uint64_t(row0) * s.row + col;
  s.span = a.rows ? s.off + uint64_t(a.rows - 1) * s.row + a.width : 0;
  VKF_REQUIRE(uint64_t(t->numel()) < (1ull << 32), op, n + " " + t->describe() + " has more than 2^32 elements");
  return s;
}

std::string block(const CopyRowsArgs& a, const Side& s, uint32_t row0, uint32_t col) {
  return std::to_string(a.rows) + " rows from row " + std::to_string(row0) + ", columns [" +
         std::to_string(col) + ", " + std::to_string(uint64_t(col) + a.width) + "), row stride " +
         std::to_string(s.row) + ", batch stride " + std::to_string(s.batch);
}

}  // namespace

OpInfo copy_rows(Recorder& rec, const CopyRowsArgs& a) {
  const auto [r, caps, op] = start_op(rec, "copy_rows");
  VKF_REQUIRE(a.batch >= 1, op, "batch must be at least 1");
  VKF_REQUIRE(a.width >= 1, op, "width must be at least 1");
  const Side src = resolve(a.src, a.src_col, a.src_row0, a.src_row_stride, a.src_batch_stride, a, caps, "src");
  const Side dst = resolve(a.dst, a.dst_col, a.dst_row0, a.dst_row_stride, a.dst_batch_stride, a, caps, "dst");
  VKF_REQUIRE(!tensors_overlap(a.dst, a.src), op, "dst must not overlap src");
  if (a.index) {
    require_tensor(a.index, op, "index", DType::I32);
    VKF_REQUIRE(uint64_t(a.index->numel()) == a.batch, op,
                "index " + a.index->describe() + " must hold batch = " + std::to_string(a.batch) + " values");
    VKF_REQUIRE(!tensors_overlap(a.dst, a.index), op, "dst must not overlap index");
  }
  VKF_REQUIRE(a.variant.empty() || a.variant == "default", op, "unknown variant \"" + a.variant + "\" (default)");
  // Packed (no 16-bit storage), an fp16 dst is written a 32-bit word at a time:
  // an odd count of halves needs the word past its end, which the pool's slots
  // have and a host's buffer (Context::wrap_buffer) may not.
  if (a.dst->dtype() == DType::F16 && !caps.storage_16bit) {
    const Allocation& m = *a.dst->allocation();
    VKF_REQUIRE((m.size + 3) / 4 * 4 <= m.reserved, op,
                "dst " + a.dst->describe() + " is an odd number of fp16 values in a host's buffer, which a device "
                "without 16-bit storage cannot write");
  }

  // Batches of src whose block of rows lies inside src.
  const uint64_t src_n = uint64_t(a.src->numel()), dst_n = uint64_t(a.dst->numel());
  uint64_t src_batches = src.span <= src_n ? (src_n - src.span) / src.batch + 1 : 0;
  src_batches = std::min<uint64_t>(src_batches, 1ull << 31);  // index values are i32
  if (a.rows > 0) {
    VKF_REQUIRE(src_batches >= 1, op, "src " + a.src->describe() + " is too small for " + block(a, src, a.src_row0, a.src_col));
    VKF_REQUIRE(a.index || a.batch <= src_batches, op,
                "src " + a.src->describe() + " has room for " + std::to_string(src_batches) + " batch(es) of " +
                    block(a, src, a.src_row0, a.src_col) + ", fewer than batch = " + std::to_string(a.batch));
    VKF_REQUIRE(uint64_t(a.batch - 1) * dst.batch + dst.span <= dst_n, op,
                "dst " + a.dst->describe() + " is too small for " + std::to_string(a.batch) + " batches of " +
                    block(a, dst, a.dst_row0, a.dst_col));
    VKF_REQUIRE(a.batch == 1 || dst.span - dst.off <= dst.batch, op,
                "dst batch stride " + std::to_string(dst.batch) + " is less than the " +
                    std::to_string(dst.span - dst.off) + " elements of a block: batches would overlap");
  }
  if (a.rows == 0) return {op, "default", {}, 0, 0};

  // Rows that are contiguous on both sides are one long row.
  uint64_t rows = a.rows, width = a.width;
  if (src.row == width && dst.row == width) {
    width *= rows;
    rows = 1;
  }
  // vec4 units when every row either side starts on a multiple of 4 elements.
  const bool aligned = src.off % 4 == 0 && dst.off % 4 == 0 && width % 4 == 0 &&
                       (rows == 1 || (src.row % 4 == 0 && dst.row % 4 == 0)) &&
                       (a.batch == 1 || (src.batch % 4 == 0 && dst.batch % 4 == 0));
  const uint64_t units = aligned ? width / 4 : width;

  // As in embedding: lavapipe wants many units per invocation, GPUs wide groups.
  const bool cpu = caps.device_type == "cpu";
  const uint32_t sg = std::max(1u, caps.subgroup_size);
  const uint32_t target = cpu ? 16 : 2, max_wg = cpu ? 64 : 256;
  const uint32_t wg = workgroup_size(
      caps, std::max<uint64_t>(sg, std::min<uint64_t>(uint64_t(ceil_div(ceil_div(units, target), sg)) * sg, max_wg)));
  uint32_t lpr, rpg, ic, ir;
  if (units >= wg) {  // lanes along a row, then rows per lane with what is left of the target
    lpr = wg;
    rpg = 1;
    ic = std::min<uint32_t>(ceil_div(units, wg), target);
    ir = uint32_t(std::min<uint64_t>(std::max(1u, target / ic), rows));
  } else {  // narrow rows: several rows side by side in a workgroup
    lpr = uint32_t(units);
    rpg = wg / lpr;
    ic = 1;
    ir = std::min(target, ceil_div(rows, rpg));
  }
  const uint64_t segs = ceil_div(units, uint64_t(lpr) * ic);
  const uint64_t gpb = uint64_t(ceil_div(rows, uint64_t(rpg) * ir)) * segs;
  const uint64_t total = gpb * a.batch;
  VKF_REQUIRE(total < (1ull << 32), op, "more than 2^32 workgroups");

  // copy_rows_<src>_<dst>; without 16-bit storage an f16 one runs packed (Pipelines::get).
  const std::string formats = weight_suffix(a.src) + weight_suffix(a.dst);
  const Pipeline& p = r.pipeline("copy_rows" + formats, {wg, ir, ic, uint32_t(aligned)});
  const CopyRowsPush push{uint32_t(src.off), uint32_t(src.row), uint32_t(src.batch), uint32_t(src_batches),
                          uint32_t(dst.off), uint32_t(dst.row), uint32_t(dst.batch), uint32_t(rows),
                          uint32_t(units),   lpr,               rpg,                 uint32_t(segs),
                          uint32_t(gpb),     uint32_t(total),   a.index ? 1u : 0u};
  const Tensor* index = a.index ? a.index : a.src;  // unread when absent
  r.dispatch(p, {{a.src, false}, {index, false}, {a.dst, true}}, push, r.fold(total),
             std::string(aligned ? "copy_rows/vec4" : "copy_rows/scalar") +
                 (formats == "_f32_f32" ? "" : formats));
  const double n = double(a.batch) * double(a.rows) * double(a.width);
  const double elem = double(dtype_size(a.src->dtype()) + dtype_size(a.dst->dtype()));
  return {op,
          "default",
          {{"WG", wg}, {"IR", ir}, {"IC", ic}, {"ALIGNED", uint32_t(aligned)}},
          0,
          n * elem + (a.index ? 4.0 * a.batch : 0)};
}

// ---- descriptor ----

namespace {

// KV-cache append: q_len new rows of width n go after the first kv_len − q_len
// rows of a [batch, max(kv_len, q_len), n] cache, batches gathered in reverse
// order (a beam reorder) through an index. The new rows are f32, the cache is
// stored as dtype: an fp16 cache's values are the rows rounded to fp16, within
// one fp16 ulp (Vulkan lets the conversion round to nearest or towards zero):
// 2⁻¹⁰ of the largest value. fp16 → fp16 is a TEST of tests/test_copy_rows.cpp.
OpCase copy_rows_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const uint32_t width = uint32_t(o.n), rows = o.q_len, len = std::max(o.kv_len, o.q_len);
  const auto* src = &D->h(cases::random_vector(size_t(o.batch) * rows * width, 61));
  const auto* dst = &D->h(cases::as_stored(cases::random_vector(size_t(o.batch) * len * width, 62), o.dtype));
  D->ids.resize(o.batch);
  for (uint32_t b = 0; b < o.batch; ++b) D->ids[b] = int32_t(o.batch - 1 - b);
  CopyRowsArgs a;
  a.src = &D->t(ctx.tensor({o.batch, rows, width}, *src));
  a.dst = &D->t(ctx.tensor({o.batch, len, width}, *dst, o.dtype));
  a.dst_row0 = len - rows;
  a.batch = o.batch;
  a.rows = rows;
  a.width = width;
  a.index = &D->t(ctx.tensor_i32({o.batch}, D->ids));
  const auto* ids = &D->ids;
  const DType dt = o.dtype;
  return cases::make(D, "B=" + std::to_string(o.batch) + " rows=" + std::to_string(rows) + " width=" +
                            std::to_string(width) + " into " + std::to_string(len) + " rows " + dtype_name(dt),
                     cases::recording(copy_rows, a), cases::against(ctx, *a.dst, [=] {
                       const auto w = ref::copy_rows(*src, *dst, a, ids);
                       return std::vector<double>(w.begin(), w.end());
                     }),
                     dt == DType::F16 ? 0x1p-10 : 1e-5);
}

}  // namespace

// Standard shapes: a KV-cache append under beam reorder, into an fp32 and an fp16 cache.
VKF_OP_DESCRIPTOR(copy_rows) {
  OpShape s;
  s.batch = 4, s.q_len = 1, s.kv_len = 128, s.n = 768;
  OpShape h = s;
  h.dtype = DType::F16;
  return {"copy_rows",
          "copies a block of rows between [batch, rows, cols] layouts, f32 or f16 either side, gathering batches by "
          "index (KV-cache append, beam reorder; dtype: dst)",
          {"default"}, {"WG", "IR", "IC", "ALIGNED"}, {"batch", "q_len", "n"}, {s, h}, copy_rows_case};
}

}  // namespace vkf
