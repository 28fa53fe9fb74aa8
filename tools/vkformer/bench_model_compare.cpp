// `vkformer bench model --tuning compare`: the whole model with the engine's own
// kernel choices and with the tuning database, in one process, on one copy of
// the weights: two sessions, one recorded with the database suspended, their
// runs alternating (in ABBA order), so a slow spell of the machine (2-core VMs
// vary by up to 1.8x) and the cache and memory placement fall on both alike.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "kernel_bench.hpp"  // median
#include "model_commands.hpp"
#include "output_file.hpp"
#include "usage_error.hpp"
#include "vk/tuning_hooks.hpp"
#include "vkformer/session.hpp"
#include "vkformer/tuning.hpp"

namespace vkf::tools {

int run_bench_model_compare(const ContextOptions& ctx_opts, const BenchModelOptions& o) {
  if (!o.svg.empty()) throw UsageError("--svg: bench model --tuning compare writes a table and --json only");
  // The database VKFORMER_TUNING names, else the cache directory's (as bench ops compare).
  ContextOptions opts = ctx_opts;
  const std::string env = tuning_choice("");
  opts.tuning = env == "off" || env == "compare" ? "auto" : env;
  Context ctx(opts);
  std::printf("tuning database: %s (%zu entries for this device)\n", tuning_table(ctx).path.c_str(),
              tuning_table(ctx).size());
  auto model = load_model(ctx, o.model_dir, o.precision);
  const ModelConfig& c = model->config();
  const Workload w = make_workload(*model, o);
  // Session 0 runs (and records its plans) with the database suspended.
  Session s[2] = {Session(model), Session(model)};
  GenerateOptions g;
  g.max_new_tokens = w.max_new_tokens;
  g.kv_cache = w.kv_cache;
  g.stop_at_eos = false;
  auto run = [&](int k, bool step) {
    std::unique_ptr<TuningSuspended> rules;
    if (k == 0) rules = std::make_unique<TuningSuspended>(ctx);
    const auto t0 = std::chrono::steady_clock::now();
    if (step) {
      s[k].generate(w.src, g);
      return s[k].stats().step_ms.back();
    }
    s[k].forward(w.src, w.tgt);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  // Run i of one beside run i of the other, in ABBA order; the first of each is a warm-up.
  std::vector<double> fwd[2], step[2];
  for (bool is_step : {false, true}) {
    if (is_step && !w.decodes) break;
    for (unsigned i = 0; i <= o.repeat; ++i)
      for (int j = 0; j < 2; ++j) {
        const int k = (i % 2) ? 1 - j : j;
        const double ms = run(k, is_step);
        if (i) (is_step ? step : fwd)[k].push_back(ms);
      }
  }

  print_model(*model, o);
  std::printf("%s; decode step at position %u; wall-clock medians of %u alternating run(s)\n\n",
              shape_text(o, w).c_str(), w.position, o.repeat);
  // Medians, and the fastest runs: on a machine whose speed drifts the minimum
  // is the steadier figure.
  std::printf("  %-14s %12s %12s %9s %12s %12s %9s\n", "", "default ms", "tuned ms", "speedup", "default min",
              "tuned min", "speedup");
  auto row = [](const char* name, const std::vector<double>* v) {
    const double a = median(v[0]), b = median(v[1]);
    const double amin = *std::min_element(v[0].begin(), v[0].end()), bmin = *std::min_element(v[1].begin(), v[1].end());
    std::printf("  %-14s %12.3f %12.3f %8.2fx %12.3f %12.3f %8.2fx\n", name, a, b, a / b, amin, bmin, amin / bmin);
    return nlohmann::ordered_json{{"default_ms", a},       {"tuned_ms", b},       {"speedup", a / b},
                                  {"default_min_ms", amin}, {"tuned_min_ms", bmin}, {"speedup_of_min", amin / bmin}};
  };
  nlohmann::ordered_json j;
  j["model"] = o.model_dir;
  j["shape"] = {{"batch", o.batch}, {"src_len", o.src_len}, {"tgt_len", o.tgt_len}, {"decode_position", w.position}};
  j["repeat"] = o.repeat;
  j["tuning_database"] = tuning_table(ctx).path;
  j["forward"] = row("forward", fwd);
  if (w.decodes) j["decode_step"] = row("decode step", step);
  if (!o.json.empty()) write_output(o.json, "--json", j.dump(2) + "\n");
  return 0;
}

}  // namespace vkf::tools
