// Tuning shared by the ops: the subgroup size knob, and the row-wise
// normalizations (layernorm, rmsnorm); see tuning_util.hpp.
#include "ops/tuning_util.hpp"

namespace vkf {

uint32_t tuned_subgroup_size(const Capabilities& caps, const TunedConfig* t, bool subgroup_variant, uint32_t wg,
                             const char* op) {
  const uint32_t sgs = t ? t->knob("SGS", 0) : 0;
  if (!sgs) return 0;
  const std::string what = "the tuned configuration \"" + t->text() + "\"";
  require(subgroup_variant, op, what + " sets SGS, which only variants with subgroup operations take");
  const std::string problem = subgroup_size_problem(caps, sgs, wg);
  require(problem.empty(), op, what + ": " + problem);
  return sgs;
}

void add_subgroup_sizes(const Capabilities& caps, std::vector<TunedConfig>& cands) {
  if (!caps.subgroup_size_control || caps.max_subgroup_size <= caps.min_subgroup_size) return;
  const size_t n = cands.size();
  for (size_t i = 0; i < n; ++i) {
    if (cands[i].variant.find("subgroup") == std::string::npos) continue;
    const uint32_t wg = cands[i].knob("WG", 0);
    for (uint32_t sgs = caps.min_subgroup_size; sgs <= caps.max_subgroup_size && sgs <= wg; sgs *= 2)
      if (subgroup_size_problem(caps, sgs, wg).empty()) {
        TunedConfig c = cands[i];
        c.knobs.emplace_back("SGS", sgs);
        cands.push_back(std::move(c));
      }
  }
}

RowTiling tuned_row_tiling(const Capabilities& caps, uint64_t d, uint64_t rows, const TunedConfig* t,
                           const char* op, bool subgroup_variant) {
  RowTiling r = row_tiling(caps, d, rows, t ? t->knob("SGS", 0) : 0);
  if (!t) return r;
  r.wg = t->knob("WG", r.wg);
  const uint32_t fit = ceil_div(r.d4, std::max(1u, r.wg));
  r.items = t->knob("ITEMS", fit > kRowMaxItems ? 1 : fit);
  r.rows = t->knob("ROWS", r.rows);
  constexpr uint32_t kMaxRows = 64;  // rows a workgroup loops over; the rule and the tuner stay within 8
  // Before the WG check: a bad SGS may be what made WG.
  r.sgs = tuned_subgroup_size(caps, t, subgroup_variant, r.wg, op);
  const uint32_t limit = std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]);
  // ITEMS > 1 keeps the whole row in registers, so ITEMS·WG must cover it; 1 streams any length.
  require(r.wg >= 1 && r.wg <= limit && r.rows >= 1 && r.rows <= kMaxRows && r.items >= 1 &&
              r.items <= kRowMaxItems && (r.items == 1 || uint64_t(r.items) * r.wg >= r.d4),
          op, "the tuned configuration \"" + t->text() + "\" does not fit rows of " + std::to_string(d) +
                  " on this device (WG at most " + std::to_string(limit) + " invocations, ITEMS at most " +
                  std::to_string(kRowMaxItems) + ", ROWS at most " + std::to_string(kMaxRows) + ")");
  return r;
}

RowTiling plan_row_op(Recorder::Impl& r, const char* op, const std::string& shape_class, const std::string& asked,
                      uint64_t d, uint64_t rows, const TunedConfig*& tc, bool* subgroup_variant) {
  const Capabilities& caps = r.ctx.caps;
  return plan_tuned(r, op, shape_class, tc, [&] {
    *subgroup_variant = use_subgroups(caps, pick_variant(asked, tc), op);
    return tuned_row_tiling(caps, d, rows, tc, op, *subgroup_variant);
  });
}

std::vector<TunedConfig> row_tiling_candidates(const Capabilities& caps, const OpShape& s) {
  std::vector<TunedConfig> out;
  std::vector<std::string> variants = {"shared"};
  if (caps.subgroup_arithmetic) variants.insert(variants.begin(), "subgroup");
  for (const std::string& v : variants)
    for (uint32_t wg : workgroup_candidates(caps, 128))
      for (uint32_t rows : {1u, 2u, 4u, 8u})
        if (rows <= std::max<int64_t>(1, s.m)) out.push_back({v, {{"WG", wg}, {"ROWS", rows}}});
  add_subgroup_sizes(caps, out);
  return out;
}

}  // namespace vkf
