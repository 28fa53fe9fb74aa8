#include "kernel_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <unistd.h>

#include "progress.hpp"
#include "usage_error.hpp"
#include "vkformer/recorder.hpp"

namespace vkf::tools {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void check_shape(const Context& ctx, const OpShape& s) {
  const std::pair<const char*, int64_t> sizes[] = {
      {"--m", s.m},           {"--n", s.n},         {"--k", s.k},         {"--batch", s.batch},
      {"--heads", s.heads},   {"--head-dim", s.head_dim}, {"--q-len", s.q_len}, {"--kv-len", s.kv_len},
      {"--topk", s.topk}};
  for (const auto& [name, v] : sizes)
    if (v < 1) throw UsageError(std::string(name) + " must be at least 1, got " + std::to_string(v));
  // Every buffer an op of the registry makes is one of these products (in
  // elements); long double, so that the products of huge sizes do not wrap.
  const long double b = s.batch, h = s.heads, d = s.head_dim, q = s.q_len, kv = s.kv_len;
  const long double buffers[] = {(long double)s.m * s.k, (long double)s.n * s.k, (long double)s.m * s.n,
                                 b * h * q * d,          b * h * kv * d,          b * h * q * kv,
                                 b * q * s.k,            b * kv * s.n};
  long double bytes = 0;
  for (long double n : buffers) bytes += n * 4;
  const long double device = (long double)ctx.caps().device_local_bytes;
  const long double host = (long double)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
  auto mib = [](long double v) { return std::to_string((unsigned long long)std::min<long double>(v / (1 << 20), 1e18L)); };
  if (device > 0 && bytes > device)
    throw Error("the shape needs about " + mib(bytes) + " MiB of buffers, more than the device's " + mib(device) +
                " MiB of memory");
  if (host > 0 && bytes * 3 > host / 2)  // inputs, results read back, double-precision reference
    throw Error("the shape needs about " + mib(bytes * 3) + " MiB of host memory, more than half of this machine's " +
                mib(host) + " MiB");
}

void check_runs(const KernelOptions& o) {
  constexpr int kMaxRuns = 1000000;  // beyond, hours of runs, and warmup + repeat would overflow
  if (o.repeat < 1 || o.repeat > kMaxRuns)
    throw UsageError("--repeat must be from 1 to " + std::to_string(kMaxRuns) + ", got " + std::to_string(o.repeat));
  if (o.warmup < 0 || o.warmup > kMaxRuns)
    throw UsageError("--warmup must be from 0 to " + std::to_string(kMaxRuns) + ", got " + std::to_string(o.warmup));
}

OpShape KernelOptions::resolved() const {
  OpShape s = shape;
  s.dtype = parse_storage_dtype(dtype, "--dtype");
  s.act = parse_activation_name(act, "--act");
  return s;
}

namespace {

// One recorded configuration of a case and its timings.
struct Timed {
  std::unique_ptr<Recorder> rec;
  OpInfo info;
  std::vector<double> dev, wall;
};

// Warm-up, then timed runs of each configuration, alternating between them run
// by run, so a slow spell of the machine falls on all of them alike.
void time_runs(Context& ctx, std::vector<Timed>& ts, const KernelOptions& o) {
  for (int i = 0; i < o.warmup + o.repeat; ++i)
    for (Timed& t : ts) {
      auto t0 = std::chrono::steady_clock::now();
      ctx.submit(*t.rec);
      auto t1 = std::chrono::steady_clock::now();
      if (i < o.warmup) continue;
      double ms = 0;
      for (auto& tm : t.rec->timings()) ms += tm.ms;
      t.dev.push_back(ms);
      t.wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
}

// The result of a timed configuration, checked against the CPU reference
// (the case's output is that of its last submission: `resubmit` when another
// configuration ran after it).
KernelResult result_of(Context& ctx, const OpCase& c, const std::string& op, Timed& t, const std::string& picked,
                       const KernelOptions& o, bool resubmit) {
  KernelResult r;
  r.op = op;
  r.variant = t.info.variant;
  r.shape = c.shape;
  r.spec_values = t.info.spec;
  r.flops = t.info.flops;
  r.bytes = t.info.bytes;
  for (auto& [name, val] : t.info.spec) r.spec += (r.spec.empty() ? "" : " ") + name + "=" + std::to_string(val);
  r.median_ms = median(t.dev);
  r.runs_ms = t.dev;
  r.min_ms = *std::min_element(t.dev.begin(), t.dev.end());
  r.max_ms = *std::max_element(t.dev.begin(), t.dev.end());
  r.wall_ms = median(t.wall);
  r.gflops = t.info.flops / (r.median_ms * 1e6);
  r.gbps = t.info.bytes / (r.median_ms * 1e6);
  r.picked = t.info.variant == picked;
  r.tuned = t.info.tuned;
  if (o.check) {
    if (resubmit) ctx.submit(*t.rec);
    r.max_error = c.error();
    r.checked = true;
    r.passed = r.max_error <= c.bound;
  }
  return r;
}

// The case of `o`, after its checks, and the variant the engine picks for it.
std::pair<OpCase, std::string> make_case(Context& ctx, const KernelOptions& o) {
  check_runs(o);
  if (!ctx.caps().timestamps) throw Error("the device has no timestamp queries on its compute queue");
  check_shape(ctx, o.resolved());
  OpCase c = op(o.op).make_case(ctx, o.resolved());
  Recorder probe(ctx);
  std::string picked = c.record(probe, "").variant;
  return {std::move(c), picked};
}

}  // namespace

std::vector<KernelResult> run_kernel(Context& ctx, const KernelOptions& o) {
  const auto [c, picked] = make_case(ctx, o);
  std::vector<std::string> variants;
  if (o.variant == "all") variants = op(o.op).variants;
  else variants = {o.variant};

  std::vector<KernelResult> out;
  Progress progress("kernel " + o.op, variants.size(), "variants");
  for (const auto& v : variants) {
    progress.update(out.size());
    std::vector<Timed> t(1);
    t[0].rec = std::make_unique<Recorder>(ctx, true);
    try {
      t[0].info = c.record(*t[0].rec, v);
    } catch (const Error& e) {
      if (o.variant != "all") throw;
      std::fprintf(stderr, "vkformer: skipping variant %s: %s\n", v.c_str(), e.what());
      continue;
    }
    time_runs(ctx, t, o);
    out.push_back(result_of(ctx, c, o.op, t[0], picked, o, false));
  }
  return out;
}

std::vector<KernelResult> run_kernel_side_by_side(Context& ctx, const OpCase& c, const KernelOptions& o,
                                                  const std::vector<std::function<OpInfo(Recorder&, const OpCase&)>>& configs) {
  check_runs(o);
  std::vector<Timed> ts(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    ts[i].rec = std::make_unique<Recorder>(ctx, true);
    ts[i].info = configs[i](*ts[i].rec, c);
  }
  time_runs(ctx, ts, o);
  std::vector<KernelResult> out;
  for (Timed& t : ts) out.push_back(result_of(ctx, c, o.op, t, ts[0].info.variant, o, ts.size() > 1));
  return out;
}

std::vector<KernelResult> run_kernel_side_by_side(Context& ctx, const KernelOptions& o,
                                                  const std::vector<std::function<OpInfo(Recorder&, const OpCase&)>>& configs) {
  const auto [c, picked] = make_case(ctx, o);
  std::vector<KernelResult> out = run_kernel_side_by_side(ctx, c, o, configs);
  for (KernelResult& r : out) r.picked = r.variant == picked;
  return out;
}

size_t create_all_pipelines(Context& ctx) {
  uint64_t before = ctx.pipelines_created();
  std::vector<DType> dtypes = {DType::F32};
  if (ctx.caps().f16_tensors()) dtypes.push_back(DType::F16);
  Progress progress("pipelines", op_registry().size(), "ops");
  size_t ops_done = 0;
  for (const OpDescriptor* d : op_registry()) {
    progress.update(ops_done++);
    if (d->internal) continue;  // the peak microbenchmarks: `bench ops` creates them when it measures
    for (DType dt : dtypes)
      for (int64_t m : {int64_t(1), int64_t(64)}) {  // small M picks gemv, larger the tiled GEMM
        OpShape s;
        s.dtype = dt;
        s.m = m;
        s.q_len = s.kv_len = 16;
        const OpCase c = d->make_case(ctx, s);
        // Some drivers (lavapipe among them) compile at the first dispatch,
        // not at pipeline creation: run each variant once.
        for (const auto& v : d->variants) {
          Recorder rec(ctx);
          try {
            c.record(rec, v);
          } catch (const Error&) {
            continue;  // a variant the device cannot run (e.g. no subgroups) is not warmed
          }
          ctx.submit(rec);
        }
      }
  }
  return size_t(ctx.pipelines_created() - before);
}

void print_results(const std::vector<KernelResult>& rs) {
  std::printf("%-18s %-22s %10s %10s %10s %10s %9s %9s %10s  %s\n", "op", "variant", "median ms",
              "min ms", "max ms", "wall ms", "GFLOP/s", "GB/s", "max err", "spec constants");
  for (const auto& r : rs) {
    char err[32];
    if (r.checked) std::snprintf(err, sizeof err, "%.2e%s", r.max_error, r.passed ? "" : " FAIL");
    else std::snprintf(err, sizeof err, "-");
    std::printf("%-18s %-22s %10.3f %10.3f %10.3f %10.3f %9.2f %9.2f %10s  %s%s\n", r.op.c_str(),
                (r.variant + (r.picked ? " *" : "")).c_str(), r.median_ms, r.min_ms, r.max_ms,
                r.wall_ms, r.gflops, r.gbps, err, r.spec.c_str(), "");
  }
  if (!rs.empty()) std::printf("shape: %s   (* = the variant the engine picks on this device)\n", rs[0].shape.c_str());
}

}  // namespace vkf::tools
