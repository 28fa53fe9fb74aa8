// Tuning for the row-wise normalizations (layernorm, rmsnorm); see tuning_util.hpp.
#include "ops/tuning_util.hpp"

namespace vkf {

RowTiling tuned_row_tiling(const Capabilities& caps, uint64_t d, uint64_t rows, const TunedConfig* t,
                           const char* op) {
  RowTiling r = row_tiling(caps, d, rows);
  if (!t) return r;
  r.wg = t->knob("WG", r.wg);
  const uint32_t fit = ceil_div(r.d4, std::max(1u, r.wg));
  r.items = t->knob("ITEMS", fit > kRowMaxItems ? 1 : fit);
  r.rows = t->knob("ROWS", r.rows);
  const uint32_t limit = std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]);
  // ITEMS > 1 keeps the whole row in registers, so ITEMS·WG must cover it; 1 streams any length.
  require(r.wg >= 1 && r.wg <= limit && r.rows >= 1 && r.items >= 1 && r.items <= kRowMaxItems &&
              (r.items == 1 || uint64_t(r.items) * r.wg >= r.d4),
          op, "the tuned configuration \"" + t->text() + "\" does not fit rows of " + std::to_string(d) +
                  " on this device (at most " + std::to_string(limit) + " invocations)");
  return r;
}

std::vector<TunedConfig> row_tiling_candidates(const Capabilities& caps, const OpShape& s) {
  std::vector<TunedConfig> out;
  std::vector<std::string> variants = {"shared"};
  if (caps.subgroup_arithmetic) variants.insert(variants.begin(), "subgroup");
  for (const std::string& v : variants)
    for (uint32_t wg : workgroup_candidates(caps, 128))
      for (uint32_t rows : {1u, 2u, 4u, 8u})
        if (rows <= std::max<int64_t>(1, s.m)) out.push_back({v, {{"WG", wg}, {"ROWS", rows}}});
  return out;
}

}  // namespace vkf
