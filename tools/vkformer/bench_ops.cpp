#include "bench_ops.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#ifdef VKF_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace vkf::tools {
namespace {

KernelOptions with(KernelOptions o, const std::string& op, const std::string& dtype) {
  o.op = op;
  o.dtype = dtype;
  return o;
}

// The shapes the benchmark issue sets targets for (BERT-base-like layers:
// d=768, 12 heads × 64, 128 tokens), and a typical shape for the other ops.
std::vector<KernelOptions> standard_shapes(const std::string& op, const KernelOptions& base) {
  std::vector<KernelOptions> v;
  KernelOptions o = base;
  o.batch = 1, o.heads = 12, o.head_dim = 64, o.q_len = 128, o.kv_len = 128, o.mask = "padding";
  if (op == "gemm") {
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{128, 3072, 768}, {512, 512, 512},
                           {128, 768, 768}, {1, 3072, 768}}) {
      o.m = m, o.n = n, o.k = k;
      v.push_back(with(o, op, "f32"));
    }
    v.push_back(with(o, op, "f16"));  // one-token GEMV with fp16 weights
  } else if (op == "flash_attention") {
    v = {with(o, op, "f32"), with(o, op, "f16")};
  } else if (op == "attention" || op == "attention_scores" || op == "attention_values" ||
             op == "masked_softmax") {
    v = {with(o, op, "f32")};  // masked_softmax: 12 heads × 128 × 128 scores
  } else if (op == "layernorm" || op == "add") {
    o.m = 128, o.n = 768;
    v = {with(o, op, "f32")};
  } else if (op == "embedding") {
    o.n = 32000, o.k = 768;  // vocab, d; q_len tokens
    v = {with(o, op, "f32")};
  } else if (op == "topk") {
    o.m = 1, o.n = 32000, o.topk = 1;  // greedy decoding's argmax over a vocabulary
    v = {with(o, op, "f32")};
  } else if (op == "mean_pool") {
    o.batch = 8, o.q_len = 128, o.n = 512;  // a batch of sentences pooled (USE lite)
    v = {with(o, op, "f32")};
  } else if (op == "l2_normalize") {
    o.m = 8, o.n = 512;
    v = {with(o, op, "f32")};
  } else if (op == "copy_rows") {
    o.batch = 4, o.q_len = 1, o.kv_len = 128, o.n = 768;  // a KV-cache append under beam reorder
    v = {with(o, op, "f32")};
  }
  return v;
}

// --shape "m=128,n=768,k=768" (any KernelOptions shape field) or "MxNxK" / "MxN".
KernelOptions parse_shape(KernelOptions o, const std::string& s) {
  auto bad = [&](const std::string& why) {
    return Error("--shape \"" + s + "\": " + why +
                 " (expected MxNxK, MxN, or key=value,... with keys m n k batch heads head_dim "
                 "q_len kv_len mask topk dtype)");
  };
  auto number = [&](const std::string& v) {
    try {
      size_t used = 0;
      long long x = std::stoll(v, &used);
      if (used != v.size() || x < 1) throw bad("\"" + v + "\" is not a positive integer");
      return x;
    } catch (const std::logic_error&) {
      throw bad("\"" + v + "\" is not a positive integer");
    }
  };
  if (s.find('=') == std::string::npos) {
    std::vector<long long> d;
    for (size_t b = 0, e; b <= s.size(); b = e + 1) {
      e = std::min(s.find('x', b), s.size());
      d.push_back(number(s.substr(b, e - b)));
    }
    if (d.size() < 2 || d.size() > 3) throw bad("give 2 or 3 sizes");
    o.m = d[0], o.n = d[1];
    if (d.size() == 3) o.k = d[2];
    return o;
  }
  for (size_t b = 0, e; b < s.size(); b = e + 1) {
    e = std::min(s.find(',', b), s.size());
    std::string kv = s.substr(b, e - b);
    size_t eq = kv.find('=');
    if (eq == std::string::npos) throw bad("\"" + kv + "\" has no '='");
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "mask") o.mask = v;
    else if (k == "dtype") o.dtype = v;
    else if (k == "m") o.m = number(v);
    else if (k == "n") o.n = number(v);
    else if (k == "k") o.k = number(v);
    else if (k == "batch") o.batch = uint32_t(number(v));
    else if (k == "heads") o.heads = uint32_t(number(v));
    else if (k == "head_dim") o.head_dim = uint32_t(number(v));
    else if (k == "q_len") o.q_len = uint32_t(number(v));
    else if (k == "kv_len") o.kv_len = uint32_t(number(v));
    else if (k == "topk") o.topk = uint32_t(number(v));
    else throw bad("unknown key \"" + k + "\"");
  }
  return o;
}

std::string dtype_of(const std::string& precision) {
  if (precision == "fp32" || precision == "f32") return "f32";
  if (precision == "fp16" || precision == "f16") return "f16";
  throw Error("--precision must be fp32 or fp16, got \"" + precision + "\"");
}

