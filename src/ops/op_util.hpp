// Small helpers every op uses: argument checks with clear messages, and
// workgroup sizes chosen from the device's limits.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "vk/memory.hpp"
#include "vk/recorder_impl.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/weight_format.hpp"

namespace vkf {

/// What every op starts from: the recorder's inside, the device's
/// (profile-clamped) capabilities, and the op's name for its errors:
///   const auto [r, caps, op] = start_op(rec, "layernorm");
struct OpStart {
  Recorder::Impl& r;
  const Capabilities& caps;
  const char* op;
};
inline OpStart start_op(Recorder& rec, const char* op) {
  Recorder::Impl& r = internals(rec);
  return {r, r.ctx.caps, op};
}

/// Throws vkf::Error("op: what") unless ok. A macro so that `what` is built
/// only on failure: the checks run at every dispatch an op records, hundreds
/// in each decode step, where building their messages cost more than the
/// recording itself.
#define VKF_REQUIRE(ok, op, what) ((ok) ? void(0) : ::vkf::fail_requirement((op), (what)))
[[noreturn]] inline void fail_requirement(const char* op, const std::string& what) {
  throw Error(std::string(op) + ": " + what);
}

/// Checks that t is set and has the dtype; `name` is the argument's name.
inline void require_tensor(const Tensor* t, const char* op, const char* name, DType dtype) {
  VKF_REQUIRE(t && !t->empty(), op, std::string(name) + " is missing");
  VKF_REQUIRE(t->dtype() == dtype, op,
              std::string(name) + " " + t->describe() + " must be " + dtype_name(dtype));
}

/// Checks that a weight-like tensor is f32, or f16 on a device that can store it.
inline void require_weight(const Tensor* t, const char* op, const char* name, const Capabilities& c) {
  VKF_REQUIRE(t && !t->empty(), op, std::string(name) + " is missing");
  VKF_REQUIRE(t->dtype() == DType::F32 || t->dtype() == DType::F16, op,
              std::string(name) + " " + t->describe() + " must be f32 or f16" +
                  (is_block_dtype(t->dtype()) ? " (block formats are read by gemm and embedding only)" : ""));
  VKF_REQUIRE(t->dtype() != DType::F16 || c.f16_tensors(), op,
              std::string(name) + " is f16 but the device (or its profile) has no 16-bit storage");
}

/// Checks a matrix a kernel dequantizes (gemm's W, embedding's table): f32, f16
/// on a device that can store it, or a block format (read as 32-bit words on
/// any device, shaders/lib/quant.glsl) that fits one binding.
inline void require_matrix(const Tensor* t, const char* op, const char* name, const Capabilities& c) {
  VKF_REQUIRE(t && !t->empty(), op, std::string(name) + " is missing");
  if (!is_block_dtype(t->dtype())) return require_weight(t, op, name, c);
  // Pieces of a block tensor would start inside a block: not bound in pieces (yet).
  VKF_REQUIRE(t->bytes() <= c.max_storage_buffer_range, op,
              std::string(name) + " " + t->describe() + " of " + std::to_string(t->bytes()) +
                  " bytes is larger than one binding (maxStorageBufferRange " +
                  std::to_string(c.max_storage_buffer_range) + ", profile " + c.profile +
                  "); block formats are bound whole");
}

/// The format weights, a table or K/V are stored in, by the tensor's dtype.
inline WeightFormat weight_format(const Tensor* t) { return weight_format_of(t->dtype()); }

/// The suffix of a shader built per weight format (vkf_add_op's WEIGHTS axis,
/// cmake/ops.cmake) for weights, a table or K/V stored as `t`: "_f32", "_f16".
inline std::string weight_suffix(const Tensor* t) { return std::string("_") + weight_format_name(weight_format(t)); }

inline uint32_t ceil_div(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

/// The subgroup size shaders will run with: the one a pipeline requires
/// (`required`, the knob SGS), else the device's default.
inline uint32_t subgroup_size(const Capabilities& c, uint32_t required = 0) {
  return std::max(1u, required ? required : c.subgroup_size);
}

/// A workgroup size near `want`, a multiple of the subgroup size (subgroup_size()), within the limits.
inline uint32_t workgroup_size(const Capabilities& c, uint32_t want, uint32_t required_subgroup = 0) {
  uint32_t limit = std::min(c.max_workgroup_invocations, c.max_workgroup_size[0]);
  uint32_t wg = std::min(want, limit);
  uint32_t sg = subgroup_size(c, required_subgroup);
  if (wg >= sg) wg = wg / sg * sg;
  return std::max(1u, wg);
}

/// How a row-wise normalization (layernorm, rmsnorm) covers its rows: `wg`
/// invocations hold `items` vec4 each of a row in registers (items 1 and a
/// row longer than wg vec4: the shader streams it instead), a workgroup takes
/// `rows` rows in turn; `sgs` is the subgroup size its pipeline requires (0:
/// the driver's choice).
/// vec4 units one invocation of a row-wise op keeps in registers at most; longer rows stream.
constexpr uint32_t kRowMaxItems = 32;

struct RowTiling {
  uint32_t wg, items, aligned, rows, d4;
  uint32_t sgs = 0;
};
/// `required_subgroup`: sizes round to it instead of the device's default subgroup.
inline RowTiling row_tiling(const Capabilities& caps, uint64_t d, uint64_t rows, uint32_t required_subgroup = 0) {
  // Lavapipe runs a workgroup on one core and pays per barrier and per
  // invocation switch: few invocations with many elements each. GPUs want
  // wide workgroups with a couple of vec4 per invocation.
  const uint64_t d4 = (d + 3) / 4;
  const bool cpu = caps.device_type == "cpu";
  const uint32_t target = cpu ? 24 : 2;
  const uint32_t sg = subgroup_size(caps, required_subgroup);
  const uint32_t want = ceil_div(ceil_div(d4, target), sg) * sg;
  RowTiling t;
  t.wg = workgroup_size(caps, std::max(sg, std::min(want, cpu ? 64u : 256u)), required_subgroup);
  t.items = ceil_div(d4, t.wg);
  if (t.items > kRowMaxItems) t.items = 1;  // streaming: the shader re-reads x in each pass
  t.aligned = d % 4 == 0;
  // On lavapipe the weights cost as much to load as x: a workgroup keeps them
  // in registers over several rows, leaving ~16 workgroups for the cores.
  t.rows = cpu ? uint32_t(std::clamp<uint64_t>(rows / 16, 1, 8)) : 1;
  t.d4 = uint32_t(d4);
  return t;
}

/// Whether to use the subgroup variant of a reduction, honouring a forced variant.
inline bool use_subgroups(const Capabilities& c, const std::string& variant, const char* op) {
  if (variant == "subgroup") {
    VKF_REQUIRE(c.subgroup_arithmetic, op, "variant \"subgroup\" needs subgroup arithmetic, which the device lacks");
    return true;
  }
  if (variant == "shared") return false;
  VKF_REQUIRE(variant.empty(), op, "unknown variant \"" + variant + "\" (subgroup, shared)");
  return c.subgroup_arithmetic;
}

/// Whether two tensors share bytes: an output that workgroups write while
/// others still read an input must not overlap it.
inline bool tensors_overlap(const Tensor* a, const Tensor* b) {
  if (!a || !b || a->empty() || b->empty()) return false;
  const Allocation &x = *a->allocation(), &y = *b->allocation();
  return x.buffer == y.buffer && x.offset < y.offset + y.size && y.offset < x.offset + x.size;
}

/// The checks of a row-wise op (layernorm, rmsnorm, l2_normalize): x [..., d]
/// f32; y f32 of x's shape, not aliasing it; eps finite and ≥ 0; fewer than
/// 2^32 elements (shaders index with 32 bits).
struct Rows {
  uint64_t rows, d, n;
};
inline Rows check_rows(const char* op, const Tensor* x, const Tensor* y, float eps) {
  require_tensor(x, op, "x", DType::F32);
  VKF_REQUIRE(!x->shape().empty(), op, "x must have at least one dimension");
  require_tensor(y, op, "y", DType::F32);
  VKF_REQUIRE(y->shape() == x->shape(), op, "y " + y->describe() + " must have the shape of x " + x->describe());
  VKF_REQUIRE(!tensors_overlap(y, x), op, "y must not alias x");
  VKF_REQUIRE(std::isfinite(eps) && eps >= 0, op, "eps must be finite and >= 0");
  const uint64_t n = uint64_t(x->numel()), d = uint64_t(x->dim(-1));
  VKF_REQUIRE(n < (1ull << 32), op, "x has 2^32 elements or more");
  return {d ? n / d : 0, d, n};
}

/// A weight-like [d] vector (a norm's gamma or beta), f32 or f16 as the device allows.
inline void require_vector(const Tensor* t, const char* op, const char* name, uint64_t d, const Capabilities& c) {
  require_weight(t, op, name, c);
  VKF_REQUIRE(t->shape() == std::vector<int64_t>{int64_t(d)}, op,
              std::string(name) + " " + t->describe() + " must be [" + std::to_string(d) + "] (the last dim of x)");
}

/// Binding granularity of slice(): the offset alignment, and at least 16 bytes
/// so that a slice starting on a vec4 keeps its vec4 loads aligned.
inline uint64_t slice_align(const Capabilities& c) {
  return std::max<uint64_t>(c.min_storage_buffer_offset_alignment, 16);
}

/// Elements [first, last) of a tensor bound on their own, for tensors larger
/// than maxStorageBufferRange: the binding starts at the aligned byte at or
/// before `first`, and the shader adds `elem_off` to its indices. The binding
/// spans at most (last - first)·size + slice_align() - 1 bytes; callers size
/// their pieces so that this stays within the range (the recorder checks).
struct Slice {
  Use use;
  uint32_t elem_off;
};
inline Slice slice(const Tensor* t, bool write, uint64_t first, uint64_t last, const Capabilities& c) {
  if (first == 0 && last == uint64_t(t->numel())) return {{t, write}, 0};
  const uint64_t es = dtype_size(t->dtype());  // throws for a block type: bound whole (require_matrix)
  const uint64_t begin = first * es / slice_align(c) * slice_align(c);
  return {{t, write, begin, last * es}, uint32_t((first * es - begin) / es)};
}

/// Whether a whole tensor can be bound as a uniform texel buffer of `width`
/// elements a texel (4: RGBA, 1: R; 32- or 16-bit floats by its dtype): the
/// device reads the formats, the tensor is whole texels at an aligned offset
/// within the view limit, and a host's buffer was created for it. What the
/// recorder's texel_view() needs. A block-format tensor (Q8_0...) is read as
/// R32_UINT words whatever `width`: its allocation rounded up to whole words.
inline bool texel_readable(const Tensor* t, uint32_t width, const Capabilities& c) {
  if (!t || t->empty()) return false;
  if (is_block_dtype(t->dtype())) {
    const Allocation& a = *t->allocation();
    if (!c.texel_u32 || (a.external_owner && !(a.usage & VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT))) return false;
    const uint64_t words = (a.size + 3) / 4;
    return words * 4 <= std::max<uint64_t>(a.size, a.reserved) && a.offset % c.min_texel_buffer_offset_alignment == 0 &&
           words <= c.max_texel_buffer_elements && a.size <= c.max_storage_buffer_range;
  }
  const bool f16 = t->dtype() == DType::F16;
  if (!(f16 ? c.texel_f16 : t->dtype() == DType::F32 && c.texel_f32)) return false;
  const Allocation& a = *t->allocation();
  if (a.external_owner && !(a.usage & VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT)) return false;
  const uint64_t texel = (f16 ? 2 : 4) * width;
  return a.size % texel == 0 && a.offset % c.min_texel_buffer_offset_alignment == 0 &&
         a.size / texel <= c.max_texel_buffer_elements && a.size <= c.max_storage_buffer_range;
}

}  // namespace vkf
