#include "tune_command.hpp"

#include "usage_error.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>

#include "kernel_bench.hpp"  // median
#include "ops/registry.hpp"
#include "vk/check.hpp"
#include "vk/tuning_hooks.hpp"
#include "vkformer/recorder.hpp"
#include "vkformer/tuning.hpp"

namespace vkf::tools {
namespace {

using Clock = std::chrono::steady_clock;

/// One op at one shape class.
struct Item {
  const OpDescriptor* op;
  OpShape shape;
};


/// The outcome of one configuration: its median device time, or why it is unusable.
struct Trial {
  double ms = -1;
  std::string failure;  ///< "" when it ran and matched the reference
  bool fits = true;     ///< false: the op refused it for this device or shape (not a fault)
  bool lost = false;    ///< the device was lost: the context must be replaced
  OpInfo info;  ///< what the op dispatched: its variant and knobs
};

/// Whether `cand` is the configuration the engine picked anyway. A knob the
/// pick does not report (SGS, reported only when required) differs from it.
bool same_as(const TunedConfig& cand, const OpInfo& picked) {
  if (!cand.variant.empty() && cand.variant != picked.variant) return false;
  for (const auto& [name, value] : cand.knobs) {
    auto it = std::find_if(picked.spec.begin(), picked.spec.end(), [&](const auto& kv) { return kv.first == name; });
    if (it == picked.spec.end() || it->second != value) return false;
  }
  return true;
}

/// Runs `cfg` once and checks it against the reference, then times `repeat` runs.
Trial trial(Context& ctx, const OpCase& c, const std::string& op, const TunedConfig& cfg, int repeat) {
  Trial t;
  ForcedTuning force(ctx, op, cfg);
  try {
    Recorder rec(ctx, true);
    t.info = c.record(rec, "");
    ctx.submit(rec);
    const double err = c.error();
    if (!(err <= c.bound)) {
      t.failure = "wrong output (error " + std::to_string(err) + ", bound " + std::to_string(c.bound) + ")";
      return t;
    }
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
      ctx.submit(rec);
      double sum = 0;
      for (const auto& d : rec.timings()) sum += d.ms;
      ms.push_back(sum);
    }
    t.ms = median(ms);
  } catch (const VulkanError& e) {
    t.failure = e.detail();
    t.lost = ctx.device_lost();
  } catch (const Error& e) {
    t.failure = e.what();
    t.fits = false;
  }
  return t;
}

/// The shapes `--model` runs: a forward pass and, for models that generate, a
/// few decode steps, recorded through the tuning lookups the ops make.
std::vector<Item> model_items(Context& ctx, const TuneOptions& o) {
  std::set<std::pair<std::string, std::string>> seen;
  {
    auto model = load_model(ctx, o.model.model_dir, o.model.precision);
    const ModelConfig& c = model->config();
    const Workload w = make_workload(c, model->output_dim() && model->output_dim() != c.d_model, o.model);
    Session s(model);
    TuningCapture capture(ctx, seen);
    s.forward(w.src, w.tgt);
    if (w.decodes) {
      GenerateOptions g;
      g.max_new_tokens = w.max_new_tokens;
      g.stop_at_eos = false;
      s.generate(w.src, g);
    }
  }
  std::vector<Item> items;
  for (const auto& [name, cls] : seen) {
    const OpDescriptor* d = find_op(name);
    if (d && d->candidates && (o.ops.empty() || std::count(o.ops.begin(), o.ops.end(), name)))
      items.push_back({d, parse_op_shape(cls)});
  }
  return items;
}

std::vector<Item> op_items(const TuneOptions& o) {
  std::vector<std::string> names = o.ops;
  if (names.empty())
    for (const OpDescriptor* d : op_registry())
      if (d->candidates) names.push_back(d->name);
  std::vector<Item> items;
  for (const auto& name : names) {
    const OpDescriptor& d = op(name);
    if (!d.candidates) throw UsageError("--op " + name + ": the op has no tunable knobs");
    if (o.shapes.empty())
      for (const OpShape& s : d.bench_shapes) items.push_back({&d, s});
    for (const auto& s : o.shapes) items.push_back({&d, parse_op_shape(s)});
  }
  return items;
}

/// Tunes one item within `deadline`: the best candidate that beats the
/// engine's choice by more than noise (3% in the median, and in each of three
/// interleaved re-measurement rounds).
void tune_item(std::unique_ptr<Context>& ctx, const ContextOptions& opts, const Item& it, const TuneOptions& o,
               Clock::time_point deadline, TuningTable& out, size_t index, size_t count) {
  const std::string& name = it.op->name;
  auto c = std::make_unique<OpCase>(it.op->make_case(*ctx, it.shape));
  const Trial base = trial(*ctx, *c, name, {}, o.repeat);
  std::fprintf(stderr, "tune [%zu/%zu] %s %s: default %.3f ms", index, count, name.c_str(), base.info.shape_class.c_str(),
               base.ms);
  if (!base.failure.empty()) {
    std::fprintf(stderr, " failed: %s; skipped\n", base.failure.c_str());
    return;
  }
  const std::vector<TunedConfig> cands = it.op->candidates(ctx->caps(), it.shape);
  std::fprintf(stderr, ", %zu candidates\n", cands.size());
  TunedConfig best;
  best.ms = base.ms;
  size_t tried = 0, failed = 0;
  for (const TunedConfig& cand : cands) {
    if (Clock::now() > deadline) break;
    ++tried;
    if (same_as(cand, base.info)) continue;  // measured already, as the default
    const Trial t = trial(*ctx, *c, name, cand, o.repeat);
    if (!t.failure.empty()) {
      ++failed;
      std::fprintf(stderr, "  unusable: %s: %s\n", cand.text().c_str(), t.failure.c_str());
      // A candidate that crashes the driver is never used: remember it, and go on on a new device.
      if (t.fits) out.unusable[name][base.info.shape_class].push_back(cand.text());
      if (t.lost) {
        c.reset();
        ctx = std::make_unique<Context>(opts);
        c = std::make_unique<OpCase>(it.op->make_case(*ctx, it.shape));
      }
      continue;
    }
    if (t.ms < best.ms) best = cand, best.ms = t.ms;
  }
  if (tried < cands.size()) std::fprintf(stderr, "  budget: %zu of %zu candidates tried\n", tried, cands.size());
  // An entry saying the default won replaces an older, now stale winner.
  const TunedConfig keep{"", {}, base.ms, base.ms};
  if (best.variant.empty() && best.knobs.empty()) {
    std::fprintf(stderr, "  kept the default (%zu candidates failed)\n", failed);
    out.best[name][base.info.shape_class] = keep;
    return;
  }
  // Re-measure both, interleaved, so a lucky run or a busy moment decides nothing.
  std::vector<double> d, b;
  for (int round = 0; round < 3; ++round) {
    d.push_back(trial(*ctx, *c, name, {}, o.repeat).ms);
    b.push_back(trial(*ctx, *c, name, best, o.repeat).ms);
  }
  best.default_ms = median(d);
  best.ms = median(b);
  // It must win every round, not only in the median: on a noisy driver
  // (SwiftShader at a few runs) one slow round of the default made false winners.
  bool every_round = true;
  for (int round = 0; round < 3; ++round) every_round = every_round && b[round] > 0 && b[round] < d[round];
  const bool wins = every_round && best.ms < 0.97 * best.default_ms;
  std::fprintf(stderr, "  best %s: %.3f ms vs default %.3f ms (%.2fx)%s\n", best.text().c_str(), best.ms,
               best.default_ms, best.default_ms / best.ms, wins ? "" : ": within noise, kept the default");
  out.best[name][base.info.shape_class] = wins ? best : keep;
}

}  // namespace