// A short label for charts: op, variant, the sizes that matter.
std::string short_label(const KernelOptions& o, const KernelResult& r) {
  auto s = [](auto v) { return std::to_string(v); };
  std::string shape;
  if (o.op == "gemm") shape = s(o.m) + "x" + s(o.n) + "x" + s(o.k);
  else if (o.op == "layernorm" || o.op == "add" || o.op == "topk" || o.op == "l2_normalize") shape = s(o.m) + "x" + s(o.n);
  else if (o.op == "embedding") shape = s(o.batch * o.q_len) + "x" + s(o.k);
  else if (o.op == "mean_pool") shape = s(o.batch) + "x" + s(o.q_len) + "x" + s(o.n);
  else if (o.op == "copy_rows") shape = s(o.batch) + "x" + s(o.q_len) + "x" + s(o.n);
  else shape = s(o.heads) + "h " + s(o.q_len) + "x" + s(o.kv_len);
  return o.op + " " + r.variant + " " + shape + " " + o.dtype;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// OpenBLAS on the same Y = X·Wᵀ (fp32 weights: cblas has no fp16 GEMM), in ms.
double openblas_ms(const KernelOptions& o) {
#ifdef VKF_HAVE_OPENBLAS
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(size_t(o.m * o.k)), w(size_t(o.n * o.k)), y(size_t(o.m * o.n));
  for (auto& v : x) v = d(g);
  for (auto& v : w) v = d(g);
  std::vector<double> t;
  for (int i = 0; i < o.warmup + o.repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(o.m), int(o.n), int(o.k), 1.0f,
                x.data(), int(o.k), w.data(), int(o.k), 0.0f, y.data(), int(o.n));
    auto t1 = std::chrono::steady_clock::now();
    if (i >= o.warmup) t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
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
    std::printf("  %-24s %9.3f %9.3f %9.3f %9.3f %9.2f %8.2f %7.1f %9s  %s\n",
                (r.variant + (r.picked ? " *" : "")).c_str(), r.median_ms, r.min_ms, r.max_ms,
                r.wall_ms, r.gflops, r.gbps, rows[i].roofline_pct, err, r.spec.c_str());
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
  auto v = kernel_ops();
  v.push_back("all");
  return v;
}

int run_bench_ops(const ContextOptions& ctx_opts, const BenchOpsOptions& o) {
  std::vector<std::string> ops;
  for (const auto& op : o.ops)
    if (op == "all") ops = kernel_ops();
  if (ops.empty()) ops = o.ops;
  const bool have_openblas =
#ifdef VKF_HAVE_OPENBLAS
      true;
#else
      false;
#endif

  // What to run: the given shapes, else each op's standard ones.
  std::vector<KernelOptions> runs;
  for (const auto& op : ops) {
    std::vector<KernelOptions> shapes;
    if (!o.shapes.empty())
      for (const auto& s : o.shapes) shapes.push_back(with(parse_shape(o.base, s), op, o.base.dtype));
    else if (o.shape_given) shapes.push_back(with(o.base, op, o.base.dtype));
    else shapes = standard_shapes(op, o.base);
    for (auto& s : shapes) {
      if (!o.precision.empty()) s.dtype = dtype_of(o.precision);
      bool dup = false;
      for (const auto& r : runs)
        dup = dup || (r.op == s.op && r.dtype == s.dtype && r.m == s.m && r.n == s.n && r.k == s.k &&
                      r.batch == s.batch && r.heads == s.heads && r.head_dim == s.head_dim &&
                      r.q_len == s.q_len && r.kv_len == s.kv_len && r.mask == s.mask && r.topk == s.topk);
      if (!dup) runs.push_back(s);
    }
  }

  Context ctx(ctx_opts);
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

  std::vector<BenchRow> rows;
  int status = 0;
  for (const auto& k : runs) {
    size_t begin = rows.size();
    double blas = -1;
    if (k.op == "gemm" && have_openblas) blas = openblas_ms(k);
    for (const auto& r : run_kernel(ctx, k)) {
      BenchRow b;
      b.r = r;
      b.dtype = k.dtype;
      b.label = short_label(k, r);
      b.roofline_pct = roofline_pct(peak, r.flops, r.bytes, r.median_ms);
      b.openblas_ms = blas;
      if (k.op == "gemm") b.gweights_per_s = double(k.n) * double(k.k) / (r.median_ms * 1e6);
      if (!r.passed) status = 1;
      rows.push_back(b);
    }
    if (rows.size() > begin) print_group(rows, begin, have_openblas);
    std::fflush(stdout);
  }
  std::printf("\n* = the variant the engine picks on this device. Times: medians of %d timestamped runs "
              "(device time) after %d warm-up runs; wall = submit to fence, median.\n",
              o.base.repeat, o.base.warmup);
  if (!o.json.empty()) write_bench_json(o.json, ctx, peak, have_openblas, rows);
  if (!o.svg.empty()) write_bench_svg(o.svg, ctx, peak, rows);
  return status;
}

}  // namespace vkf::tools
