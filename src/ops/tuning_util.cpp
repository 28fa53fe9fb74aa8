// Tuning shared by the ops: the subgroup size knob, and the row-wise
// normalizations (layernorm, rmsnorm); see tuning_util.hpp.
#include "ops/tuning_util.hpp"

#include <cstdio>
#include <limits>

#include "vk/check.hpp"
#include "vk/recorder_impl.hpp"
#include "vkformer/recorder.hpp"

namespace vkf {

namespace {

/// Set while this thread runs a check: the op it records there uses the entry
/// under check (and any other) as it stands.
thread_local bool checking_entry = false;

/// Runs `op` at `shape_class` with the database's entry `config` (the op looks
/// it up itself) and returns its error against the reference; `bound` gets the
/// op's bound. @throws vkf::Error when the op cannot run the class's shape or
/// did not use the entry there.
double entry_error(Recorder::Impl& r, const std::string& op, const std::string& shape_class,
                   const TunedConfig* config, double& bound) {
  const OpDescriptor& d = vkf::op(op);
  const OpCase c = d.make_case(r.context, parse_op_shape(shape_class));
  Recorder rec(r.context);
  const OpInfo info = c.record(rec, "");
  r.context.submit(rec);
  bound = c.bound;
  // The check means something only if the op ran the entry at its class
  // (an entry the op refused there was dropped, with its warning).
  if (info.shape_class != shape_class || !dispatched(*config, info))
    throw Error("the op did not run it at its shape class (it ran " + info.shape_class + ")");
  bool ran_first = false;  // a test's injected fault: read as a wrong output
  if (fault::armed && fault::check("tuning_check", &ran_first) != VK_SUCCESS)
    return std::numeric_limits<double>::infinity();
  return c.error();
}

}  // namespace

bool dispatched(const TunedConfig& config, const OpInfo& picked) {
  if (!config.variant.empty() && config.variant != picked.variant) return false;
  for (const auto& knob : config.knobs) {  // not a structured binding: C++17 lambdas cannot capture one (clang)
    auto it = std::find_if(picked.spec.begin(), picked.spec.end(), [&](const auto& kv) { return kv.first == knob.first; });
    if (it == picked.spec.end() || it->second != knob.second) return false;
  }
  return true;
}

bool tuned_entry_passes(Recorder::Impl& r, const std::string& op, const std::string& shape_class,
                        const TunedConfig* config) {
  Context::Impl& ctx = r.ctx;
  if (checking_entry || config->checked_error >= 0 || config != ctx.tuning.find(op, shape_class)) return true;
  std::lock_guard<std::mutex> lock(ctx.tuning_check_mu);
  const auto key = std::make_pair(op, shape_class);
  if (auto seen = ctx.tuning_checked.find(key); seen != ctx.tuning_checked.end()) return seen->second;
  double error = 0, bound = 0;
  checking_entry = true;
  try {
    error = entry_error(r, op, shape_class, config, bound);
  } catch (...) {
    checking_entry = false;
    throw;  // plan_tuned drops the entry, naming why
  }
  checking_entry = false;
  const bool passed = error <= bound;
  ctx.tuning_checked[key] = passed;
  // The outcome goes into the database, so the check runs once per entry and device.
  TuningTable outcome;
  if (passed) {
    TunedConfig checked = *config;
    checked.checked_error = error;
    checked.checked_bound = bound;
    outcome.best[op][shape_class] = checked;
  } else {
    char why[160];
    std::snprintf(why, sizeof why, "its output missed the reference at its first use (error %.3g, bound %.3g)",
                  error, bound);
    drop_tuned_entry(ctx, op, shape_class, config, why);
    outcome.unusable[op][shape_class] = ctx.tuning.unusable[op][shape_class];
  }
  try {
    store_tuning(ctx.tuning.path, ctx.caps, outcome);
  } catch (const std::exception& e) {  // a read-only database: the check runs again next time
    std::fprintf(stderr, "vkformer: warning: %s: could not record the check of the entry %s \"%s\": %s\n",
                 ctx.tuning.path.c_str(), op.c_str(), shape_class.c_str(), e.what());
  }
  return passed;
}

uint32_t tuned_subgroup_size(const Capabilities& caps, const TunedConfig* t, bool subgroup_variant, uint32_t wg,
                             const char* op) {
  const uint32_t sgs = t ? t->knob("SGS", 0) : 0;
  if (!sgs) return 0;
  const std::string what = "the tuned configuration \"" + t->text() + "\"";
  VKF_REQUIRE(subgroup_variant, op, what + " sets SGS, which only variants with subgroup operations take");
  const std::string problem = subgroup_size_problem(caps, sgs, wg);
  VKF_REQUIRE(problem.empty(), op, what + ": " + problem);
  return sgs;
}

CoopSubgroups coop_subgroups(const Capabilities& c, const char* op, const std::string& variant, uint64_t subgroups,
                             const std::string& instead) {
  const std::string device = "the device \"" + c.device_name + "\" (profile " + c.profile + ")";
  if (is_emulated(variant))
    VKF_REQUIRE(c.shader_float16 && c.subgroup_size >= 4 && 256 % c.subgroup_size == 0, op,
                "variant " + variant + " needs shaderFloat16 and a subgroup size dividing 256; " + device + " has " +
                    (c.shader_float16 ? "" : "no fp16 arithmetic, ") + "subgroups of " + std::to_string(c.subgroup_size));
  else
    VKF_REQUIRE(c.coopmat, op,
                "variant " + variant + " needs VK_NV_cooperative_matrix with a 16x16x16 f16*f16+f32 subgroup shape, "
                "shaderFloat16, vulkanMemoryModel and shaderDenormPreserveFloat16; " + device + " has " +
                    (c.coopmat_shapes.empty() ? std::string("none") : "other shapes only") + "; use " + instead);
  // The driver's one size, or the size required of it.
  const uint32_t sg = c.subgroup_size;
  const uint64_t wg = subgroups * sg;
  const bool one_size = c.min_subgroup_size == c.max_subgroup_size;
  const bool sized = c.subgroup_size_control && wg <= UINT32_MAX && subgroup_size_problem(c, sg, uint32_t(wg)).empty();
  VKF_REQUIRE(one_size || sized, op,
              "variant " + variant + " needs subgroups of one known size; the device has " +
                  std::to_string(c.min_subgroup_size) + ".." + std::to_string(c.max_subgroup_size) +
                  " and cannot require one for " + std::to_string(wg) + " invocations");
  return {sg, one_size ? 0 : sg};
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
  VKF_REQUIRE(r.wg >= 1 && r.wg <= limit && r.rows >= 1 && r.rows <= kMaxRows && r.items >= 1 &&
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
