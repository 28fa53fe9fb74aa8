// The soak test. Shapes cycle in a fixed pseudo-random order over more shapes
// than a Session keeps plans for, so plans are both reused and evicted and
// re-recorded. Each shape's ids are fixed, and the kernels use no atomics, so
// every run of a shape must give bit-identical output: any difference is
// corruption (a buffer reused too early, a stale descriptor, a race).
#include "soak_command.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include <unistd.h>

#include "model_commands.hpp"
#include "usage_error.hpp"
#include "vkformer/session.hpp"

namespace vkf::tools {
namespace {

// Under AddressSanitizer freed memory sits in a quarantine (256 MiB by default)
// before reuse, so RSS grows without a leak; LeakSanitizer checks leaks there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

struct Shape {
  std::vector<Ids> src, tgt;
  std::string describe() const {
    std::string s = "batch " + std::to_string(src.size()) + ", src lengths";
    for (const auto& x : src) s += " " + std::to_string(x.size());
    if (!tgt.empty()) {
      s += ", tgt lengths";
      for (const auto& x : tgt) s += " " + std::to_string(x.size());
    }
    return s;
  }
};

/// Random ids of `len` tokens in [0, vocab) avoiding the pad id (which would be masked).
Ids random_ids(std::mt19937& rng, uint32_t len, uint32_t vocab, int32_t pad) {
  Ids ids;
  std::uniform_int_distribution<int32_t> pick(0, int32_t(vocab) - 1);
  while (ids.size() < len) {
    int32_t id = pick(rng);
    if (id != pad || vocab == 1) ids.push_back(id);
  }
  return ids;
}

/// Shape k: batch 1..4, sequences of unequal lengths (padded batches), up to 16 tokens.
Shape make_shape(const ModelConfig& c, unsigned k) {
  std::mt19937 rng(1234 + k);
  const uint32_t max_len = std::min<uint32_t>(c.max_positions, 16);
  const uint32_t batch = 1 + k % 4;
  Shape s;
  for (uint32_t b = 0; b < batch; ++b) {
    const uint32_t src_len = 1 + (k * 7 + b * 3) % max_len;
    s.src.push_back(random_ids(rng, src_len, c.src_vocab_size, c.pad_id));
    if (c.encoder_decoder()) {
      Ids t = random_ids(rng, (k * 5 + b) % max_len, c.tgt_vocab_size, c.pad_id);
      t.insert(t.begin(), c.bos_id);
      s.tgt.push_back(std::move(t));
    }
  }
  return s;
}

double rss_mib() {
  std::ifstream f("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  f >> pages >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

struct Reading {
  double rss_mib = 0;
  MemoryReport pool;  ///< vkformer's blocks, and VK_EXT_memory_budget's heap 0 when the device has it
  nlohmann::json to_json() const {
    nlohmann::json j = {{"rss_mib", rss_mib},
                        {"device_bytes_in_use", pool.bytes_in_use},
                        {"device_allocations", pool.allocations},
                        {"device_blocks", pool.blocks},
                        {"device_block_bytes", pool.block_bytes}};
    if (pool.budget) j["memory_budget"] = {{"heap0_usage", pool.heap_usage}, {"heap0_budget", pool.heap_budget}};
    return j;
  }
};

Reading read_now(Context& ctx) { return {rss_mib(), ctx.memory_report()}; }

}  // namespace

int run_soak(const ContextOptions& ctx_opts, const SoakOptions& o) {
  if (o.iterations == 0) throw UsageError("--iterations must be at least 1");
  if (o.shapes == 0) throw UsageError("--shapes must be at least 1");
  // Every shape is warmed up once first; more shapes than iterations test nothing more.
  if (o.shapes > o.iterations)
    throw UsageError("--shapes " + std::to_string(o.shapes) + " is more than --iterations " + std::to_string(o.iterations));
  if (o.max_rss_growth_mib < 0) throw UsageError("--max-rss-growth must be at least 0");
  Context ctx(ctx_opts);
  auto model = load_model(ctx, o.model_dir, o.precision);
  Session session(model);
  const ModelConfig& cfg = model->config();

  std::vector<Shape> shapes;
  for (unsigned k = 0; k < o.shapes; ++k) shapes.push_back(make_shape(cfg, k));
  std::vector<std::vector<float>> first(shapes.size());

  // Warm-up: every shape once, so plans, pipelines and the allocator's blocks
  // exist before the start reading; its outputs are the references.
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t k = 0; k < shapes.size(); ++k) first[k] = session.forward(shapes[k].src, shapes[k].tgt).data;
  const Reading start = read_now(ctx);

  std::mt19937 order(42);
  std::uniform_int_distribution<size_t> pick(0, shapes.size() - 1);
  uint64_t mismatches = 0, compared = 0;
  std::string first_mismatch;
  // RSS after each tenth of the run: a plateau (allocator arenas, caches
  // warming up) looks different from a leak, which grows with every tenth.
  std::vector<double> rss_trace;
  const auto t1 = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < o.iterations; ++i) {
    if (o.iterations >= 10 && i % (o.iterations / 10) == 0 && rss_trace.size() < 10) rss_trace.push_back(rss_mib());
    const size_t k = pick(order);
    const std::vector<float> out = session.forward(shapes[k].src, shapes[k].tgt).data;
    ++compared;
    if (out != first[k]) {
      // NaN != NaN would count too: a reference holding NaN is itself a finding.
      if (mismatches++ == 0) {
        double diff = 0;
        for (size_t j = 0; j < std::min(out.size(), first[k].size()); ++j)
          diff = std::max(diff, double(std::fabs(out[j] - first[k][j])));
        first_mismatch = "iteration " + std::to_string(i) + " (" + shapes[k].describe() +
                         "): output differs from the shape's first run, max |diff| " + std::to_string(diff);
      }
    }
  }
  const auto t2 = std::chrono::steady_clock::now();
  const Reading end = read_now(ctx);
  const uint64_t messages = ctx.validation_messages();

