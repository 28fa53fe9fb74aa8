// The device-peak microbenchmarks as internal ops (`bench ops` measures the
// roofline with them, tools/vkformer/peak.cpp): not part of the public API,
// not in `--op all` or the kernel table.
#pragma once

#include <vector>

#include "vkformer/context.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

/// y[i] = sum of `chains` vec4 FMA chains x ← x·a + b run for `iters` steps,
/// one per invocation of `groups` workgroups of `wg` (shaders/peak_fma.comp).
struct PeakFmaArgs {
  Tensor* y = nullptr;  ///< [≥ groups·wg] f32
  uint32_t wg = 64, chains = 8, groups = 1, iters = 16;
  float a = 0.999f, b = 1e-3f;
};
OpInfo peak_fma(Recorder& rec, const PeakFmaArgs& a);
/// The workgroup size peak_fma is measured with on a device.
uint32_t peak_fma_workgroup(const Capabilities& c);

/// y[g·wg + l] = sum of the `items` vec4s invocation l of workgroup g reads
/// from x (shaders/peak_bandwidth.comp); streams x once.
struct PeakBandwidthArgs {
  const Tensor* x = nullptr;  ///< [4·n_vec4] f32
  Tensor* y = nullptr;        ///< [groups·wg] f32
  uint32_t wg = 256, items = 16;
  bool texel = false;  ///< x read through an RGBA32F texel buffer (peak_bandwidth_texel_ok)
};
OpInfo peak_bandwidth(Recorder& rec, const PeakBandwidthArgs& a);
/// Workgroups peak_bandwidth() dispatches over x.
uint32_t peak_bandwidth_groups(const PeakBandwidthArgs& a);
/// Whether x can be read as texels (the device's RGBA32F texel buffers, within their limits).
bool peak_bandwidth_texel_ok(const PeakBandwidthArgs& a, const Capabilities& c);
/// The workgroup size peak_bandwidth is measured with on a device.
uint32_t peak_bandwidth_workgroup(const Capabilities& c);

namespace ref {
std::vector<double> peak_fma(const PeakFmaArgs& a);
std::vector<double> peak_bandwidth(const std::vector<float>& x, const PeakBandwidthArgs& a);
}  // namespace ref

}  // namespace vkf
