// The JSON and SVG outputs of `vkformer bench ops`.
#include <ctime>

#include <nlohmann/json.hpp>

#include "bench_ops.hpp"
#include "output_file.hpp"
#include "revision.hpp"
#include "svg.hpp"

#ifndef VKF_VERSION
#define VKF_VERSION "unknown"
#endif

namespace vkf::tools {
namespace {

std::string now_utc(const char* fmt) {
  std::time_t t = std::time(nullptr);
  char buf[40];
  std::strftime(buf, sizeof buf, fmt, std::gmtime(&t));
  return buf;
}

std::string driver_version(const Capabilities& c) {
  // The driver's own text where it gives one: vendors pack the number differently
  // (NVIDIA's 580.159.04 decodes as 580.636.256 the VK_MAKE_VERSION way). The raw number is kept too.
  if (!c.driver_info.empty()) return c.driver_info;
  return std::to_string(c.driver_version >> 22) + "." + std::to_string((c.driver_version >> 12) & 0x3ff) +
         "." + std::to_string(c.driver_version & 0xfff);
}

}  // namespace

void write_bench_json(const std::string& path, const Context& ctx, const DevicePeak& peak,
                      const DispatchCost& dispatch, bool openblas, const std::vector<BenchRow>& rows) {
  const Capabilities& c = ctx.caps();
  nlohmann::json results = nlohmann::json::array();
  for (const auto& b : rows) {
    const KernelResult& r = b.r;
    nlohmann::json spec = nlohmann::json::object();
    for (const auto& [k, v] : r.spec_values) spec[k] = v;
    nlohmann::json j = {
        {"op", r.op}, {"variant", r.variant}, {"shape", r.shape}, {"dtype", b.dtype},
        {"median_ms", r.median_ms}, {"min_ms", r.min_ms}, {"max_ms", r.max_ms},
        {"wall_ms", r.wall_ms}, {"gflops", r.gflops}, {"gbps", r.gbps}, {"flops", r.flops},
        {"bytes", r.bytes}, {"checked", r.checked}, {"passed", r.passed},
        {"max_error", r.checked ? nlohmann::json(r.max_error) : nlohmann::json(nullptr)},
        {"spec", spec}, {"picked", r.picked}, {"roofline_pct", b.roofline_pct}};
    if (!b.tuning.empty()) j["tuning"] = b.tuning;
    if (b.speedup > 0) j["speedup_vs_default"] = b.speedup;
    if (r.op == "gemm") {
      j["gweights_per_s"] = b.gweights_per_s;
      if (b.openblas_ms > 0) {
        j["openblas_ms"] = b.openblas_ms;
        j["openblas_gflops"] = r.flops / (b.openblas_ms * 1e6);
        j["vs_openblas"] = b.openblas_ms / r.median_ms;
      }
    }
    results.push_back(j);
  }
  nlohmann::json doc = {
      {"vkformer_version", VKF_VERSION},
      {"git_revision", vkf_git_revision()},
      {"date", now_utc("%Y-%m-%dT%H:%M:%SZ")},
      {"device",
       {{"name", c.device_name}, {"type", c.device_type}, {"driver", c.driver_name},
        {"driver_version", driver_version(c)}, {"driver_version_raw", c.driver_version},
        {"api_version", std::to_string(c.api_version >> 22) + "." +
                            std::to_string((c.api_version >> 12) & 0x3ff) + "." +
                            std::to_string(c.api_version & 0xfff)}}},
      {"peak",
       {{"gflops", peak.gflops}, {"gbps", peak.gbps}, {"fma", peak.fma_spec},
        {"bandwidth", peak.bw_spec}, {"measured", peak.measured}, {"from_cache", peak.from_cache},
        {"cache_file", peak.cache_file}}},
      {"dispatch",
       {{"dispatches", dispatch.dispatches}, {"submit_us", dispatch.submit_us},
        {"chained_us", dispatch.chained_us}, {"independent_us", dispatch.independent_us}}},
      {"openblas_baseline", openblas},
      {"results", results}};
  write_output(path, "--json", doc.dump(2) + "\n");
}

void write_bench_svg(const std::string& path, const Context& ctx, const DevicePeak& peak,
                     const std::vector<BenchRow>& rows) {
  std::vector<RooflinePoint> pts;
  for (const auto& b : rows)
    if (b.r.flops > 0 && b.r.bytes > 0) pts.push_back({b.label, b.r.flops / b.r.bytes, b.r.gflops});
  const Capabilities& c = ctx.caps();
  std::string title = "vkformer bench ops: " + c.device_name +
                      (c.driver_name.empty() || c.device_name.find(c.driver_name) != std::string::npos ? "" : " (" + c.driver_name + ")") + ", " +
                      now_utc("%Y-%m-%d");
  write_roofline_svg(path, title, peak.gflops, peak.gbps, pts);
}

}  // namespace vkf::tools