  const double rss_growth = end.rss_mib - start.rss_mib;
  const bool device_grew = end.pool.bytes_in_use != start.pool.bytes_in_use ||
                           end.pool.allocations != start.pool.allocations ||
                           end.pool.blocks != start.pool.blocks || end.pool.block_bytes != start.pool.block_bytes;
  const bool rss_grew = !kAsan && rss_growth > o.max_rss_growth_mib;
  const bool ok = mismatches == 0 && !device_grew && !rss_grew && messages == 0;
  const double warm_s = std::chrono::duration<double>(t1 - t0).count();
  const double run_s = std::chrono::duration<double>(t2 - t1).count();

  if (o.json) {
    nlohmann::json j = {{"model", o.model_dir},
                        {"device", ctx.caps().device_name},
                        {"iterations", o.iterations},
                        {"shapes", o.shapes},
                        {"warmup_seconds", warm_s},
                        {"seconds", run_s},
                        {"ms_per_forward", 1e3 * run_s / o.iterations},
                        {"compared", compared},
                        {"mismatches", mismatches},
                        {"submissions", ctx.submissions()},
                        {"validation_layer", ctx.validation_enabled()},
                        {"validation_messages", messages},
                        {"start", start.to_json()},
                        {"end", end.to_json()},
                        {"rss_growth_mib", rss_growth},
                        {"rss_mib_each_tenth", rss_trace},
                        {"rss_checked", !kAsan},
                        {"device_memory_grew", device_grew},
                        {"memory_budget_extension", start.pool.budget},
                        {"ok", ok}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("soak: %u forward passes over %u shapes in %.2f s (%.2f ms each; warm-up %.2f s)\n",
                o.iterations, o.shapes, run_s, 1e3 * run_s / o.iterations, warm_s);
    auto line = [](const char* when, const Reading& r) {
      std::printf("  %-5s RSS %.1f MiB; device: %llu bytes in %llu allocations, %u blocks of %llu bytes",
                  when, r.rss_mib, (unsigned long long)r.pool.bytes_in_use,
                  (unsigned long long)r.pool.allocations, r.pool.blocks, (unsigned long long)r.pool.block_bytes);
      if (r.pool.budget)
        std::printf("; heap 0 usage %llu of budget %llu", (unsigned long long)r.pool.heap_usage,
                    (unsigned long long)r.pool.heap_budget);
      std::printf("\n");
    };
    line("start", start);
    line("end", end);
    if (!start.pool.budget) std::printf("  (the device has no VK_EXT_memory_budget)\n");
    if (kAsan) std::printf("  RSS growth not checked: AddressSanitizer's quarantine holds freed memory\n");
    std::printf("  validation layer %s\n", ctx.validation_enabled() ? "on" : "off");
    std::printf("  outputs compared %llu, mismatches %llu; validation messages %llu\n",
                (unsigned long long)compared, (unsigned long long)mismatches, (unsigned long long)messages);
  }
  if (!first_mismatch.empty()) std::fprintf(stderr, "vkformer: soak: %s\n", first_mismatch.c_str());
  if (device_grew) std::fprintf(stderr, "vkformer: soak: device memory grew\n");
  if (rss_grew)
    std::fprintf(stderr, "vkformer: soak: RSS grew by %.1f MiB (limit %.1f)\n", rss_growth, o.max_rss_growth_mib);
  if (messages) std::fprintf(stderr, "vkformer: soak: %llu validation messages, the last: %s\n",
                             (unsigned long long)messages, ctx.last_validation_message().c_str());
  return ok ? 0 : 1;
}

}  // namespace vkf::tools