int run_tune(const ContextOptions& ctx_opts, const TuneOptions& o) {
  // The budget bounds the search between runs, not within one candidate's runs.
  if (o.repeat < 1 || o.repeat > 1000) throw UsageError("--repeat must be from 1 to 1000, got " + std::to_string(o.repeat));
  if (!(o.budget_s > 0)) throw UsageError("--budget-s must be a positive number of seconds");
  // The search compares candidates with the engine's own rules, not with an earlier database.
  ContextOptions opts = ctx_opts;
  std::string choice = tuning_choice(ctx_opts.tuning);
  if (choice == "off") choice = "auto";  // off only means the search starts from the engine's rules
  opts.tuning = "off";
  auto ctx = std::make_unique<Context>(opts);
  if (!ctx->caps().timestamps) throw Error("the device has no timestamp queries: tune needs them");
  const std::string db = o.db.empty() ? tuning_file(*ctx, choice) : o.db;
  if (db.empty()) throw Error("no tuning database: the cache is off (--tuning PATH names one)");
  check_tuning_file(db);  // before the search, not after it

  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.budget_s));
  const std::vector<Item> items = o.model.model_dir.empty() ? op_items(o) : model_items(*ctx, o);
  std::fprintf(stderr, "tune: %zu op shapes on %s, budget %.0f s, results to %s\n", items.size(),
               ctx->caps().device_name.c_str(), o.budget_s, db.c_str());
  TuningTable out;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto now = Clock::now();
    if (now > deadline) {
      std::fprintf(stderr, "tune: budget spent; %zu op shapes not tuned\n", items.size() - i);
      break;
    }
    if (ctx->device_lost()) ctx = std::make_unique<Context>(opts);  // lost while measuring the default
    // Each item gets an equal share of what is left.
    tune_item(ctx, opts, items[i], o, now + (deadline - now) / int64_t(items.size() - i), out, i + 1, items.size());
  }
  store_tuning(db, ctx->caps(), out);
  std::printf("%-16s %-46s %-34s %10s %10s %8s\n", "op", "shape class", "tuned configuration", "default ms",
              "tuned ms", "speedup");
  size_t tuned = 0;
  for (const auto& [name, shapes] : out.best)
    for (const auto& [cls, c] : shapes)
      if (!c.knobs.empty() || !c.variant.empty()) ++tuned, std::printf("%-16s %-46s %-34s %10.3f %10.3f %7.2fx\n", name.c_str(), cls.c_str(), c.text().c_str(),
                  c.default_ms, c.ms, c.default_ms / c.ms);
  std::printf("%zu of %zu op shapes tuned in %.0f s; database %s\n", tuned, items.size(),
              std::chrono::duration<double>(Clock::now() - start).count(), db.c_str());
  return 0;
}

}  // namespace vkf::tools
