// Token embedding lookup with scale and positional encodings:
// shaders/embedding.comp, reference in src/reference/embedding.cpp.
//
// The table and the positions are each f32 or f16, independently (four shader
// variants, named embedding_<table>_<positions>): a model's f16 table can be
// combined with f32 sinusoidal positions, which lose ~1e-3 in f16.
//
// position_ids gives each token its own position: a batch of prompts of
// unequal length continues each at its own position. The host cannot see the
// values when recording, so the device clamps them into [0, max_positions).
#include <cmath>

#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "push/embedding.h"

namespace vkf {

OpInfo embedding(Recorder& rec, const EmbeddingArgs& a) {
  const auto [r, caps, op] = start_op(rec, "embedding");
  require_tensor(a.ids, op, "ids", DType::I32);
  VKF_REQUIRE(a.ids->shape().size() == 2, op, "ids " + a.ids->describe() + " must be [batch, len]");
  require_matrix(a.table, op, "table", caps);
  VKF_REQUIRE(a.table->shape().size() == 2, op, "table " + a.table->describe() + " must be [vocab, d]");
  const uint64_t batch = uint64_t(a.ids->dim(0)), len = uint64_t(a.ids->dim(1));
  const uint64_t vocab = uint64_t(a.table->dim(0)), d = uint64_t(a.table->dim(1));
  if (a.positions) {
    require_weight(a.positions, op, "positions", caps);
    VKF_REQUIRE(a.positions->shape().size() == 2 && uint64_t(a.positions->dim(1)) == d, op,
                "positions " + a.positions->describe() + " must be [max_positions, " + std::to_string(d) +
                    "] (d of the table)");
    const uint64_t max_pos = uint64_t(a.positions->dim(0));
    VKF_REQUIRE(max_pos < (1ull << 31), op, "positions has more than 2^31 rows");
    VKF_REQUIRE(a.position_ids || uint64_t(a.pos_offset) + len <= max_pos, op,
                "pos_offset " + std::to_string(a.pos_offset) + " + len " + std::to_string(len) +
                    " exceeds the " + std::to_string(max_pos) + " positions of positions " +
                    a.positions->describe());
    VKF_REQUIRE(!tensors_overlap(a.out, a.positions), op, "out must not alias positions");
  }
  if (a.position_ids) {
    VKF_REQUIRE(a.positions, op, "position_ids needs positions (a table to index)");
    require_tensor(a.position_ids, op, "position_ids", DType::I32);
    VKF_REQUIRE(a.position_ids->shape() == a.ids->shape(), op,
                "position_ids " + a.position_ids->describe() + " must be [" + std::to_string(batch) + ", " +
                    std::to_string(len) + "] i32 (the shape of ids)");
  }
  require_tensor(a.out, op, "out", DType::F32);
  const std::vector<int64_t> out_shape{int64_t(batch), int64_t(len), int64_t(d)};
  VKF_REQUIRE(a.out->shape() == out_shape, op,
              "out " + a.out->describe() + " must be [" + std::to_string(batch) + ", " + std::to_string(len) +
                  ", " + std::to_string(d) + "] f32 ([batch, len] of ids, d of the table)");
  VKF_REQUIRE(!tensors_overlap(a.out, a.table) && !tensors_overlap(a.out, a.ids) &&
                  !tensors_overlap(a.out, a.position_ids),
              op, "out must not alias table, ids or position_ids");
  VKF_REQUIRE(std::isfinite(a.scale), op, "scale must be finite");
  VKF_REQUIRE(a.variant.empty() || a.variant == "default", op, "unknown variant \"" + a.variant + "\" (default)");
  const uint64_t rows = batch * len;
  VKF_REQUIRE(rows * d < (1ull << 32) && vocab * d < (1ull << 32) &&
                  (!a.positions || uint64_t(a.positions->numel()) < (1ull << 32)),
              op, "a tensor has more than 2^32 elements");
  VKF_REQUIRE(vocab < (1ull << 31), op, "table has more than 2^31 rows");

  // As in layernorm: lavapipe likes many vec4 per invocation, GPUs wide groups.
  const bool cpu = caps.device_type == "cpu";
  const uint64_t d4 = (d + 3) / 4;
  const uint32_t sg = std::max(1u, caps.subgroup_size);
  const uint32_t target = cpu ? 16 : 2, max_wg = cpu ? 64 : 256;
  const uint32_t wg = workgroup_size(caps, std::max(sg, std::min(ceil_div(ceil_div(d4, target), sg) * sg, max_wg)));
  const uint32_t items = std::min<uint32_t>(ceil_div(d4, wg), target);
  const uint32_t per_row = ceil_div(d4, uint64_t(wg) * items);
  const uint32_t aligned = d % 4 == 0;

  // TABLE_POSITIONS, the formats of the two tables (without positions, the token table's twice).
  // A block table without positions: "_f32", a variant that never reads them.
  const bool block = is_block_dtype(a.table->dtype());
  const std::string variant = weight_format_name(weight_format(a.table)) +
                              (a.positions ? weight_suffix(a.positions) : block ? "_f32" : weight_suffix(a.table));
  const Pipeline& p = r.pipeline("embedding_" + variant, {wg, items, aligned});
  EmbeddingPush push{uint32_t(rows),
                     uint32_t(len),
                     uint32_t(d),
                     uint32_t(d4),
                     uint32_t(vocab),
                     a.pos_offset,
                     a.positions ? 1u : 0u,
                     per_row,
                     a.scale,
                     a.position_ids ? 1u : 0u,
                     a.positions ? uint32_t(a.positions->dim(0)) : 0u,
                     0,
                     uint32_t(vocab),
                     0};
  // A table larger than one binding (a big vocabulary under a small
  // maxStorageBufferRange) is bound in blocks of rows, one dispatch each; a
  // token is written by the dispatch whose block holds its id.
  const uint64_t room = caps.max_storage_buffer_range > slice_align(caps)
                            ? caps.max_storage_buffer_range - slice_align(caps) : 0;
  const uint64_t row_bytes = dtype_bytes(a.table->dtype(), d);
  // A block table is bound whole (require_matrix checked that it fits).
  const uint64_t rows_per = block || a.table->bytes() <= caps.max_storage_buffer_range ? vocab : room / row_bytes;
  VKF_REQUIRE(rows_per >= 1, op, "a table row of d = " + std::to_string(d) + " does not fit maxStorageBufferRange (" +
                                  std::to_string(caps.max_storage_buffer_range) + " bytes, profile " + caps.profile + ")");
  const Tensor* pos_ids = a.position_ids ? a.position_ids : a.ids;  // unread when absent
  for (uint64_t v0 = 0; v0 < vocab; v0 += rows_per) {
    const uint64_t v1 = std::min(vocab, v0 + rows_per);
    const Slice ts = slice(a.table, false, v0 * d, v1 * d, caps);
    const Use pos = a.positions ? Use{a.positions, false} : ts.use;  // unread when absent
    push.v0 = uint32_t(v0);
    push.v1 = uint32_t(v1);
    push.t_off = ts.elem_off;
    r.dispatch(p, {{a.ids, false}, ts.use, pos, {a.out, true}, {pos_ids, false}}, push,
               r.fold(rows * per_row), "embedding/" + variant);
  }
  const double n = double(rows * d);
  const double in_bytes = n * (double(row_bytes) / double(d) + (a.positions ? dtype_size(a.positions->dtype()) : 0)) +
                          (a.position_ids ? double(rows) * 4 : 0);
  return {op,
          variant,
          {{"WG", wg}, {"ITEMS", items}, {"ALIGNED", aligned}},
          n * (a.positions ? 2 : 1),
          in_bytes + n * 4 + double(rows) * 4};
}

std::vector<float> sinusoidal_table(uint32_t max_positions, uint32_t d) {
  std::vector<float> t(size_t(max_positions) * d);
  for (uint32_t pos = 0; pos < max_positions; ++pos)
    for (uint32_t c = 0; c < d; ++c) {
      // Columns 2i and 2i+1 share the frequency 1/10000^(2i/d); an odd d ends on a sine.
      const double angle = double(pos) / std::pow(10000.0, double(c - c % 2) / double(d));
      t[size_t(pos) * d + c] = float(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  return t;
}

std::vector<float> halves_sinusoidal_table(uint32_t max_positions, uint32_t d) {
  std::vector<float> t(size_t(max_positions) * d);
  const uint32_t h = (d + 1) / 2;  // HF's sentinel: an odd d has one more sine than cosines
  for (uint32_t pos = 0; pos < max_positions; ++pos)
    for (uint32_t c = 0; c < d; ++c) {
      const uint32_t i = c < h ? c : c - h;
      const double angle = double(pos) / std::pow(10000.0, double(2 * i) / double(d));
      t[size_t(pos) * d + c] = float(c < h ? std::sin(angle) : std::cos(angle));
    }
  return t;
}

}  // namespace vkf

namespace vkf {

std::vector<float> concat_sinusoidal_table(uint32_t max_positions, const std::vector<float>& freqs) {
  const size_t n = freqs.size(), d = 2 * n;
  std::vector<float> t(size_t(max_positions) * d);
  for (uint32_t pos = 0; pos < max_positions; ++pos)
    for (size_t i = 0; i < n; ++i) {
      const float angle = float(pos) * freqs[i];  // rounded to fp32, as in the TF graph
      t[pos * d + i] = float(std::sin(double(angle)));
      t[pos * d + n + i] = float(std::cos(double(angle)));
    }
  return t;
}

// ---- descriptor ----

namespace {

// vocab = n, d = k, q_len tokens per sequence, sinusoidal positions stored
// like the table, scaled by √d as scale_embeddings models do.
OpCase embedding_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const uint32_t vocab = uint32_t(o.n), d = uint32_t(o.k), len = o.q_len;
  // A block-format table: random blocks (cases::weight_tensor), f32 positions.
  const auto stored = cases::weight_tensor(ctx, *D, {vocab, d}, cases::random_vector(size_t(vocab) * d, 31), o.dtype, 31);
  const std::vector<float>* table = stored.first;
  const DType pos_dtype = is_block_dtype(o.dtype) ? DType::F32 : o.dtype;
  const auto* pos = &D->h(cases::as_stored(sinusoidal_table(len, d), pos_dtype));
  std::mt19937 g(32);
  D->ids.resize(size_t(o.batch) * len);
  for (auto& id : D->ids) id = int32_t(g() % vocab);
  const EmbeddingArgs a{&D->t(ctx.tensor_i32({o.batch, len}, D->ids)), stored.second,
                        &D->t(ctx.tensor({len, d}, *pos, pos_dtype)), 0, nullptr, std::sqrt(float(d)),
                        &D->t(ctx.tensor({o.batch, len, d})), ""};
  const auto* ids = &D->ids;
  return cases::make(D, "B=" + std::to_string(o.batch) + " L=" + std::to_string(len) + " vocab=" +
                            std::to_string(vocab) + " d=" + std::to_string(d) + " " + dtype_name(o.dtype),
                     cases::recording(embedding, a), cases::against(ctx, *a.out, [=] {
                       return ref::embedding(*ids, o.batch, len, *table, d, pos, 0, a.scale);
                     }));
}

}  // namespace

// Standard shape: a 32000-token vocabulary of width 768, 128 tokens.
VKF_OP_DESCRIPTOR(embedding) {
  OpShape s;
  s.n = 32000, s.k = 768, s.q_len = 128;
  return {"embedding", "out[b, i] = table[ids[b, i]]·scale + positions[i] (n: vocab, k: d, q_len: tokens; dtype: tables)",
          {"default"}, {"WG", "ITEMS", "ALIGNED"}, {"batch", "q_len", "k"}, {s}, embedding_case,
          [](const OpShape& o) { return std::to_string(o.batch * o.q_len) + "x" + std::to_string(o.k); }};
}

}  // namespace vkf
