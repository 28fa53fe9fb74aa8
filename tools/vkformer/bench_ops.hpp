// `vkformer bench ops`: every kernel at its standard (target) shapes or at
// given ones, each variant checked against its CPU reference and timed, as a
// percentage of the device's measured roofline, with OpenBLAS as the CPU
// baseline for GEMM. Output: a table, optionally JSON and an SVG roofline.
#pragma once

#include <string>
#include <vector>

#include "kernel_bench.hpp"
#include "peak.hpp"

namespace vkf::tools {

struct BenchOpsOptions {
  std::vector<std::string> ops = {"all"};  ///< kernel_ops() names, or "all"
  KernelOptions base;             ///< shape (when shape_given), variant, repeat, warmup, check
  bool shape_given = false;       ///< --m/--n/--k/... given: run that shape, not the standard ones
  std::vector<std::string> shapes;  ///< --shape: "m=128,n=768,k=768,heads=12,..." or "MxNxK"
  std::string precision;          ///< "" (each standard shape's own), fp32 or fp16
  std::string json, svg;          ///< output files ("" = none)
  bool remeasure_peak = false;
  bool compare_tuning = false;    ///< --tuning compare: each shape with the engine's rules and tuned
};

/// One timed kernel variant with what the benchmark adds to it.
struct BenchRow {
  KernelResult r;
  std::string dtype, label;    ///< storage precision; short label for charts
  double roofline_pct = 0;
  double openblas_ms = -1;     ///< gemm: cblas_sgemm on the same shape (fp32), -1 if not run
  double gweights_per_s = -1;  ///< gemm: weight elements read per second / 1e9
  /// --tuning compare: "default" (the engine's rules), then "tuned" (the
  /// database's configuration) or "no entry" (the database has none); "" otherwise.
  std::string tuning;
  double speedup = -1;  ///< tuned row: default ms / tuned ms
};

/// The op names `bench ops --op` accepts.
std::vector<std::string> bench_op_names();

/// Runs the benchmark; returns the process exit code (1 when a check failed).
/// @throws vkf::Error on bad options.
int run_bench_ops(const ContextOptions& ctx_opts, const BenchOpsOptions& o);

/// Writes the JSON report (bench_report.cpp).
void write_bench_json(const std::string& path, const Context& ctx, const DevicePeak& peak,
                      const DispatchCost& dispatch, bool openblas, const std::vector<BenchRow>& rows);
/// Writes the roofline chart of the rows (bench_report.cpp).
void write_bench_svg(const std::string& path, const Context& ctx, const DevicePeak& peak,
                     const std::vector<BenchRow>& rows);

}  // namespace vkf::tools
