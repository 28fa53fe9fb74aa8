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

/// row_tiling() with a tuned configuration's WG, ITEMS and ROWS over it.
/// @throws vkf::Error naming the op when they do not fit the row or the device.
RowTiling tuned_row_tiling(const Capabilities& caps, uint64_t d, uint64_t rows, const TunedConfig* t, const char* op);
/// What the tuner tries for layernorm and rmsnorm: both variants × workgroup
/// sizes × rows per workgroup.
std::vector<TunedConfig> row_tiling_candidates(const Capabilities& caps, const OpShape& s);

}  // namespace vkf
