// `vkformer bench model --tuning compare`: the whole model with the engine's own
// kernel choices and with the tuning database, in one process: two contexts on
// the same device, each with its copy of the model, their runs alternating, so
// a slow spell of the machine (2-core VMs vary by up to 1.8x) falls on both.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>

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
  ContextOptions rules = ctx_opts, tuned = ctx_opts;
  rules.tuning = "off";
  const std::string env = tuning_choice("");
  tuned.tuning = env == "off" || env == "compare" ? "auto" : env;
  Context c_rules(rules), c_tuned(tuned);
  std::printf("tuning database: %s (%zu entries for this device)\n", tuning_table(c_tuned).path.c_str(),
              tuning_table(c_tuned).size());
  auto m_rules = load_model(c_rules, o.model_dir, o.precision);
  auto m_tuned = load_model(c_tuned, o.model_dir, o.precision);
  const ModelConfig& c = m_rules->config();
  const Workload w = make_workload(c, m_rules->output_dim() && m_rules->output_dim() != c.d_model, o);
  Session s[2] = {Session(m_rules), Session(m_tuned)};

  // Run i of one beside run i of the other; the first of each is a warm-up.
  std::vector<double> fwd[2], step[2];
  for (unsigned i = 0; i <= o.repeat; ++i)
    for (int k = 0; k < 2; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      s[k].forward(w.src, w.tgt);
      if (i) fwd[k].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  GenerateOptions g;
  g.max_new_tokens = w.max_new_tokens;
  g.stop_at_eos = false;
  if (w.decodes)
    for (unsigned i = 0; i <= o.repeat; ++i)
      for (int k = 0; k < 2; ++k) {
        s[k].generate(w.src, g);
        if (i) step[k].push_back(s[k].stats().step_ms.back());
      }

  print_model(c, o);
  std::printf("%s; decode step at position %u; wall-clock medians of %u alternating run(s)\n\n",
              shape_text(o, w).c_str(), w.position, o.repeat);
  std::printf("  %-22s %12s %12s %10s\n", "", "default ms", "tuned ms", "speedup");
  auto row = [](const char* name, const std::vector<double>* v) {
    const double a = median(v[0]), b = median(v[1]);
    std::printf("  %-22s %12.3f %12.3f %9.2fx\n", name, a, b, a / b);
    return nlohmann::ordered_json{{"default_ms", a}, {"tuned_ms", b}, {"speedup", a / b}};
  };
  nlohmann::ordered_json j;
  j["model"] = o.model_dir;
  j["shape"] = {{"batch", o.batch}, {"src_len", o.src_len}, {"tgt_len", o.tgt_len}, {"decode_position", w.position}};
  j["repeat"] = o.repeat;
  j["tuning_database"] = tuning_table(c_tuned).path;
  j["forward"] = row("forward", fwd);
  if (w.decodes) j["decode_step"] = row("decode step", step);
  if (!o.json.empty()) write_output(o.json, "--json", j.dump(2) + "\n");
  return 0;
}

}  // namespace vkf::tools
