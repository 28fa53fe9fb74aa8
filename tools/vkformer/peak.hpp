// The device's reachable peak, measured by two microbenchmarks
// (shaders/peak_fma.comp, shaders/peak_bandwidth.comp) and cached per device
// next to the pipeline cache, under the same key (pipeline-cache UUID and
// driver version). Kernels are reported as a percentage of the roofline.
#pragma once

#include <string>

#include "vkformer/context.hpp"

namespace vkf::tools {

struct DevicePeak {
  double gflops = 0;      ///< fp32 FMA throughput, GFLOP/s (an FMA counts 2)
  double gbps = 0;        ///< streaming read bandwidth, GB/s
  std::string fma_spec;   ///< how it was measured, e.g. "WG=64 CHAINS=4 groups=256 iters=4096"
  std::string bw_spec;    ///< e.g. "WG=64 ITEMS=16 256 MiB"
  std::string measured;   ///< date of the measurement (UTC)
  double measure_ms = 0;  ///< how long measuring took (0 when read from the cache)
  bool from_cache = false;
  std::string cache_file; ///< empty when the pipeline cache is off
};

/// What a dispatch costs beyond its work, from wall times (submission to fence)
/// of command buffers of one-workgroup dispatches: where a decode step of a few
/// hundred small dispatches spends its time. Measured each run, never cached.
struct DispatchCost {
  uint32_t dispatches = 0;   ///< in the long command buffers
  double submit_us = 0;      ///< one command buffer of one dispatch, submitted and waited for
  double chained_us = 0;     ///< each further dispatch behind a barrier (it writes what the last wrote)
  double independent_us = 0; ///< each further dispatch with no barrier before it
};
DispatchCost dispatch_cost(Context& ctx);

/// The peak from the cache file, or measured now (and cached) when there is
/// none, it is unreadable, or `remeasure` is set.
DevicePeak device_peak(Context& ctx, bool remeasure);

/// Attainable GFLOP/s at `intensity` FLOP/byte: min(peak compute, intensity · peak bandwidth).
double roofline_gflops(const DevicePeak& p, double intensity);

/// A kernel's speed as a percentage of its roofline. A kernel without FLOPs
/// (copies, gathers) is measured against the bandwidth alone.
double roofline_pct(const DevicePeak& p, double flops, double bytes, double ms);

}  // namespace vkf::tools
