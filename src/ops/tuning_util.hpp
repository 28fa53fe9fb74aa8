// How an op takes part in tuning (`vkformer tune`, docs/tuning.md): the shape
// class it looks itself up under, the tuned configuration that overrides its
// own rules, and the candidate configurations its descriptor offers the tuner.
// A class is written as `--shape` text ("m=128,n=768,k=768,dtype=f32"), so the
// tuner can rebuild the op's case from it.
#pragma once

#include <string>
#include <vector>

#include "ops/op_util.hpp"
#include "ops/registry.hpp"
#include "vkformer/tuning.hpp"

namespace vkf {

/// A size as the database keys it: itself up to 4 (decoding's few rows), else
/// the next power of two, so nearby lengths share an entry.
inline uint64_t size_class(uint64_t n) {
  if (n <= 4) return n;
  uint64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

/// The tuned configuration of `op` at `shape_class`, or nullptr. A variant the
/// caller forced wins over the database (the lookup still happens, so the
/// tuner's capture sees the shape).
inline const TunedConfig* tuned(Recorder::Impl& r, const char* op, const std::string& shape_class,
                                const std::string& forced_variant) {
  const TunedConfig* t = r.ctx.tuned(op, shape_class);
  return forced_variant.empty() ? t : nullptr;
}

/// When `config` is the database's entry for `op` at `shape_class` (not the
/// tuner's candidate), stops using it in this context, warns once naming the
/// file, the entry and `why`, and returns true; false otherwise (src/vk/tuning.cpp).
bool drop_tuned_entry(Context::Impl& ctx, const std::string& op, const std::string& shape_class,
                      const TunedConfig* config, const std::string& why);

/// Whether the database's entry `config` for `op` at `shape_class` may be
/// used: true at once for the tuner's candidates and for entries checked
/// before (TunedConfig::checked_error). An unchecked entry is checked once, at
/// its first use: the op runs at its shape class with the entry, against its
/// double-precision reference, and the outcome is recorded in the database. An
/// entry that misses the op's bound is dropped (drop_tuned_entry) and listed as
/// unusable there, so a tuned configuration never changes a result beyond its
/// op's bound (issue 29 #12). Defined in tuning_util.cpp.
bool tuned_entry_passes(Recorder::Impl& r, const std::string& op, const std::string& shape_class,
                        const TunedConfig* config);

/// `plan()`, which plans the op with the tuned configuration `tc` (nullptr:
/// its own rules). A database entry that the op refuses (a knob out of range
/// for this device, an unknown variant) must not stop inference: it is
/// dropped with one warning (drop_tuned_entry), `tc` becomes nullptr and
/// `plan()` runs again with the op's own rules. The tuner's candidates throw.
/// An entry that fits is checked at its first use (tuned_entry_passes()).
template <typename PlanFn>
auto plan_tuned(Recorder::Impl& r, const char* op, const std::string& shape_class, const TunedConfig*& tc,
                PlanFn&& plan) -> decltype(plan()) {
  try {
    auto p = plan();
    if (!tc || tuned_entry_passes(r, op, shape_class, tc)) return p;
  } catch (const Error& e) {
    if (!drop_tuned_entry(r.ctx, op, shape_class, tc, e.what())) throw;
  }
  tc = nullptr;
  return plan();
}

/// Whether `picked` (what an op dispatched) is `config`: its variant, if it
/// names one, and each knob it sets. A knob the op does not report (SGS,
/// reported only when required) differs.
bool dispatched(const TunedConfig& config, const OpInfo& picked);

/// The variant asked for, else the tuned one, else "" (the op's own rule).
inline std::string pick_variant(const std::string& asked, const TunedConfig* t) {
  return !asked.empty() ? asked : t ? t->variant : "";
}

/// Workgroup sizes worth trying: powers of two from the subgroup size up to
/// the device's limit and `most`.
inline std::vector<uint32_t> workgroup_candidates(const Capabilities& c, uint32_t most = 256) {
  const uint32_t limit = std::min({c.max_workgroup_invocations, c.max_workgroup_size[0], most});
  std::vector<uint32_t> out;
  for (uint32_t wg = std::max(1u, c.subgroup_size); wg <= limit; wg *= 2) out.push_back(wg);
  return out;
}

/// A row-wise normalization's class: rows (as a size class), row length, storage of its weights.
inline std::string rows_class(uint64_t rows, uint64_t d, DType weights) {
  return "m=" + std::to_string(size_class(rows)) + ",n=" + std::to_string(d) + ",dtype=" + dtype_name(weights);
}

/// The subgroup size a tuned configuration requires (knob SGS), 0 when it sets
/// none: the driver chooses. Only variants with subgroup operations take it.
/// @throws vkf::Error naming the op and the configuration when the variant
/// has no subgroup operations or the device cannot require that size for a
/// workgroup of `wg` (subgroup_size_problem()).
uint32_t tuned_subgroup_size(const Capabilities& caps, const TunedConfig* t, bool subgroup_variant, uint32_t wg,
                             const char* op);
/// Whether `variant` is a tensor-core kernel's emulation (named *_emulated:
/// the matrix operations done by the lanes, shaders/lib/coopmat.glsl).
inline bool is_emulated(const std::string& variant) {
  return variant.size() > 9 && variant.compare(variant.size() - 9, 9, "_emulated") == 0;
}

/// Shared memory an emulated tensor-core kernel adds per subgroup: the A and B
/// operands of its products, 512 halves (cm_ab, shaders/lib/coopmat.glsl).
constexpr uint64_t kCoopEmulationBytesPerSubgroup = 512 * 2;

/// The subgroups of a tensor-core kernel (gemm_coopmat.comp,
/// flash_attention_coopmat.comp), which number theirs (gl_SubgroupID):
/// `sg` lanes each, and `required`, the size its pipeline must require where
/// the device has several (0: the driver's one size).
struct CoopSubgroups {
  uint32_t sg, required;
};
/// For `subgroups` subgroups a workgroup, after the variant's own requirement:
/// VK_NV_cooperative_matrix's shape and features (Capabilities::coopmat), or
/// for its emulation (a variant named *_emulated, shaders/lib/coopmat.glsl)
/// shaderFloat16 and a subgroup size dividing 256.
/// @throws vkf::Error naming op, variant and what the device lacks; `instead` names another variant.
CoopSubgroups coop_subgroups(const Capabilities& c, const char* op, const std::string& variant, uint64_t subgroups,
                             const std::string& instead);

/// Appends to `cands`, after them, a copy of each configuration of a subgroup
/// variant (its name says "subgroup") with each subgroup size worth requiring
/// at its WG: powers of two in [min, max] up to WG (a larger subgroup leaves
/// lanes idle) that fit maxComputeWorkgroupSubgroups. None when the device has
/// no size control or a single size (lavapipe 8, SwiftShader 4): then the
/// driver's size is the only one, and the search stays as long as before.
void add_subgroup_sizes(const Capabilities& caps, std::vector<TunedConfig>& cands);

/// row_tiling() with a tuned configuration's WG, ITEMS, ROWS and, for the
/// subgroup variant, SGS over it.
/// @throws vkf::Error naming the op when they do not fit the row or the device.
RowTiling tuned_row_tiling(const Capabilities& caps, uint64_t d, uint64_t rows, const TunedConfig* t, const char* op,
                           bool subgroup_variant);
/// A row-wise normalization's plan (layernorm, rmsnorm): whether it runs the
/// subgroup variant (`*subgroup_variant`), the variant `asked` for, else the
/// tuned one, else the device's; and its tuned_row_tiling(). A database entry
/// that does not fit is dropped (plan_tuned), leaving `tc` nullptr.
RowTiling plan_row_op(Recorder::Impl& r, const char* op, const std::string& shape_class, const std::string& asked,
                      uint64_t d, uint64_t rows, const TunedConfig*& tc, bool* subgroup_variant);
/// What a row-wise op reports dispatching (OpInfo::spec): WG ITEMS ALIGNED ROWS, and SGS when required.
inline std::vector<std::pair<std::string, uint32_t>> row_tiling_spec(const RowTiling& t) {
  std::vector<std::pair<std::string, uint32_t>> s = {{"WG", t.wg}, {"ITEMS", t.items}, {"ALIGNED", t.aligned},
                                                     {"ROWS", t.rows}};
  if (t.sgs) s.emplace_back("SGS", t.sgs);
  return s;
}
/// What the tuner tries for layernorm and rmsnorm: both variants × workgroup
/// sizes × rows per workgroup (× subgroup sizes, add_subgroup_sizes()).
std::vector<TunedConfig> row_tiling_candidates(const Capabilities& caps, const OpShape& s);

}  // namespace vkf
