#include "bench_ops.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#ifdef VKF_HAVE_OPENBLAS
#include <cblas.h>
// OpenBLAS's own: stops its worker threads (the next call starts them again).
extern "C" int blas_thread_shutdown_(void);
#endif

#include "usage_error.hpp"
#include "vk/tuning_hooks.hpp"

namespace vkf::tools {
namespace {

// A run of `op` at shape `s` with the command's variant, repeats and checks.
// run_kernel re-parses dtype and act from the strings, so both come from `s`
// (a --shape's dtype=f16 or act=gelu must not fall back to the defaults).
KernelOptions run_of(const KernelOptions& base, const std::string& op, const OpShape& s) {
  KernelOptions o = base;
  o.op = op;
  o.shape = s;
  o.dtype = dtype_name(s.dtype);
  o.act = activation_name(s.act);
  return o;
}

// The op's standard shapes (its descriptor's), with the command's gemm epilogue.
std::vector<OpShape> standard_shapes(const OpDescriptor& d, const OpShape& base) {
  std::vector<OpShape> v = d.bench_shapes;
  for (auto& s : v) s.act = base.act, s.bias = base.bias, s.residual = base.residual;
  return v;
}

// A short label for charts: op, variant, the sizes that matter.
std::string short_label(const KernelOptions& o, const KernelResult& r) {
  return o.op + " " + r.variant + " " + op_label(op(o.op), o.shape) + " " + o.dtype;
}


// OpenBLAS on the same Y = X·Wᵀ (fp32 weights: cblas has no fp16 GEMM), in ms.
double openblas_ms(const KernelOptions& o) {
#ifdef VKF_HAVE_OPENBLAS
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(size_t(o.shape.m * o.shape.k)), w(size_t(o.shape.n * o.shape.k)), y(size_t(o.shape.m * o.shape.n));
  for (auto& v : x) v = d(g);
  for (auto& v : w) v = d(g);
  std::vector<double> t;
  for (int i = 0; i < o.warmup + o.repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(o.shape.m), int(o.shape.n), int(o.shape.k), 1.0f,
                x.data(), int(o.shape.k), w.data(), int(o.shape.k), 0.0f, y.data(), int(o.shape.n));
    auto t1 = std::chrono::steady_clock::now();
    if (i >= o.warmup) t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  // After a call OpenBLAS's workers spin, waiting for the next one, and hold a
  // core for a while: on 2 cores the Vulkan kernel timed next then ran at half
  // speed, now and then (the "two levels" of issue 15). Stop them.
  blas_thread_shutdown_();
  return median(t);
#else
  (void)o;
  return -1;
#endif
}

void print_group(const std::vector<BenchRow>& rows, size_t begin, bool openblas) {
  const KernelResult& h = rows[begin].r;
  std::printf("\n%s  %s\n", h.op.c_str(), h.shape.c_str());
  std::printf("  %-24s %9s %9s %9s %9s %9s %8s %7s %9s  %s\n", "variant", "median ms", "min ms",
              "max ms", "wall ms", "GFLOP/s", "GB/s", "% roof", "max err", "spec constants");
  const BenchRow* picked = nullptr;
  for (size_t i = begin; i < rows.size() && rows[i].r.shape == h.shape && rows[i].r.op == h.op; ++i) {
    const KernelResult& r = rows[i].r;
    if (r.picked) picked = &rows[i];
    char err[32];
    if (r.checked) std::snprintf(err, sizeof err, "%.1e%s", r.max_error, r.passed ? "" : " FAIL");
    else std::snprintf(err, sizeof err, "-");
    const std::string tuning = rows[i].tuning.empty() ? "" : " (" + rows[i].tuning + ")";
    std::printf("  %-24s %9.3f %9.3f %9.3f %9.3f %9.2f %8.2f %7.1f %9s  %s\n",
                (r.variant + (r.picked ? " *" : "") + tuning).c_str(), r.median_ms, r.min_ms, r.max_ms,
                r.wall_ms, r.gflops, r.gbps, rows[i].roofline_pct, err, r.spec.c_str());
    if (rows[i].speedup > 0) std::printf("  %-24s tuned / default speed = %.2fx\n", "", rows[i].speedup);
    if (rows[i].gweights_per_s > 0 && r.variant.rfind("gemv", 0) == 0)
      std::printf("  %-24s %.2f G weights/s\n", "", rows[i].gweights_per_s);
  }
  if (h.op != "gemm") return;
  if (!openblas) {
    std::printf("  OpenBLAS baseline unavailable (vkformer was built without OpenBLAS)\n");
    return;
  }
  const BenchRow& b = picked ? *picked : rows[begin];
  double ob = b.openblas_ms;
  std::printf("  OpenBLAS cblas_sgemm (fp32, same cores): %.3g ms, %.2f GFLOP/s; "
              "vkformer %s / OpenBLAS speed = %.3gx\n",
              ob, b.r.flops / (ob * 1e6), b.r.variant.c_str(), ob / b.r.median_ms);
}

}  // namespace

std::vector<std::string> bench_op_names() {
  auto v = op_names();
  v.push_back("all");
  return v;
}

int run_bench_ops(const ContextOptions& ctx_opts, const BenchOpsOptions& o) {
  check_runs(o.base);
  std::vector<std::string> ops;
  for (const auto& name : o.ops)
    if (name == "all") ops = op_names();
  if (ops.empty()) ops = o.ops;
  const bool have_openblas =
#ifdef VKF_HAVE_OPENBLAS
      true;
#else
      false;
#endif

  // What to run: the given shapes, else each op's standard ones.
  const OpShape base = o.base.resolved();
  std::vector<KernelOptions> runs;
  for (const auto& name : ops) {
    std::vector<OpShape> shapes;
    if (!o.shapes.empty())
      for (const auto& s : o.shapes) shapes.push_back(parse_op_shape(s, base));
    else if (o.shape_given) shapes.push_back(base);
    else shapes = standard_shapes(op(name), base);
    for (auto& s : shapes) {
      if (!o.precision.empty()) s.dtype = parse_storage_dtype(o.precision, "--precision");
      bool dup = false;
      for (const auto& r : runs) dup = dup || (r.op == name && r.shape == s);
      if (!dup) runs.push_back(run_of(o.base, name, s));
    }
  }

  if (o.compare_tuning && !o.base.variant.empty())
    throw UsageError("--tuning compare times the engine's own pick: leave out --variant");
  ContextOptions opts = ctx_opts;
  // compare: the database VKFORMER_TUNING names, else the cache directory's.
  if (o.compare_tuning) {
    const std::string env = tuning_choice("");
    opts.tuning = env == "off" || env == "compare" ? "auto" : env;
  }
  Context ctx(opts);
  if (o.compare_tuning)
    std::printf("tuning database: %s (%zu entries for this device)\n", tuning_table(ctx).path.c_str(),
                tuning_table(ctx).size());
  DevicePeak peak = device_peak(ctx, o.remeasure_peak);
  if (peak.from_cache)
    std::printf("device peak (cached %s, --remeasure-peak to measure again): %.1f GFLOP/s, %.1f GB/s\n",
                peak.measured.c_str(), peak.gflops, peak.gbps);
  else
    std::printf("device peak (measured in %.0f ms%s): %.1f GFLOP/s [%s], %.1f GB/s [%s]\n",
                peak.measure_ms, peak.cache_file.empty() ? ", not cached: cache off" : "",
                peak.gflops, peak.fma_spec.c_str(), peak.gbps, peak.bw_spec.c_str());
  std::printf("ridge point %.2f FLOP/byte; %% roof = share of min(peak GFLOP/s, intensity x peak GB/s)\n",
              peak.gflops / peak.gbps);
  const DispatchCost dispatch = dispatch_cost(ctx);
  std::printf("dispatch cost (wall, best runs): a submission of one dispatch %.1f us; each further one of %u "
              "%.2f us behind a barrier, %.2f us without\n",
              dispatch.submit_us, dispatch.dispatches, dispatch.chained_us, dispatch.independent_us);

  std::vector<BenchRow> rows;
  int status = 0;
  for (const auto& k : runs) {
    size_t begin = rows.size();
    double blas = -1;
    check_shape(ctx, k.resolved());  // before OpenBLAS allocates its copy
    if (k.op == "gemm" && have_openblas) blas = openblas_ms(k);
    // --tuning compare: the engine's rules (forced) and whatever the database
    // says, their runs interleaved.
    std::vector<std::pair<std::string, KernelResult>> results;
    if (o.compare_tuning) {
      const auto both = run_kernel_side_by_side(
          ctx, k,
          {[&](Recorder& r, const OpCase& c) {
             ForcedTuning rules(ctx, k.op, {});
             return c.record(r, "");
           },
           [](Recorder& r, const OpCase& c) { return c.record(r, ""); }});
      results.emplace_back("default", both.at(0));
      results.emplace_back(both.at(1).tuned ? "tuned" : "no entry", both.at(1));
    } else {
      for (const auto& r : run_kernel(ctx, k)) results.emplace_back("", r);
    }
    for (const auto& [tuning, r] : results) {
      BenchRow b;
      b.r = r;
      b.tuning = tuning;
      if (tuning == "tuned") b.speedup = results[0].second.median_ms / r.median_ms;
      if (!tuning.empty()) b.label += "(" + tuning + ") ";
      b.dtype = k.dtype;
      b.label += short_label(k, r);
      b.roofline_pct = roofline_pct(peak, r.flops, r.bytes, r.median_ms);
      b.openblas_ms = blas;
      if (k.op == "gemm") b.gweights_per_s = double(k.shape.n) * double(k.shape.k) / (r.median_ms * 1e6);
      if (!r.passed) status = 1;
      rows.push_back(b);
    }
    if (rows.size() > begin) print_group(rows, begin, have_openblas);
    std::fflush(stdout);
  }
  std::printf("\n* = the variant the engine picks on this device. Times: medians of %d timestamped runs "
              "(device time) after %d warm-up runs; wall = submit to fence, median.\n",
              o.base.repeat, o.base.warmup);
  if (!o.json.empty()) write_bench_json(o.json, ctx, peak, dispatch, have_openblas, rows);
  if (!o.svg.empty()) write_bench_svg(o.svg, ctx, peak, rows);
  return status;
}

}  // namespace vkf::tools
