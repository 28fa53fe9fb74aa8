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
#include "ops/tuning_util.hpp"
#include "vk/check.hpp"
#include "vk/tuning_hooks.hpp"
#include "vkformer/recorder.hpp"
#include "vkformer/tuning.hpp"

namespace vkf::tools {
namespace {

using Clock = std::chrono::steady_clock;

/// What a candidate must gain over the engine's choice to be stored: 5 %.
/// Configurations within it measured 0.95–1.03x of the default from one run
/// to the next (lavapipe, 2 cores), so smaller gains are not real.
constexpr double kMinGain = 1.05;

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
  double error = -1;    ///< its error against the reference, when it ran
  OpInfo info;  ///< what the op dispatched: its variant and knobs
};

/// Runs `cfg` once and checks it against the reference, then times `repeat` runs.
Trial trial(Context& ctx, const OpCase& c, const std::string& op, const TunedConfig& cfg, int repeat) {
  Trial t;
  ForcedTuning force(ctx, op, cfg);
  try {
    Recorder rec(ctx, true);
    t.info = c.record(rec, "");
    ctx.submit(rec);
    const double err = c.error();
    t.error = err;
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
    const Workload w = make_workload(*model, o.model);
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
/// engine's choice by more than noise: re-measured side by side, run by run,
/// both the median of the run-by-run speed-ups and the speed-up of the medians
/// are at least kMinGain, and it is faster in at least two runs of three.
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
  size_t tried = 0, failed = 0, refused = 0;
  for (const TunedConfig& cand : cands) {
    if (Clock::now() > deadline) break;
    ++tried;
    if (dispatched(cand, base.info)) continue;  // measured already, as the default
    const Trial t = trial(*ctx, *c, name, cand, o.repeat);
    if (!t.fits) {  // refused by the op for this device or shape (a texel view too long, say): not a fault
      if (!refused++) std::fprintf(stderr, "  does not fit: %s: %s\n", cand.text().c_str(), t.failure.c_str());
      continue;
    }
    if (!t.failure.empty()) {
      ++failed;
      std::fprintf(stderr, "  unusable: %s: %s\n", cand.text().c_str(), t.failure.c_str());
      // A candidate that crashes the driver is never used: remember it, and go on on a new device.
      out.unusable[name][base.info.shape_class].push_back(cand.text());
      if (t.lost) {
        c.reset();
        ctx = std::make_unique<Context>(opts);
        c = std::make_unique<OpCase>(it.op->make_case(*ctx, it.shape));
      }
      continue;
    }
    if (t.ms < best.ms) {
      best = cand;
      best.ms = t.ms;
      best.checked_error = t.error;  // stored checked: the engine need not check it at its first use
      best.checked_bound = c->bound;
    }
  }
  if (refused > 1) std::fprintf(stderr, "  ... %zu candidates in all do not fit\n", refused);
  if (tried < cands.size()) std::fprintf(stderr, "  budget: %zu of %zu candidates tried\n", tried, cands.size());
  // An entry saying the default won replaces an older, now stale winner.
  const TunedConfig keep{"", {}, base.ms, base.ms};
  if (best.variant.empty() && best.knobs.empty()) {
    std::fprintf(stderr, "  kept the default (%zu candidates failed)\n", failed);
    out.best[name][base.info.shape_class] = keep;
    return;
  }
  // Re-measure both side by side, run by run, so a slow spell of the machine
  // (on these 2-core VMs its speed varies by up to 1.8x, OpenBLAS's too)
  // falls on both alike and a lucky run decides nothing.
  bool wins = false;
  try {
    KernelOptions k;
    k.op = name;
    k.warmup = 1;
    k.repeat = 3 * o.repeat;
    const auto forced = [&](const TunedConfig& cfg) {
      return [&, cfg](Recorder& r, const OpCase& oc) {
        ForcedTuning force(*ctx, name, cfg);
        return oc.record(r, "");
      };
    };
    const auto both = run_kernel_side_by_side(*ctx, *c, k, {forced({}), forced(best)});
    best.default_ms = both[0].median_ms;
    best.ms = both[1].median_ms;
    // Run i of the default against run i of the candidate.
    std::vector<double> ratio;
    size_t faster = 0;
    for (size_t i = 0; i < both[0].runs_ms.size(); ++i) {
      ratio.push_back(both[0].runs_ms[i] / both[1].runs_ms[i]);
      faster += ratio.back() > 1;
    }
    wins = both[1].passed && median(ratio) >= kMinGain && best.default_ms >= kMinGain * best.ms &&
           3 * faster >= 2 * ratio.size();
  } catch (const Error& e) {
    std::fprintf(stderr, "  re-measuring %s failed: %s\n", best.text().c_str(), e.what());
    if (ctx->device_lost()) ctx = std::make_unique<Context>(opts);
  }
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
