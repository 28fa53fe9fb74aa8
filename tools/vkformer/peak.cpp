#include "peak.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/json_parse.hpp"
#include "ops/peak.hpp"
#include "vkformer/recorder.hpp"
#include "vkformer/tuning.hpp"

namespace vkf::tools {
namespace {

using Clock = std::chrono::steady_clock;

std::string today_utc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

// The peak file sits next to the pipeline cache, with its key:
// pipelines-UUID-DRIVER.bin → peak-UUID-DRIVER.json, and lavapipe's vector
// width when set (it changes the code, not the UUID): peak-UUID-DRIVER-lpw512.json.
std::string peak_file(Context& ctx) {
  std::string f = ctx.pipeline_cache_file();
  size_t slash = f.rfind('/'), bin = f.rfind(".bin");
  if (f.empty() || slash == std::string::npos || bin == std::string::npos) return "";
  std::string name = f.substr(slash + 1, bin - slash - 1);
  if (name.rfind("pipelines-", 0) == 0) name = name.substr(10);
  const std::string width = lavapipe_vector_width(ctx.caps());
  return f.substr(0, slash + 1) + "peak-" + name + (width.empty() ? "" : "-lpw" + width) + ".json";
}

bool is_cpu(const Capabilities& c) { return c.device_type == "cpu"; }

// How the peak was measured; a cache from an older method is measured again.
// 2: the FMA peak is the best over several chain counts (1: 8 chains only).
// 3: the bandwidth is the better of storage-buffer and texel reads.
constexpr int kMethod = 3;

// Fastest of `runs` submissions of one recorded command buffer, in ms.
double best_ms(Context& ctx, Recorder& rec, int runs) {
  double best = 1e300;
  for (int i = 0; i < runs; ++i) {
    ctx.submit(rec);
    double ms = 0;
    for (auto& t : rec.timings()) ms += t.ms;
    best = std::min(best, ms);
  }
  return best;
}

void measure_fma(Context& ctx, DevicePeak& out) {
  const Capabilities& c = ctx.caps();
  PeakFmaArgs a;
  a.wg = peak_fma_workgroup(c);
  // A CPU device needs a few workgroups per core; a GPU needs enough to fill every unit.
  a.groups = is_cpu(c) ? 256 : 8192;
  Tensor y = ctx.tensor({int64_t(a.groups) * a.wg});
  a.y = &y;
  auto time = [&](uint32_t iters, int runs) {
    Recorder rec(ctx, true);
    a.iters = iters;
    peak_fma(rec, a);
    return best_ms(ctx, rec, runs);
  };
  // The number of independent chains that fills the FMA units without running
  // out of registers is the device's: lavapipe on AVX-512 cores runs 3 vec4
  // chains at 177 GFLOP/s, 8 (spilled) at ~100. So try several, keep the best.
  out.gflops = 0;
  for (uint32_t chains : {2u, 3u, 4u, 6u, 8u}) {
    a.chains = chains;
    // Grow the loop until one run takes long enough to time, then aim at ~15 ms
    // a run and keep the best of 8: on shared cores, the best run is the one
    // that had the device to itself.
    uint32_t iters = 16;
    time(iters, 1);  // the first run may include the driver's compilation
    double ms = time(iters, 1);
    while (ms < 3 && iters < (1u << 24)) ms = time(iters *= 4, 1);
    iters = uint32_t(std::clamp(iters * 15.0 / std::max(ms, 1e-3), 16.0, double(1u << 26)));
    ms = time(iters, 8);
    const double gflops = double(a.groups) * a.wg * iters * chains * 4 * 2 / (ms * 1e6);
    if (gflops <= out.gflops) continue;
    out.gflops = gflops;
    out.fma_spec = "WG=" + std::to_string(a.wg) + " CHAINS=" + std::to_string(chains) + " groups=" +
                   std::to_string(a.groups) + " iters=" + std::to_string(iters);
  }
}

void measure_bandwidth(Context& ctx, DevicePeak& out) {
  const Capabilities& c = ctx.caps();
  const uint32_t wg = peak_bandwidth_workgroup(c), items = 16;
  // Much more than the caches hold, in bindings the device allows.
  uint64_t total = std::min<uint64_t>(256ull << 20, std::max<uint64_t>(c.device_local_bytes / 8, 16ull << 20));
  uint64_t chunk = std::min<uint64_t>(64ull << 20, c.max_storage_buffer_range) / 16 * 16;
  std::vector<Tensor> bufs, outs;
  std::vector<float> fill(chunk / 4, 1.0f);  // written, so no read hits an untouched zero page
  for (uint64_t done = 0; done < total; done += chunk) {
    bufs.push_back(ctx.tensor({int64_t(chunk / 4)}));
    ctx.write(bufs.back(), fill);
  }
  fill = {};
  const uint64_t n_vec4 = chunk / 16, groups = (n_vec4 + uint64_t(wg) * items - 1) / (uint64_t(wg) * items);
  for (size_t i = 0; i < bufs.size(); ++i) outs.push_back(ctx.tensor({int64_t(groups * wg)}));
  // Storage-buffer loads, and texel fetches where the device reads RGBA32F
  // texels: the better of the two is the peak (a CPU driver gathers texels far
  // faster than it loads from storage buffers).
  const double bytes = double(chunk) * bufs.size();
  out.gbps = 0;
  for (bool texel : {false, true}) {
    if (texel && !peak_bandwidth_texel_ok({&bufs[0], &outs[0], wg, items}, c)) continue;
    Recorder rec(ctx, true);
    for (size_t i = 0; i < bufs.size(); ++i) peak_bandwidth(rec, {&bufs[i], &outs[i], wg, items, texel});
    double first = best_ms(ctx, rec, 1);  // also the warm-up
    int runs = int(std::clamp(400.0 / std::max(first, 1e-3), 2.0, 10.0));
    const double gbps = bytes / (best_ms(ctx, rec, runs) * 1e6);
    if (gbps <= out.gbps) continue;
    out.gbps = gbps;
    out.bw_spec = "WG=" + std::to_string(wg) + " ITEMS=" + std::to_string(items) + (texel ? " TEXEL=1 " : " ") +
                  std::to_string(uint64_t(bytes) >> 20) + " MiB";
  }
}

bool load(const std::string& file, DevicePeak& p) {
  std::ifstream in(file);
  if (!in) return false;
  try {
    auto j = parse_json_bounded(in);
    if (j.value("method", 1) != kMethod) return false;
    p.gflops = j.at("gflops").get<double>();
    p.gbps = j.at("gbps").get<double>();
    p.fma_spec = j.value("fma", "");
    p.bw_spec = j.value("bandwidth", "");
    p.measured = j.value("measured", "");
    return p.gflops > 0 && p.gbps > 0;
  } catch (const std::exception&) {
    return false;  // a damaged cache is measured again
  }
}

void save(const std::string& file, const DevicePeak& p, const Capabilities& c) {
  nlohmann::json j = {{"device", c.device_name}, {"driver_version", c.driver_version},
                      {"gflops", p.gflops}, {"gbps", p.gbps}, {"fma", p.fma_spec},
                      {"bandwidth", p.bw_spec}, {"measured", p.measured}, {"method", kMethod}};
  std::string tmp = file + ".tmp";
  bool written = false;
  {
    std::ofstream out(tmp);
    if (!out) return;  // no cache only costs a measurement next time
    out << j.dump(2) << "\n";
    out.close();
    written = bool(out);
  }
  // A short write (a full disk) leaves the old cache in place, not a truncated one.
  if (!written || std::rename(tmp.c_str(), file.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace

DevicePeak device_peak(Context& ctx, bool remeasure) {
  DevicePeak p;
  p.cache_file = peak_file(ctx);
  if (!remeasure && !p.cache_file.empty() && load(p.cache_file, p)) {
    p.from_cache = true;
    return p;
  }
  auto t0 = Clock::now();
  measure_fma(ctx, p);
  measure_bandwidth(ctx, p);
  p.measure_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  p.measured = today_utc();
  if (!p.cache_file.empty()) {
    ctx.save_pipeline_cache();  // creates the directory
    save(p.cache_file, p, ctx.caps());
  }
  return p;
}

DispatchCost dispatch_cost(Context& ctx) {
  DispatchCost d;
  d.dispatches = 256;
  PeakFmaArgs a;  // one workgroup, one step of its chains: next to no work
  a.wg = peak_fma_workgroup(ctx.caps());
  a.chains = 1;
  a.iters = 1;
  std::vector<Tensor> ys;
  for (uint32_t i = 0; i < d.dispatches; ++i) ys.push_back(ctx.tensor({int64_t(a.wg)}));
  // Best of `runs` wall times: on shared cores the best is the one undisturbed.
  auto best_us = [&](uint32_t n, bool chained) {
    Recorder rec(ctx);
    for (uint32_t i = 0; i < n; ++i) {
      a.y = &ys[chained ? 0 : i];  // the same output: the recorder puts a barrier between
      peak_fma(rec, a);
    }
    double best = 1e300;
    for (int i = 0; i < 23; ++i) {
      const auto t0 = Clock::now();
      ctx.submit(rec);
      if (i >= 3) best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    return best;
  };
  d.submit_us = best_us(1, true);
  d.chained_us = (best_us(d.dispatches, true) - d.submit_us) / (d.dispatches - 1);
  d.independent_us = (best_us(d.dispatches, false) - d.submit_us) / (d.dispatches - 1);
  return d;
}

double roofline_gflops(const DevicePeak& p, double intensity) {
  return std::min(p.gflops, intensity * p.gbps);
}

double roofline_pct(const DevicePeak& p, double flops, double bytes, double ms) {
  if (ms <= 0 || bytes <= 0) return 0;
  if (flops <= 0) return 100.0 * bytes / (ms * 1e6) / p.gbps;
  return 100.0 * flops / (ms * 1e6) / roofline_gflops(p, flops / bytes);
}

}  // namespace vkf::tools
