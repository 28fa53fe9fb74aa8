// `vkformer profile` and `vkformer bench model`: a forward pass and a decode
// step on random ids, timed by wall clock without timestamps (the real speed)
// and, for `bench model`, by timestamp queries per dispatch (where the time goes;
// timestamps serialize the dispatches, so their sum exceeds the wall time).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "kernel_bench.hpp"  // median
#include "model_commands.hpp"
#include "revision.hpp"
#include "usage_error.hpp"
#include "output_file.hpp"
#include "svg.hpp"
#include "vk/memory.hpp"
#include "vkformer/session.hpp"

#ifndef VKF_VERSION
#define VKF_VERSION "unknown"
#endif

namespace vkf::tools {
namespace {


double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Wall-clock figures without timestamps: what a user of the library sees.
struct WallFigures {
  double forward_ms = 0, step_ms = 0, recompute_ms = 0;
  double forward_queue_ms = 0;  ///< of forward_ms: submission until the fence
  double generate_ms = 0;  ///< a whole generate(): encoder (or prompt) and every decode step
  uint64_t forward_submissions = 0, forward_dispatches = 0;
  uint64_t generate_submissions = 0, steps = 0, step_dispatches = 0;
  uint64_t step_submissions = 0;  ///< of the step timed (the start's uploads are not a step's)
  double step_queue_ms = 0;       ///< of step_ms: submission until the fence; the rest is the host's
};

/// Of (wall, queue) times, the run with the median wall time, both of its figures.
std::pair<double, double> median_wall_queue(std::vector<std::pair<double, double>> runs) {
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

/// Medians over `repeat` runs; each kind is run once first, untimed, to create
/// its plan and compile its pipelines.
WallFigures measure_wall(Session& s, const Workload& w, unsigned repeat) {
  WallFigures f;
  std::vector<double> full, gen;
  std::vector<std::pair<double, double>> fwd;  // (wall, queue) of each run
  for (unsigned i = 0; i <= repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    s.forward(w.src, w.tgt);
    if (i) fwd.emplace_back(ms_since(t0), s.stats().queue_ms);
    f.forward_submissions = s.stats().submissions;
    f.forward_dispatches = s.stats().dispatches;
  }
  std::tie(f.forward_ms, f.forward_queue_ms) = median_wall_queue(fwd);
  if (!w.decodes) return f;
  GenerateOptions g;
  g.max_new_tokens = w.max_new_tokens;
  g.stop_at_eos = false;
  g.kv_cache = w.kv_cache;
  std::vector<std::pair<double, double>> step;  // (wall, queue) of each run's last step
  // The last step is at w.position. The first call is untimed, as the forward
  // pass's: its steps compile their pipelines (host time, as they record).
  for (unsigned i = 0; i <= repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    s.generate(w.src, g);
    if (!i) continue;
    gen.push_back(ms_since(t0));
    step.emplace_back(s.stats().step_ms.back(), s.stats().step_queue_ms.back());
    f.step_submissions = s.stats().step_submissions;
    f.generate_submissions = s.stats().submissions;
    f.steps = s.stats().steps;
    f.step_dispatches = s.stats().dispatches;
  }
  std::tie(f.step_ms, f.step_queue_ms) = median_wall_queue(step);
  f.generate_ms = median(gen);
  for (unsigned i = 0; i <= repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    s.forward(w.prefix_src, w.prefix_tgt);
    if (i) full.push_back(ms_since(t0));
  }
  f.recompute_ms = median(full);
  return f;
}

/// Device time of one submission by layer ("encoder.3") and by op kind
/// ("gemm") and op variant ("gemm/blocked"), keys in first-dispatch order.
struct Breakdown {
  double total_ms = 0;
  uint64_t dispatches = 0;
  using Table = std::vector<std::pair<std::string, double>>;
  Table layers, ops, variants;
  std::map<std::string, uint64_t> layer_count, op_count, variant_count;
};

void add_to(Breakdown::Table& t, const std::string& key, double ms) {
  for (auto& [k, v] : t)
    if (k == key) {
      v += ms;
      return;
    }
  t.emplace_back(key, ms);
}

Breakdown breakdown(const std::vector<DispatchTiming>& timings) {
  Breakdown b;
  for (const DispatchTiming& t : timings) {
    // "scope/op/variant"; without a scope "op/variant".
    std::vector<std::string> parts;
    for (size_t i = 0;;) {
      size_t j = t.label.find('/', i);
      parts.push_back(t.label.substr(i, j == std::string::npos ? j : j - i));
      if (j == std::string::npos) break;
      i = j + 1;
    }
    const bool scoped = parts.size() >= 3;
    const std::string layer = scoped ? parts[0] : "(none)";
    const std::string op = parts[scoped ? 1 : 0];
    const std::string variant = t.label.substr(scoped ? parts[0].size() + 1 : 0);
    add_to(b.layers, layer, t.ms);
    add_to(b.ops, op, t.ms);
    add_to(b.variants, variant, t.ms);
    ++b.layer_count[layer];
    ++b.op_count[op];
    ++b.variant_count[variant];
    b.total_ms += t.ms;
    ++b.dispatches;
  }
  return b;
}

/// The run with the median device total, whole: its layers and ops add up to
/// its total (per-key medians of a noisy machine would not).
Breakdown median_run(std::vector<Breakdown> runs) {
  std::sort(runs.begin(), runs.end(), [](const Breakdown& x, const Breakdown& y) { return x.total_ms < y.total_ms; });
  return runs[runs.size() / 2];
}

struct Profiled {
  Breakdown forward, step;
};

Profiled measure_profiled(Session& s, const Workload& w, unsigned repeat) {
  s.set_profiling(true);
  std::vector<Breakdown> fwd, step;
  for (unsigned i = 0; i <= repeat; ++i) {
    s.forward(w.src, w.tgt);
    if (i) fwd.push_back(breakdown(s.stats().timings));
  }
  Profiled p;
  p.forward = median_run(fwd);
  if (w.decodes) {
    GenerateOptions g;
    g.max_new_tokens = w.max_new_tokens;
    g.stop_at_eos = false;
    g.kv_cache = w.kv_cache;
    for (unsigned i = 0; i < repeat; ++i) {
      s.generate(w.src, g);  // timings are the last submission's: the step at w.position
      step.push_back(breakdown(s.stats().timings));
    }
    p.step = median_run(step);
  }
  s.set_profiling(false);
  return p;
}

/// "bench.svg" -> "bench-step.svg"
std::string step_path(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + "-step";
  return path.substr(0, dot) + "-step" + path.substr(dot);
}

nlohmann::ordered_json pass_json(const Breakdown& b, double wall_ms, double submissions, uint64_t tokens) {
  nlohmann::ordered_json j;
  j["total_ms"] = b.total_ms;
  j["wall_ms"] = wall_ms;
  if (submissions == double(uint64_t(submissions)))  // per step: an average, whole when every step is alike
    j["submissions"] = uint64_t(submissions);
  else
    j["submissions"] = submissions;
  j["dispatches"] = b.dispatches;
  j["tokens"] = tokens;
  j["tokens_per_s"] = wall_ms > 0 ? double(tokens) * 1000.0 / wall_ms : 0.0;
  auto table = [](const Breakdown::Table& t, const std::map<std::string, uint64_t>& count) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (const auto& [k, ms] : t) o[k] = {{"ms", ms}, {"dispatches", count.at(k)}};
    return o;
  };
  j["layers"] = table(b.layers, b.layer_count);
  j["ops"] = table(b.ops, b.op_count);
  j["variants"] = table(b.variants, b.variant_count);
  return j;
}

/// Rows of both passes in one table: forward's keys first, then the step's own.
void print_table(const char* what, const Breakdown::Table& fwd, const Breakdown::Table* step) {
  std::vector<std::string> keys;
  for (const auto& kv : fwd) keys.push_back(kv.first);
  if (step)
    for (const auto& kv : *step)
      if (std::find(keys.begin(), keys.end(), kv.first) == keys.end()) keys.push_back(kv.first);
  auto find = [](const Breakdown::Table& t, const std::string& k) -> const double* {
    for (const auto& kv : t)
      if (kv.first == k) return &kv.second;
    return nullptr;
  };
  std::printf("\n%-28s %12s%s\n", what, "forward", step ? "         step" : "");
  auto cell = [](const double* v) {
    if (v) std::printf(" %12.3f", *v);
    else std::printf(" %12s", "-");
  };
  for (const std::string& k : keys) {
    std::printf("  %-26s", k.c_str());
    cell(find(fwd, k));
    if (step) cell(find(*step, k));
    std::printf("\n");
  }
}

std::vector<std::pair<std::string, double>> chart_bars(const Breakdown& b) {
  std::vector<std::pair<std::string, double>> bars;
  for (const auto& [k, ms] : b.layers) bars.emplace_back(k, ms);
  std::vector<std::pair<std::string, double>> ops(b.ops.begin(), b.ops.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  for (const auto& [k, ms] : ops) bars.emplace_back("op: " + k, ms);
  return bars;
}

}  // namespace

std::string shape_text(const ProfileOptions& o, const Workload& w) {
  return "batch " + std::to_string(o.batch) + ", src " + std::to_string(o.src_len) +
         (w.encdec ? ", tgt " + std::to_string(o.tgt_len) : std::string());
}

std::string weight_memory_text(const Model& m) {
  uint64_t total = 0;
  std::string parts;
  for (const WeightMemory& w : m.weight_memory()) {
    total += w.bytes;
    parts += std::string(parts.empty() ? "" : ", ") + dtype_name(w.dtype) + " " + format_bytes(w.bytes);
  }
  return format_bytes(total) + " (" + parts + ")";
}

void print_model(const Model& m, const ProfileOptions& o) {
  const ModelConfig& c = m.config();
  std::printf("model %s: %u+%u layers, d_model %u, %u heads, d_ff %u, %s weights: %s\n", o.model_dir.c_str(),
              c.encoder_layers, c.decoder_layers, c.d_model, c.n_heads, c.d_ff, o.precision.c_str(),
              weight_memory_text(m).c_str());
}


Workload make_workload(const Model& model, const ProfileOptions& o) {
  const ModelConfig& c = model.config();
  if (o.batch < 1 || o.src_len < 1 || o.repeat < 1)
    throw UsageError("--batch, --src-len and --repeat must be at least 1");
  // Decoder-only, --tgt-len 0 times the first step after the prompt (at position src_len);
  // an enc–dec model's first step is at position 1 (BOS is at 0).
  if (c.encoder_decoder() && o.tgt_len < 2) throw UsageError("--tgt-len must be at least 2 for an encoder–decoder model");
  // Checked here, before anything is allocated, with the options named.
  const uint64_t positions = c.encoder_decoder() ? std::max(o.src_len, o.tgt_len) : uint64_t(o.src_len) + o.tgt_len + 1;
  if (positions > c.max_positions)
    throw UsageError(std::string(c.encoder_decoder() ? "--src-len and --tgt-len must each be" : "--src-len + --tgt-len + 1 must be") +
                     " at most the model's max_positions " + std::to_string(c.max_positions) + " (got " +
                     std::to_string(c.encoder_decoder() ? std::max(o.src_len, o.tgt_len) : positions) + ")");
  std::mt19937 gen(7);
  // Never pad, bos or eos, wherever they are (GPT-2's eos is the last id; pad < 0: none).
  auto special = [&](int32_t x) { return x == c.pad_id || x == c.bos_id || x == c.eos_id; };
  auto random_ids = [&](uint32_t len, uint32_t vocab) {
    uint32_t specials = 0;
    for (int32_t x : std::set<int32_t>{c.pad_id, c.bos_id, c.eos_id}) specials += x >= 0 && uint32_t(x) < vocab;
    if (specials >= vocab) throw Error("the vocabulary has no ids besides pad, bos and eos");
    Ids ids(len);
    for (auto& x : ids)
      do x = int32_t(gen() % vocab);
      while (special(x));
    return ids;
  };
  Workload w;
  w.encdec = c.encoder_decoder();
  // A model with a generator head decodes; a masked LM's vocabulary-wide output is no generator.
  w.decodes = model.supports(Task::Generate) && model.output_dim() && model.output_dim() != c.d_model;
  for (unsigned b = 0; b < o.batch; ++b) {
    w.src.push_back(random_ids(o.src_len, c.src_vocab_size));
    if (w.encdec) {
      w.tgt.push_back(random_ids(o.tgt_len, c.tgt_vocab_size));
      Ids prefix{c.bos_id};  // BOS at 0, then tokens 1..tgt_len-1
      Ids more = random_ids(o.tgt_len - 1, c.tgt_vocab_size);
      prefix.insert(prefix.end(), more.begin(), more.end());
      w.prefix_tgt.push_back(prefix);
    } else {
      Ids prefix = w.src.back();  // the prompt, then tokens at src_len..src_len+tgt_len
      Ids more = random_ids(o.tgt_len + 1, c.src_vocab_size);
      prefix.insert(prefix.end(), more.begin(), more.end());
      w.prefix_src.push_back(prefix);
    }
  }
  if (w.encdec) w.prefix_src = w.src;
  w.tokens = uint64_t(o.batch) * (o.src_len + (w.encdec ? o.tgt_len : 0));
  // Enc–dec: BOS is fed at 0 with the encoder, step t at position t.
  // Decoder-only: the prompt gives the first token, step t feeds it at src_len + t - 1.
  w.position = w.encdec ? o.tgt_len - 1 : o.src_len + o.tgt_len;
  w.max_new_tokens = w.encdec ? o.tgt_len : o.tgt_len + 2;
  w.kv_cache = parse_kv_cache_type(o.kv_cache, "--kv-cache");
  return w;
}

int run_profile(const ContextOptions& ctx_opts, const ProfileOptions& o) {
  Context ctx(ctx_opts);
  auto model = load_model(ctx, o.model_dir, o.precision);
  const ModelConfig& c = model->config();
  const Workload w = make_workload(*model, o);
  Session session(model);
  const WallFigures f = measure_wall(session, w, o.repeat);
  print_model(*model, o);
  std::printf("forward  %s: %.1f ms median of %u (%llu submission, %llu dispatches)\n",
              shape_text(o, w).c_str(), f.forward_ms, o.repeat,
              (unsigned long long)f.forward_submissions, (unsigned long long)f.forward_dispatches);
  if (!w.decodes) return 0;
  std::printf("decode step with KV cache at position %u: %.2f ms (median of %u; "
              "%llu submissions for %llu steps + the first token)\n",
              w.position, f.step_ms, o.repeat, (unsigned long long)f.generate_submissions,
              (unsigned long long)f.steps);
  std::printf("decode step without cache (full recompute of the same prefix): %.1f ms -> cache is %.1fx faster\n",
              f.recompute_ms, f.recompute_ms / f.step_ms);
  return 0;
}

int run_bench_model(const ContextOptions& ctx_opts, const BenchModelOptions& o) {
  if (ctx_opts.tuning == "compare") return run_bench_model_compare(ctx_opts, o);
  Context ctx(ctx_opts);
  auto model = load_model(ctx, o.model_dir, o.precision);
  const ModelConfig& c = model->config();
  const Workload w = make_workload(*model, o);
  if (!ctx.caps().timestamps) throw Error("the device has no timestamp queries: bench model needs them");
  Session session(model);
  const WallFigures f = measure_wall(session, w, o.repeat);
  const Profiled p = measure_profiled(session, w, o.repeat);

  const std::string revision = vkf_git_revision();
  const Capabilities& caps = ctx.caps();
  const std::string driver = caps.driver_name.empty() ? "unknown" : caps.driver_name;
  std::printf("device %s (driver %s), vkformer %s (revision %s)\n", caps.device_name.c_str(),
              driver.c_str(), VKF_VERSION, revision.c_str());
  print_model(*model, o);
  std::printf("%s; decode step at position %u; medians of %u run(s)\n", shape_text(o, w).c_str(),
              w.position, o.repeat);
  const double step_subs = double(f.step_submissions);
  std::printf("\n%-28s %12s%s\n", "", "forward", w.decodes ? "         step" : "");
  auto row = [&](const char* name, const char* fmt, double a, double b) {
    std::printf("  %-26s ", name);
    std::printf(fmt, a);
    if (w.decodes) std::printf(" "), std::printf(fmt, b);
    std::printf("\n");
  };
  row("device time (ms, profiled)", "%12.3f", p.forward.total_ms, p.step.total_ms);
  row("wall time (ms, unprofiled)", "%12.3f", f.forward_ms, f.step_ms);
  // Where the wall time goes: the queue (device and driver) or the host (recording, reading back).
  row("  of it in the queue", "%12.3f", f.forward_queue_ms, f.step_queue_ms);
  row("  of it on the host", "%12.3f", f.forward_ms - f.forward_queue_ms, f.step_ms - f.step_queue_ms);
  row("tokens/s (wall)", "%12.1f", double(w.tokens) * 1000.0 / f.forward_ms,
      f.step_ms > 0 ? o.batch * 1000.0 / f.step_ms : 0.0);
  row("submissions", "%12.0f", double(f.forward_submissions), step_subs);
  row("dispatches", "%12.0f", double(p.forward.dispatches), double(p.step.dispatches));
  print_table("per layer (device ms)", p.forward.layers, w.decodes ? &p.step.layers : nullptr);
  print_table("per op (device ms)", p.forward.ops, w.decodes ? &p.step.ops : nullptr);
  print_table("per op variant (device ms)", p.forward.variants, w.decodes ? &p.step.variants : nullptr);
  if (w.decodes)
    std::printf("\ndecode step without cache (full recompute of the %u positions): %.1f ms wall; "
                "with the cache %.2f ms: %.1fx faster\n",
                w.position + 1, f.recompute_ms, f.step_ms, f.recompute_ms / f.step_ms);
  if (w.decodes)
    std::printf("generate(), %u new tokens (the %s and %llu decode steps): %.1f ms wall\n", w.max_new_tokens,
                w.encdec ? "encoder" : "prompt", (unsigned long long)f.steps, f.generate_ms);
  std::printf("(timestamps serialize dispatches: device time sums can exceed the wall time)\n");

  if (!o.json.empty()) {
    nlohmann::ordered_json j;
    j["device"] = caps.device_name;
    j["driver"] = driver;
    j["driver_version"] = caps.driver_version;
    j["driver_info"] = caps.driver_info;  // the driver's own version text (the number is packed per vendor)
    j["vkformer_version"] = VKF_VERSION;
    j["git_revision"] = revision;
    j["model"] = o.model_dir;
    j["config"] = {{"encoder_layers", c.encoder_layers}, {"decoder_layers", c.decoder_layers},
                   {"d_model", c.d_model},               {"n_heads", c.n_heads},
                   {"d_ff", c.d_ff},                     {"src_vocab_size", c.src_vocab_size},
                   {"tgt_vocab_size", c.tgt_vocab_size}, {"precision", o.precision}};
    for (const WeightMemory& m : model->weight_memory()) j["weight_bytes"][dtype_name(m.dtype)] = m.bytes;
    j["shape"] = {{"batch", o.batch}, {"src_len", o.src_len},
                  {"tgt_len", o.tgt_len}, {"decode_position", w.position}};
    j["repeat"] = o.repeat;
    j["forward"] = pass_json(p.forward, f.forward_ms, double(f.forward_submissions), w.tokens);
    j["forward"]["queue_ms"] = f.forward_queue_ms;
    j["forward"]["host_ms"] = f.forward_ms - f.forward_queue_ms;
    if (w.decodes) {
      j["decode_step"] = pass_json(p.step, f.step_ms, step_subs, o.batch);
      j["decode_step"]["queue_ms"] = f.step_queue_ms;
      j["decode_step"]["host_ms"] = f.step_ms - f.step_queue_ms;
      j["recompute_step_ms"] = f.recompute_ms;
      j["generate_ms"] = f.generate_ms;
      j["cache_speedup"] = f.recompute_ms / f.step_ms;
    } else {
      j["decode_step"] = nullptr;
      j["recompute_step_ms"] = nullptr;
      j["cache_speedup"] = nullptr;
    }
    write_output(o.json, "--json", j.dump(2) + "\n");
  }
  if (!o.svg.empty()) {
    const std::string what = o.model_dir + ", " + shape_text(o, w) + ", " + o.precision + ", " + caps.device_name;
    write_bar_chart_svg(o.svg, "forward pass: device time per layer and op (" + what + ")",
                        chart_bars(p.forward), "ms");
    if (w.decodes)
      write_bar_chart_svg(step_path(o.svg),
                          "decode step at position " + std::to_string(w.position) +
                              " with KV cache: device time per layer and op (" + what + ")",
                          chart_bars(p.step), "ms");
  }
  return 0;
}

}  // namespace vkf::tools
